"""The scheduler: informers feed the cache and the queue; one loop schedules pods.

One asyncio event loop runs everything. Informer events are applied to the cache and
the queue between scheduling cycles, so a cycle sees one consistent snapshot. A cycle is
synchronous and short (:mod:`ksched.schedule_one`): pop a pod, one call into Rust,
assume the result, hand it to the binder. Bindings run concurrently, in priority order,
a bounded number at a time (:mod:`ksched.backend.bind_queue`); the loop waits for the
API server only when the bindings it decided and that are not finished reach the
run-ahead limit, derived from the measured binding rate: the pods not yet decided then
stay in the queue, where a pod of higher priority still goes first and queueing hints
still apply. The one exception is a pod a scheduler extender is interested
in: its cycle awaits the extender's HTTP answers
(:func:`~ksched.schedule_one.schedule_one_async`), so informers, bindings and lease
renewals go on meanwhile, while no other pod is scheduled until it ends.

A cycle whose preemption nominated a node is followed by a wait too: the next cycle
starts once the pod's ``status.nominatedNodeName`` patch has returned, as upstream's
failure handler writes it synchronously (``updatePod`` in ``handleSchedulingFailure``,
schedule_one.go; SchedulerAsyncAPICalls is off in v1.36). The victims' deletions, sent
in the background just before, progress meanwhile, and the informer delivers them, so
the next preemptor's dry run sees the room earlier preemptions made, as upstream's
does. Without that pace a burst of preemptors (a new leader meeting every pending
pod at once) decides them all before any deletion is visible: each preemptor after
the first on a node then needs a second victim there, and the first one, retried
while that victim is still listed, preempts again elsewhere (60 preemptors on 50 full
nodes deleted 69 pods on a real apiserver where kube-scheduler deletes 60-61).

Every informer change is turned into the most specific cluster events (upstream
``eventhandlers.go``): a node update becomes one event per changed property (labels,
taints or ``spec.unschedulable``, allocatable, conditions...), computed from the cached
old node and the new one; pod changes become ``AssignedPod``/``UnschedulablePod``
events. The queue runs the queueing hints of the plugins that rejected each pending pod.

Pods are claimed by ``spec.schedulerName``: a pod whose name matches a profile is
scheduled with that profile's framework; any other pending pod is left alone (another
scheduler's), but counted per name so that a typo is visible.

Malformed objects never stop the informers: a pod or node that cannot be parsed, a
pending pod whose terms the Rust core refuses (:func:`~ksched.backend.compile.compile_pod`)
and a node the snapshot refuses are logged once, kept in :attr:`Scheduler.invalid_objects`
and skipped. A pending pod of ours also gets a ``FailedScheduling`` Warning event
with the error, sent once the scheduling loop runs (a standby reports nothing: only the
leader writes). A bound pod whose terms are malformed is still accounted on its node
by its requests, ports and labels.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast

from ksched import logs
from ksched._core import CompiledPod, Snapshot
from ksched.api.errors import InvalidObjectError
from ksched.api.node import Node
from ksched.api.pod import DEFAULT_SCHEDULER_NAME, Pod
from ksched.backend.cache import Cache
from ksched.backend.cache.podgroups import PodGroupStates
from ksched.backend.compile import SiblingCompiler, compile_pod
from ksched.backend.controllers import KINDS as CONTROLLER_KINDS
from ksched.backend.controllers import ControllerIndex
from ksched.backend.queue import QueuedPodInfo, SchedulingQueue
from ksched.backend.queue.cluster_event import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_ASSIGNED_POD_UPDATE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    EVENT_UNSCHEDULED_POD_ADD,
    ActionType,
    ClusterEvent,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from ksched.backend.shared_informers import SharedInformer, SharedInformers, kind_of_resource
from ksched.client.informer import Informer
from ksched.cluster import ClusterAPI, Kind
from ksched.config import DEFAULT_FEATURE_GATES, FeatureGates
from ksched.events import EventRecorder
from ksched.framework.extender import Extender, HTTPExtender
from ksched.framework.interface import NodeInfo, NodePod
from ksched.framework.profile import Profile
from ksched.framework.runtime import Framework, WaitingPodHandle, WaitingPods
from ksched.metrics import SchedulerMetrics
from ksched.plugins.workload_listers import Lister, pod_groups
from ksched.schedule_group import GroupDriver, InTreeGroup, schedule_group
from ksched.schedule_one import (
    Binder,
    SchedulingStats,
    batchable,
    needs_extenders,
    schedule_batch,
    schedule_one,
    schedule_one_async,
    skip_pod,
)

#: Bound on remembered failing signatures (cleared when reached).
_MAX_UNBATCHED = 4096

log = logging.getLogger(__name__)
klog = logs.get_logger(__name__)
_V4 = klog.v(4)
_perf = time.perf_counter

Obj = dict[str, Any]
T = TypeVar("T")

__all__ = ["Scheduler", "SchedulerHandle"]


_MISSING: Final = object()


def _only_conditions_changed(old: Obj, new: Obj) -> bool:
    """Whether an update of a bound pod changed nothing but ``status.conditions`` (and
    bookkeeping metadata): the kubelet's most frequent update, and the
    ``DisruptionTarget`` condition preemption puts on a victim. Nothing the scheduler
    reads of a bound pod is in its conditions (preemption reads them only on pods being
    deleted, whose ``deletionTimestamp`` update goes through)."""
    if old.get("spec") != new.get("spec"):
        return False
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if any(om.get(f) != nm.get(f) for f in ("labels", "annotations", "deletionTimestamp", "uid")):
        return False
    os_, ns = old.get("status") or {}, new.get("status") or {}
    return all(
        os_.get(k, _MISSING) == ns.get(k, _MISSING)
        for k in os_.keys() | ns.keys()
        if k != "conditions"
    )


#: ``ksched_unclaimed_pods`` counts a pod that stayed unclaimed this long (seconds).
UNCLAIMED_AFTER: Final = 30.0


def _has_pod_scheduled_condition(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conditions)


def _ignore(*objs: Obj) -> None:
    """Informer handler of kinds that are only read from the store."""


def _names_pod_group(pod: Pod) -> bool:
    return bool(pod.scheduling_group)


def _scheduling_group_of(obj: Obj) -> str:
    group = (obj.get("spec") or {}).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return name if isinstance(name, str) else ""


class SchedulerHandle:
    """What plugins get (:class:`ksched.framework.interface.Handle`)."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched

    @property
    def api(self) -> ClusterAPI:
        return self._sched.api

    @property
    def snapshot(self) -> Snapshot:
        return self._sched.cache.snapshot

    def node_info(self, name: str) -> NodeInfo:
        return NodeInfo(name, self._sched.cache.nodes.get(name), self._sched.cache.snapshot)

    def get_waiting_pod(self, uid: str) -> WaitingPodHandle | None:
        return self._sched.waiting_pods.get(uid)

    def iterate_waiting_pods(self) -> Iterable[WaitingPodHandle]:
        return list(self._sched.waiting_pods)

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self._sched.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def activate(self, uids: Iterable[str]) -> None:
        self._sched.queue.activate(uids)

    def nominated_pods_for_node(self, node: str) -> list[Pod]:
        return self._sched.queue.nominator.pods_for_node(node)

    def nominated_nodes(self) -> Collection[str]:
        return self._sched.queue.nominator.nodes()

    @property
    def metrics(self) -> SchedulerMetrics:
        return self._sched.metrics

    def framework(self, scheduler_name: str) -> Framework | None:
        return self._sched.frameworks.get(scheduler_name)

    def pods_on_node(self, node: str) -> Collection[NodePod]:
        return self._sched.cache.pods_on_node(node)

    def node_generation(self, node: str) -> int:
        return self._sched.cache.node_generation(node)

    def node_generations(self) -> Mapping[str, int]:
        return self._sched.cache.node_generations()

    def get_pod(self, namespace: str, name: str) -> Obj | None:
        return self._sched.pod_informer.store.get(f"{namespace}/{name}")

    def default_spread_selector(self, pod: Pod) -> Obj | None:
        owners = (pod.raw.get("metadata") or {}).get("ownerReferences") or []
        return self._sched.controllers.default_selector(
            pod.namespace, pod.labels, [o for o in owners if isinstance(o, dict)]
        )

    def informer(self, kind: Kind) -> SharedInformer:
        return self._sched.shared_informers.get(kind)

    def shared(self, key: str, factory: Callable[[], T]) -> T:
        objects = self._sched.plugin_shared
        if key not in objects:
            objects[key] = factory()
        return cast("T", objects[key])

    @property
    def pod_group_states(self) -> PodGroupStates:
        return self._sched.cache.pod_groups

    def add_pod_handler(
        self,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        self._sched.add_pod_handler(on_add=on_add, on_update=on_update, on_delete=on_delete)

    @property
    def feature_gates(self) -> FeatureGates:
        return self._sched.feature_gates

    def pod_disruption_budgets(self) -> Collection[Obj]:
        informer = self._sched.pdb_informer
        return informer.store.values() if informer is not None else ()

    def record_event(
        self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str
    ) -> None:
        self._sched.recorder.eventf(pod, type_, reason, action, note, controller)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._sched.background(coro)

    @property
    def extenders(self) -> Sequence[Extender]:
        return self._sched.extenders


class Scheduler:
    """Schedules the pods of its profiles on the cluster behind ``api``."""

    def __init__(
        self,
        api: ClusterAPI,
        profiles: Mapping[str, Profile],
        *,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        seed: int | None = None,
        identity: str | None = None,
        event_qps: float | None = None,
        batch_size: int | None = None,
        extenders: Sequence[Extender] = (),
        feature_gates: FeatureGates = DEFAULT_FEATURE_GATES,
        pod_max_in_unschedulable: float | None = None,
        unclaimed_after: float | None = None,
    ) -> None:
        if not profiles:
            raise ValueError("at least one profile is required")
        self.api = api
        #: The feature gates that change scheduling (GenericWorkload...).
        self.feature_gates = feature_gates
        #: Scheduler extenders (``KubeSchedulerConfiguration.extenders``), in order.
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self.profiles = dict(profiles)
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.metrics = SchedulerMetrics()
        #: Pod groups (scheduling.k8s.io/v1alpha2): tracked, watched, scheduled by the
        #: pod group cycle, with their metrics, when GenericWorkload is on.
        self._generic_workload = feature_gates.generic_workload
        self.cache = Cache(seed=seed, pod_groups=self._generic_workload)
        self.waiting_pods = WaitingPods()
        #: Informers of the kinds plugins read (volumes, claims...): plugins ask for
        #: them in ``setup``; every kind their events name is watched.
        self.shared_informers = SharedInformers(api)
        #: Objects the plugins of all profiles share (``Handle.shared``).
        self.plugin_shared: dict[str, object] = {}
        #: pod key → the status patch of its last failed attempt still in flight; the
        #: pod's binding cycle waits for it (see :meth:`Binder._bind`).
        self.pod_status_tasks: dict[str, asyncio.Task[None]] = {}
        #: Status patches that write a preemption's nomination, still in flight: the
        #: scheduling loop waits for them before the next cycle (:meth:`run`).
        self.nomination_writes: list[asyncio.Task[None]] = []
        #: Plugins' pod handlers (``SchedulerHandle.add_pod_handler``).
        self._pod_adds: list[Callable[[Obj], None]] = []
        self._pod_updates: list[Callable[[Obj, Obj], None]] = []
        self._pod_deletes: list[Callable[[Obj], None]] = []
        self._pod_group_lister: Lister[Any] | None = None
        if self._generic_workload:
            self.metrics.enable_pod_group_metrics()
            self._pod_group_lister = pod_groups(self.shared_informers.get("podgroups"))
        self.handle = SchedulerHandle(self)
        for ext in self.extenders:
            if isinstance(ext, HTTPExtender) and ext.node_pods is None:
                ext.node_pods = self._node_pods
        self.frameworks: dict[str, Framework] = {
            name: Framework(
                profile,
                handle=self.handle,
                metrics=self.metrics,
                waiting_pods=self.waiting_pods,
                extenders=self.extenders,
            )
            for name, profile in self.profiles.items()
        }
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            initial_backoff=pod_initial_backoff,
            max_backoff=pod_max_backoff,
            hints={name: fw.enqueue_registrations() for name, fw in self.frameworks.items()},
            pre_enqueue={name: fw.pre_enqueue_plugins for name, fw in self.frameworks.items()},
            sort_key=first.sort_key,
            metrics=self.metrics,
            pop_from_backoff=feature_gates.scheduler_pop_from_backoff_q,
        )
        if self._generic_workload:
            self.queue.pod_group_member = _names_pod_group
        #: Per framework: its plugins that drive pod groups (Coscheduling).
        self._group_drivers: dict[str, list[Any]] = {
            name: [
                getattr(p, "plugin", p)
                for p in fw.plugins
                if callable(getattr(getattr(p, "plugin", p), "group_driver", None))
            ]
            for name, fw in self.frameworks.items()
        }
        if pod_max_in_unschedulable is not None:
            self.queue.max_in_unschedulable = pod_max_in_unschedulable
        self._watch_registered_kinds()
        #: uid → node of each nomination, to tell the cache which nodes they change.
        self._nominated_at: dict[str, str] = {}
        self.queue.nominator.listeners.append(self._nomination_touched)
        if hasattr(Snapshot, "set_nominated"):
            # Filtering counts nominated pods of equal or higher priority against their
            # node (upstream RunFilterPluginsWithNominatedPods) once the core offers it.
            self.queue.nominator.listeners.append(self._nomination_changed)
        self.metrics.add_cache_size_source(
            lambda: {
                "nodes": self.cache.num_nodes,
                "pods": self.cache.num_pods,
                "assumed_pods": self.cache.num_assumed(),
            }
        )
        self.recorder = EventRecorder(api, qps=event_qps)
        #: Pod status patches waiting to be sent, by pod key (send_pod_status).
        self.status_patches: dict[str, dict[str, Any]] = {}
        #: PodGroup status patches waiting to be sent, by group key.
        self.pod_group_patches: dict[str, dict[str, Any]] = {}
        self.stats = SchedulingStats()
        #: Opportunistic batching: pods with the same scheduling signature popped
        #: together and placed by one Rust call. On when the Rust core offers
        #: ``Snapshot.schedule_batch`` and ``CompiledPod.signature`` (0 or 1 disables).
        batching = feature_gates.opportunistic_batching
        self.batch_size = (
            batch_size
            if batch_size is not None
            else (32 if batching and hasattr(Snapshot, "schedule_batch") else 1)
        )
        #: Signatures whose last attempt fit no node: their pods go one by one.
        self._unbatched: set[object] = set()
        self.binder = Binder(self)
        #: Pending pods that no profile of ours handles and that carry no PodScheduled
        #: condition (nobody has tried them yet): uid → (schedulerName, first seen).
        self._unclaimed: dict[str, tuple[str, float]] = {}
        #: The pending pod parsed last: a new pod whose spec shares every value with its
        #: spec (siblings of one template, through the informer's sharing) reuses what
        #: it derived from it (``Pod.from_dict(like=...)``).
        self._pod_template: Pod | None = None
        #: Compiles pending pods, a sibling of the pod compiled last as a copy of its
        #: kernel form.
        self.compiler = SiblingCompiler()
        self._unclaimed_warned: set[str] = set()
        #: Seconds such a pod must stay so before ``ksched_unclaimed_pods`` counts it.
        self.unclaimed_after = UNCLAIMED_AFTER if unclaimed_after is None else unclaimed_after
        #: Objects the informers could not parse, by "Kind ns/name" → message.
        self.invalid_objects: dict[str, str] = {}
        #: Pending pods of ours that are invalid: uid → (pod, error, resourceVersion of
        #: the event sent, None until the scheduling loop has sent it).
        self._invalid_pods: dict[str, tuple[Pod, str, str | None]] = {}
        self._scheduling = False
        self.node_informer = Informer(
            api,
            "nodes",
            on_add=self._timed_node(self._node_added, "NodeAdd"),
            on_update=self._node_updated,
            on_delete=self._timed_node(self._node_deleted, "NodeDelete"),
        )
        self.pod_informer = Informer(
            api,
            "pods",
            on_add=self._timed_pod(self._pod_added, "Add"),
            on_update=self._timed_pod_update,
            on_delete=self._timed_pod(self._pod_deleted, "Delete"),
        )
        self.metrics.add_inflight_events_source(self.queue.in_flight_event_counts)
        self.metrics.add_goroutines_source(self._goroutines)
        #: Services and controllers, for PodTopologySpread's default constraints.
        self.controllers = ControllerIndex()
        #: Namespaces (labels for namespaceSelector) and the controller kinds.
        self.aux_informers = [
            Informer(
                api,
                "namespaces",
                on_add=self._namespace_changed,
                on_update=lambda old, new: self._namespace_changed(new),
                on_delete=self._namespace_deleted,
            ),
            *(
                Informer(
                    api,
                    kind,
                    on_add=functools.partial(self._controller_changed, kind),
                    on_update=functools.partial(self._controller_updated, kind),
                    on_delete=functools.partial(self._controller_deleted, kind),
                )
                for kind in CONTROLLER_KINDS
            ),
        ]
        #: PodDisruptionBudgets, which preemption reads (as upstream, only watched when
        #: a profile has a PostFilter plugin).
        self.pdb_informer: Informer | None = None
        if any(fw.has_post_filter for fw in self.frameworks.values()):
            self.pdb_informer = Informer(
                api,
                "poddisruptionbudgets",
                on_add=_ignore,
                on_update=_ignore,
                on_delete=_ignore,
            )
            self.aux_informers.append(self.pdb_informer)
        self.aux_informers.extend(inf.informer for inf in self.shared_informers.all())
        self.shared_informers.freeze()
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.synced = asyncio.Event()

    # ---- event handling latency (scheduler_event_handling_duration_seconds) ---------

    # Upstream's event handlers log each event at V(3) (adds, deletes) or V(4) (updates).

    def _timed_node(self, fn: Callable[[Obj], None], label: str) -> Callable[[Obj], None]:
        series = self.metrics.event_handling_duration.child((label,))
        message = "Add event for node" if label == "NodeAdd" else "Delete event for node"
        v3 = klog.v(3)

        def handler(obj: Obj) -> None:
            start = _perf()
            if v3.enabled:
                v3.info(message, node=logs.kobj(obj))
            fn(obj)
            series.observe(_perf() - start)

        return handler

    def _timed_pod(self, fn: Callable[[Obj], None], action: str) -> Callable[[Obj], None]:
        assigned = self.metrics.event_handling_duration.child((f"AssignedPod{action}",))
        pending = self.metrics.event_handling_duration.child((f"UnschedulablePod{action}",))
        v3 = klog.v(3)

        def handler(obj: Obj) -> None:
            start = _perf()
            scheduled = bool((obj.get("spec") or {}).get("nodeName"))
            if v3.enabled:
                kind = "scheduled" if scheduled else "unscheduled"
                v3.info(f"{action} event for {kind} pod", pod=logs.kobj(obj))
            fn(obj)
            (assigned if scheduled else pending).observe(_perf() - start)

        return handler

    def _timed_pod_update(self, old: Obj, new: Obj) -> None:
        start = _perf()
        scheduled = bool((old.get("spec") or {}).get("nodeName"))
        if _V4.enabled:
            kind = "scheduled" if scheduled else "unscheduled"
            _V4.info(f"Update event for {kind} pod", pod=logs.kobj(new))
        self._pod_updated(old, new)
        latency = self.metrics.event_handling_duration
        took = _perf() - start
        if scheduled:
            latency.observe(("AssignedPodUpdate",), took)
        elif (new.get("spec") or {}).get("nodeName"):
            # Upstream's filtered handlers see a pod that got bound leave the
            # unscheduled pods and join the assigned ones.
            latency.observe(("UnschedulablePodDelete",), took)
            latency.observe(("AssignedPodAdd",), took)
        else:
            latency.observe(("UnschedulablePodUpdate",), took)

    def _goroutines(self) -> dict[str, int]:
        """``scheduler_goroutines``: the bindings in flight; a cycle's parallel node work
        (Filter, InterPodAffinity) never overlaps a scrape on the event loop."""
        out = {"binding": self.binder.in_flight, "Filter": 0, "InterPodAffinity": 0}
        if self.extenders:
            out["prioritizing_extender"] = 0
        return out

    def _watch_registered_kinds(self) -> None:
        """Upstream ``addAllEventHandlers``: every kind a plugin's events name (beyond
        nodes and pods) is watched, and its changes reach the queue as
        ``<Kind>/Add|Update|Delete`` events whose hints get the raw objects."""
        resources = {
            reg.event.resource
            for fw in self.frameworks.values()
            for _, reg in fw.enqueue_registrations()
        }
        by_kind: dict[Kind, str] = {}
        for resource in sorted(resources):
            kind = kind_of_resource(resource)
            if kind is not None:
                by_kind[kind] = resource
        for kind, resource in by_kind.items():
            self.shared_informers.get(kind).add_handler(**self._requeue_handlers(resource))

    def _requeue_handlers(self, resource: str) -> dict[str, Callable[..., None]]:
        queue = self.queue
        add = ClusterEvent(resource, ActionType.ADD)
        update = ClusterEvent(resource, ActionType.UPDATE)
        delete = ClusterEvent(resource, ActionType.DELETE)

        def on_add(obj: Obj) -> None:
            queue.move_all_to_active_or_backoff(add, None, obj)

        def on_update(old: Obj, new: Obj) -> None:
            queue.move_all_to_active_or_backoff(update, old, new)

        def on_delete(obj: Obj) -> None:
            queue.move_all_to_active_or_backoff(delete, obj, None)

        return {"on_add": on_add, "on_update": on_update, "on_delete": on_delete}

    def _nomination_touched(self, pod: Pod, node: str | None) -> None:
        """Nominations count against their node when filtering: per-node results
        (``Cache.node_generation``) must see them change."""
        old = self._nominated_at.pop(pod.uid, None)
        if old is not None:
            self.cache.touch(old)
        if node is not None:
            self._nominated_at[pod.uid] = node
            self.cache.touch(node)

    def _nomination_changed(self, pod: Pod, node: str | None) -> None:
        snapshot: Any = self.cache.snapshot
        if node is not None:
            try:
                snapshot.set_nominated(compile_pod(pod), node)
                return
            except InvalidObjectError as exc:
                self._invalid(exc)
        snapshot.clear_nominated(pod.uid)

    def _node_pods(self, node: str) -> list[Pod] | None:
        """The pods the cache accounts on ``node``; None when the node is unknown."""
        if node not in self.cache.nodes:
            return None
        return [p.pod for p in self.cache.pods_on_node(node)]

    def unclaimed_pods(self) -> Counter[str]:
        """Pods per schedulerName that no profile of this scheduler handles and that
        nobody has tried to schedule: pending for :attr:`unclaimed_after` seconds without
        a PodScheduled condition (another scheduler sets one when it fails a pod, and the
        API server on gated pods). A name is warned about once, when first counted."""
        now = time.monotonic()
        counts: Counter[str] = Counter(
            name for name, seen in self._unclaimed.values() if now - seen >= self.unclaimed_after
        )
        for name in counts:
            if name not in self._unclaimed_warned:
                self._unclaimed_warned.add(name)
                klog.warning(
                    "Pods name a schedulerName that no profile of this scheduler handles and "
                    "nobody has tried to schedule them; leaving them to another scheduler",
                    schedulerName=name,
                    pods=counts[name],
                )
        return counts

    async def _watch_unclaimed(self) -> None:
        """Warn about unclaimed pods even when nobody scrapes the metric."""
        while True:
            await asyncio.sleep(max(1.0, self.unclaimed_after / 2))
            self.unclaimed_pods()

    def handles(self, scheduler_name: str) -> bool:
        """Whether a profile of this scheduler claims pods with this schedulerName."""
        return scheduler_name in self.profiles

    def background(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run an API call in the background; :meth:`shutdown` waits for it."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ---- informer handlers ---------------------------------------------------------

    def _invalid(self, exc: InvalidObjectError) -> None:
        key = f"{exc.kind} {exc.name}"
        if key not in self.invalid_objects:
            log.error("skipping invalid object: %s", exc)
        self.invalid_objects[key] = str(exc)

    def _invalid_pod(self, obj: Obj, exc: InvalidObjectError) -> None:
        """Report a pending pod of ours that cannot be scheduled as it is: log and
        :attr:`invalid_objects` now, a FailedScheduling event from the leader."""
        self._invalid(exc)
        meta = obj.get("metadata") if type(obj) is dict else None
        spec = obj.get("spec") if type(obj) is dict else None
        if type(meta) is not dict or type(spec) is not dict or spec.get("nodeName"):
            return
        name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if not isinstance(name, str) or not self.handles(name):
            return
        try:
            # Just what an event names: the pod's identity, which did parse.
            ref = Pod.from_dict(
                {
                    "metadata": {
                        k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")
                    },
                    "spec": {"schedulerName": name},
                }
            )
        except InvalidObjectError:
            return
        if not ref.uid:
            return
        self.queue.delete(ref.uid)
        self._invalid_pods[ref.uid] = (ref, str(exc), None)
        if self._scheduling:
            self._report_invalid_pods()

    def _report_invalid_pods(self) -> None:
        for uid, (pod, message, sent) in list(self._invalid_pods.items()):
            if sent != pod.resource_version:
                self.recorder.failed_scheduling(pod, message, pod.scheduler_name)
                self._invalid_pods[uid] = (pod, message, pod.resource_version)

    def _parse_node(self, obj: Obj) -> Node | None:
        try:
            return Node.from_dict(obj)
        except InvalidObjectError as exc:
            self._invalid(exc)
            return None

    def _parse_pod(self, obj: Obj) -> Pod | None:
        try:
            return Pod.from_dict(obj)
        except InvalidObjectError as exc:
            self._invalid(exc)
            return None

    def _upsert_node(self, node: Node) -> bool:
        try:
            self.cache.upsert_node(node)
        except InvalidObjectError as exc:
            self._invalid(exc)
            return False
        self.invalid_objects.pop(f"Node {node.name}", None)
        return True

    def _node_added(self, obj: Obj) -> None:
        node = self._parse_node(obj)
        if node is None or not self._upsert_node(node):
            return
        self.queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, node)

    def _node_updated(self, old_obj: Obj, new_obj: Obj) -> None:
        start = _perf()
        if _V4.enabled:
            _V4.info("Update event for node", node=logs.kobj(new_obj))
        new = self._parse_node(new_obj)
        if new is None:
            return
        old = self.cache.nodes.get(new.name)
        if not self._upsert_node(new):
            return
        if old is None:
            # The old object was invalid (never cached): this is an add for us.
            self.queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, new)
            return
        updating = _perf() - start
        latency = self.metrics.event_handling_duration
        for event in node_scheduling_properties_change(
            old, new, declared_features=self.feature_gates.node_declared_features
        ):
            moving = _perf()
            self.queue.move_all_to_active_or_backoff(event, old, new)
            latency.observe((event.label,), updating + _perf() - moving)

    def _node_deleted(self, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(name, str):
            return
        old = self.cache.nodes.get(name)
        if old is not None:
            self.queue.move_all_to_active_or_backoff(EVENT_NODE_DELETE, old, None)
        self.cache.remove_node(name)

    def compile(self, pod: Pod) -> CompiledPod:
        """The kernel form of a pending pod, with the selector of its workload. A
        sibling of the pod compiled last (same template, same workload) is a copy of
        its kernel form (:class:`~ksched.backend.compile.SiblingCompiler`)."""
        owners = (pod.raw.get("metadata") or {}).get("ownerReferences")
        generation = self.controllers.generation
        compiler = self.compiler
        if compiler.selector_known(pod, generation, owners):
            return compiler.compile(pod, generation=generation, same_selector=True)
        selector = self.controllers.default_selector(
            pod.namespace,
            pod.labels,
            [o for o in owners or () if isinstance(o, dict)],
        )
        return compiler.compile(pod, selector, generation=generation)

    def _namespace_changed(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        name = meta.get("name")
        if isinstance(name, str) and isinstance(labels, dict):
            self.cache.snapshot.upsert_namespace(name, {str(k): str(v) for k, v in labels.items()})

    def _namespace_deleted(self, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if isinstance(name, str):
            self.cache.snapshot.remove_namespace(name)

    def _controller_changed(self, kind: str, obj: Obj) -> None:
        before = self.controllers.generation
        self.controllers.upsert(kind, obj)
        if self.controllers.generation != before:
            self._recompile_pending()

    def _controller_updated(self, kind: str, old: Obj, new: Obj) -> None:
        self._controller_changed(kind, new)

    def _controller_deleted(self, kind: str, obj: Obj) -> None:
        before = self.controllers.generation
        self.controllers.delete(kind, obj)
        if self.controllers.generation != before:
            self._recompile_pending()

    def _recompile_pending(self) -> None:
        """A workload selector changed: pending pods' default spreading may differ."""
        for info in list(self.queue.infos()):
            try:
                info.compiled = self.compile(info.pod)
            except InvalidObjectError as exc:
                self._invalid_pod(info.pod.raw, exc)

    def _pod_added(self, obj: Obj) -> None:
        pod = self._parse_new_pod(obj)
        if pod is not None:
            self._on_pod(pod)
        if self._pod_adds:
            self._run_pod_handlers(self._pod_adds, obj)

    def _parse_new_pod(self, obj: Obj) -> Pod | None:
        """A pod added or changed: parsed, or reported as invalid (None)."""
        try:
            pod = Pod.from_dict(obj, like=self._pod_template)
        except InvalidObjectError as exc:
            self._invalid_pod(obj, exc)
            return None
        if not pod.node_name:
            self._pod_template = pod
        return pod

    def _on_pod(self, pod: Pod) -> None:
        if self.invalid_objects:
            self.invalid_objects.pop(f"Pod {pod.key}", None)
        if self._invalid_pods:
            self._invalid_pods.pop(pod.uid, None)
        prev = self._unclaimed.pop(pod.uid, None) if self._unclaimed else None
        if pod.is_assigned:
            self._assigned_pod(None, pod)
            return
        if pod.is_terminal:
            self.queue.delete(pod.uid)
            self.cache.pod_groups.remove_member(pod)
            return
        if self.handles(pod.scheduler_name):
            if self.cache.is_assumed(pod.uid):
                return  # our own binding is in flight
            try:
                compiled = self.compile(pod)
            except InvalidObjectError as exc:
                self._invalid_pod(pod.raw, exc)
                return
            queue = self.queue
            groups = self.cache.pod_groups
            added = not queue.has(pod.uid)
            if groups.enabled and pod.scheduling_group:
                # Before the queue's PreEnqueue, which counts the group's pods.
                groups.add_member(pod)
            queue.add(pod, compiled)
            if added and self.feature_gates.gang_scheduling:
                # Upstream addPodToSchedulingQueue: a new pod may complete a gang.
                queue.move_all_to_active_or_backoff(EVENT_UNSCHEDULED_POD_ADD, None, pod)
        elif not _has_pod_scheduled_condition(pod.raw):
            since = prev[1] if prev is not None else time.monotonic()
            self._unclaimed[pod.uid] = (pod.scheduler_name, since)

    def _assigned_pod(self, old_obj: Obj | None, pod: Pod) -> None:
        """A bound pod was added or changed (including our own binding confirmed)."""
        queue = self.queue
        if pod.is_terminal:
            # A finished pod no longer holds resources on its node.
            if self.cache.remove_pod(pod.uid) and queue.wants_events():
                queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod, None)
            return
        queue.delete(pod.uid)
        error = self.cache.add_pod(pod)
        if error is not None:
            self._invalid(error)  # accounted on its node all the same
        if not queue.wants_events():
            return  # nothing pending or in flight could be woken: skip the event work
        old_assigned = old_obj is not None and bool((old_obj.get("spec") or {}).get("nodeName"))
        if not old_assigned:
            queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_ADD, None, pod)
            return
        assert old_obj is not None
        old = self._parse_pod(old_obj)
        if old is None:
            return
        for event in pod_scheduling_properties_change(old, pod):
            queue.move_all_to_active_or_backoff(event, old, pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        self._pod_updated_here(old, new)
        if self._pod_updates:
            self._run_pod_handlers(self._pod_updates, old, new)

    def _pod_updated_here(self, old: Obj, new: Obj) -> None:
        node = (new.get("spec") or {}).get("nodeName")
        if (
            node
            and not (old.get("spec") or {}).get("nodeName")
            and not self.queue.wants_events()
            and self.cache.confirm_assumed(str((new.get("metadata") or {}).get("uid") or ""), node)
        ):
            # Our own binding, confirmed; no pending pod could care (fast path).
            return
        if node:
            if (old.get("spec") or {}).get("nodeName") == node and _only_conditions_changed(
                old, new
            ):
                # The kubelet's condition updates: nothing the cache holds changed, and
                # the only event is a generic AssignedPod/Update (upstream
                # ``PodSchedulingPropertiesChange``), delivered only when a plugin
                # registered one (NodeDeclaredFeatures' Pod/Update, a Pod/All).
                queue = self.queue
                if queue.wants_events() and queue.is_event_of_interest(EVENT_ASSIGNED_POD_UPDATE):
                    old_pod, new_pod = self._parse_pod(old), self._parse_pod(new)
                    if old_pod is not None and new_pod is not None:
                        queue.move_all_to_active_or_backoff(
                            EVENT_ASSIGNED_POD_UPDATE, old_pod, new_pod
                        )
                return
            pod = self._parse_pod(new)
            if pod is None:
                return
            self.invalid_objects.pop(f"Pod {pod.key}", None)
            self._unclaimed.pop(pod.uid, None)
            self._assigned_pod(old, pod)
            return
        uid = str((new.get("metadata") or {}).get("uid") or "")
        if uid in self._unclaimed and _has_pod_scheduled_condition(new):
            del self._unclaimed[uid]  # another scheduler tried it
        # Upstream ``updatePodInSchedulingQueue`` drops only a resync (same
        # resourceVersion): every other update reaches the queue, which reports it as
        # the specific ``Pod/Update*`` events it is or a generic ``Pod/Update`` (e.g.
        # our own PodScheduled=False write) for the hints registered for it.
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get(
            "resourceVersion"
        ):
            return
        pod = self._parse_new_pod(new)
        if pod is None:
            return
        if self.cache.is_assumed(pod.uid):
            if pod.deletion_timestamp is not None:
                self._assumed_pod_deleted(pod)
            return
        old_nnn = (old.get("status") or {}).get("nominatedNodeName")
        self._on_pod(pod)
        # Upstream's updatePodInSchedulingQueue runs for pods of our profiles only.
        if old_nnn and old_nnn != pod.nominated_node_name and self.handles(pod.scheduler_name):
            # The pod no longer holds its nominated node: lower or equal priority pods
            # may fit there now.
            old_pod = self._parse_pod(old)
            if old_pod is not None:
                self.queue.move_all_to_active_or_backoff(
                    EVENT_ASSIGNED_POD_DELETE,
                    old_pod,
                    None,
                    lambda p: p.priority <= old_pod.priority,
                )

    def _assumed_pod_deleted(self, pod: Pod) -> None:
        """Upstream ``handleAssumedPodDeletion``: free the pod's assumed resources."""
        wp = self.waiting_pods.get(pod.uid)
        if wp is not None:
            wp.reject("", "removed")  # its binding cycle cleans up
        else:
            self.cache.forget(pod.uid)
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod, None)

    def _pod_deleted(self, obj: Obj) -> None:
        self._pod_deleted_here(obj)
        if self._pod_deletes:
            self._run_pod_handlers(self._pod_deletes, obj)

    def _pod_deleted_here(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = str(meta.get("uid") or "")
        self._unclaimed.pop(uid, None)
        self._invalid_pods.pop(uid, None)
        queue = self.queue
        if spec.get("nodeName"):
            if self.cache.remove_pod(uid) and queue.wants_events():
                pod = self._parse_pod(obj)
                if pod is not None:
                    queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, pod, None)
            return
        scheduler_name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if not self.handles(str(scheduler_name)):
            return  # upstream deletePodFromSchedulingQueue: pods of our profiles only
        queue.delete(uid)
        if self.cache.pod_groups.enabled:
            group = _scheduling_group_of(obj)
            state = self.cache.pod_groups.get(str(meta.get("namespace") or ""), group)
            if state is not None and uid in state.all:
                self.cache.pod_groups.remove_member(state.all[uid])
        if self.cache.is_assumed(uid):
            pod = self._parse_pod(obj)
            if pod is not None:
                self._assumed_pod_deleted(pod)
        elif (obj.get("status") or {}).get("nominatedNodeName") and queue.wants_events():
            pod = self._parse_pod(obj)
            if pod is not None:
                prio = pod.priority
                queue.move_all_to_active_or_backoff(
                    EVENT_ASSIGNED_POD_DELETE, pod, None, lambda p: p.priority <= prio
                )

    # ---- running -------------------------------------------------------------------

    async def start(self) -> None:
        """Start the informers and wait until both caches are synced."""
        loop = asyncio.get_running_loop()
        for inf in self.aux_informers:
            self._tasks.append(loop.create_task(inf.run()))
        for inf in self.aux_informers:
            await inf.synced.wait()
        self._tasks.append(loop.create_task(self.node_informer.run()))
        await self.node_informer.synced.wait()
        self._tasks.append(loop.create_task(self.pod_informer.run()))
        await self.pod_informer.synced.wait()
        self._tasks.append(loop.create_task(self.queue.run_flushers()))
        self._tasks.append(loop.create_task(self._watch_unclaimed()))
        self.synced.set()

    async def run(self) -> None:
        """Schedule until :meth:`stop`. Starts the informers first if needed."""
        if not self.synced.is_set():
            await self.start()
        self._scheduling = True
        self._report_invalid_pods()
        queue = self.queue
        binder = self.binder
        while not self._stopping.is_set():
            if binder.room() <= 0:
                # Bounded run-ahead: the decided pods wait for their bindings; the rest
                # stay in the queue (priority order and hints still apply).
                await binder.wait_for_room()
                continue
            info = queue.try_pop()
            if info is None:
                info = await queue.pop()
                if info is None:
                    break
            await self.schedule_popped(info)
            if not await self._nominations_written():
                # Let informers and binding tasks run between cycles.
                await asyncio.sleep(0)

    async def _nominations_written(self) -> bool:
        """Wait for the nominations the last cycles' preemptions are writing, if any
        (upstream's failure handler returns once its status update is done); whether
        there were any."""
        if not self.nomination_writes:
            return False
        writes, self.nomination_writes = self.nomination_writes, []
        await asyncio.wait(writes)
        return True

    async def schedule_popped(self, info: QueuedPodInfo) -> None:
        """The scheduling cycle of a pod just popped from the queue, exactly as
        :meth:`run` runs it: a member of a pod group through the pod group cycle
        (:func:`schedule_group`, which pops the group's other members); a pod an
        extender is interested in through :func:`schedule_one_async` (its HTTP calls
        awaited, informers and bindings go on meanwhile); any other with opportunistic
        batching, together with the activeQ heads of its signature
        (:func:`schedule_batch`), else alone (:func:`schedule_one`)."""
        driver = self.group_driver(info)
        if driver is not None:
            schedule_group(self, info, driver)
        elif self.extenders and needs_extenders(self, info):
            await schedule_one_async(self, info)
        elif self.batch_size > 1:
            key = self.signature(info)
            left: list[QueuedPodInfo] = []
            if schedule_batch(self, self._gather_batch(info), left):
                self._unbatched.discard(key)
            elif key is not None:
                if len(self._unbatched) >= _MAX_UNBATCHED:
                    self._unbatched.clear()
                self._unbatched.add(key)
            # A member preempted: the rest get cycles of their own, each after the
            # nominations before it are written.
            for rest in left:
                await self._nominations_written()
                if rest.deleted or self._stopping.is_set():
                    self.queue.done(rest.uid)  # gone meanwhile, or no more cycles
                    continue
                schedule_batch(self, [rest])  # a cycle of its own (a batch of one)
        else:
            schedule_one(self, info)

    def group_driver(self, info: Any) -> GroupDriver | None:
        """The driver of the pod group ``info``'s pod belongs to (upstream: a pod with
        ``spec.schedulingGroup`` and GenericWorkload on; ksched also drives
        Coscheduling's PodGroups this way), or None for a pod scheduled on its own."""
        pod = info.pod
        if self._generic_workload and pod.scheduling_group:
            return InTreeGroup(self, pod.namespace, pod.scheduling_group)
        for plugin in self._group_drivers.get(pod.scheduler_name, ()):
            driver: GroupDriver | None = plugin.group_driver(pod)
            if driver is not None:
                return driver
        return None

    def add_pod_handler(
        self,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        """Call these with the raw objects of every pod change the pod informer sees,
        after the scheduler's own handling (upstream: plugins add event handlers to
        the shared pod informer)."""
        if on_add is not None:
            self._pod_adds.append(on_add)
        if on_update is not None:
            self._pod_updates.append(on_update)
        if on_delete is not None:
            self._pod_deletes.append(on_delete)

    def _run_pod_handlers(self, handlers: list[Callable[..., None]], *objs: Obj) -> None:
        for fn in handlers:
            try:
                fn(*objs)
            except Exception:
                log.exception("a plugin's pod handler failed")

    def pod_group_lister(self) -> Lister[Any]:
        """The scheduling.k8s.io PodGroups (GenericWorkload)."""
        if self._pod_group_lister is None:
            raise RuntimeError("PodGroups are only watched with the GenericWorkload gate")
        return self._pod_group_lister

    def _gather_batch(self, first: Any) -> list[Any]:
        """``first`` and the activeQ heads with its scheduling signature. Pods of a
        signature whose last attempt fit no node go one by one until one of them fits:
        each such cycle runs PostFilter (preemption), whose effects (victims deleted,
        preemptors released) the next pod should see, and batching saves nothing for
        pods that fail."""
        key = self.signature(first)
        if (
            key is None
            or key in self._unbatched
            or skip_pod(self, first)
            or not batchable(self, first)
        ):
            return [first]
        name = first.pod.scheduler_name
        has_pod = self.cache.has_pod
        generic = self._generic_workload
        drivers = self._group_drivers.get(name)

        def accept(i: QueuedPodInfo) -> bool:
            # ``skip_pod`` and ``group_driver`` for a pod of ``first``'s profile (which
            # exists: ``first`` passed ``skip_pod``), spelled out: this runs per pod.
            pod = i.pod
            return (
                pod.scheduler_name == name
                and pod.deletion_timestamp is None
                and not has_pod(pod.uid)
                and not (generic and pod.scheduling_group)
                and (not drivers or self.group_driver(i) is None)
            )

        more = self.queue.pop_same(
            key, self.signature, min(self.batch_size, self.binder.room()) - 1, accept
        )
        return [first, *more]

    @staticmethod
    def signature(info: Any) -> object:
        """The pod's scheduling signature from the Rust core (None: not batchable).
        A pod with ResourceClaims has none (upstream DynamicResources' ``SignPod``: its
        placement depends on devices the core's signature does not see). Remembered
        with the queued pod until its compiled form changes (a new pod object)."""
        compiled = info.compiled
        memo = getattr(info, "signature_memo", None)
        if memo is not None and memo[0] is compiled:
            return memo[1]
        sig = (
            None
            if (info.pod.raw.get("spec") or {}).get("resourceClaims")
            else getattr(compiled, "signature", None)
        )
        if isinstance(info, QueuedPodInfo):
            info.signature_memo = (compiled, sig)
        return sig

    def quiescent(self, *, backoff: bool = True) -> bool:
        """Whether nothing can progress without a change in the cluster: no pod in
        activeQ or backoffQ or in a scheduling attempt, no binding, no pod waiting at
        Permit, no API call in the background (a victim's deletion, a status patch).
        What is still pending then waits in unschedulablePods for a cluster event (or
        the ``podMaxInUnschedulablePodsDuration`` flush, after which it fails again).
        ``backoff=False``: pods in backoffQ (retried when their backoff expires) do not
        count."""
        counts = self.queue.counts()
        return (
            counts["active"] == 0
            and (counts["backoff"] == 0 or not backoff)
            and self.queue.in_flight == 0
            and self.binder.in_flight == 0
            and len(self.waiting_pods) == 0
            and not self._background
            and self.cache.num_assumed() == 0
        )

    def stop(self) -> None:
        """Stop taking pods; in-flight bindings finish (see :meth:`shutdown`)."""
        self._stopping.set()
        self.queue.close()
        self.binder.wake()

    def stop_leading(self) -> None:
        """This replica may no longer write (its Lease lapsed): take no more pods,
        reject the pods waiting at Permit and forget every assumed pod, at once. Their
        bindings, if in flight, are refused by the write fence
        (:mod:`ksched.leaderelection.fencing`)."""
        self.stop()
        for wp in list(self.waiting_pods):
            wp.reject("", "this scheduler lost its lease")
        forgotten = self.cache.forget_all_assumed()
        if forgotten:
            log.info("forgot %d assumed pod(s)", forgotten)

    async def shutdown(self) -> None:
        """Stop, wait for in-flight bindings and events, and stop the informers."""
        self.stop()
        for wp in list(self.waiting_pods):
            wp.reject("", "scheduler shutting down")
        await self.binder.drain()
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self.recorder.drain()
        await self.recorder.close()
        for ext in self.extenders:
            ext.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
