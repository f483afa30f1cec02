"""CapacityScheduling (scheduler-plugins): elastic quotas per namespace.

Followed: kubernetes-sigs/scheduler-plugins ``pkg/capacityscheduling`` at master
903da7df (built on Kubernetes v1.35; no release targets v1.36). The plugin takes no args.

An ``ElasticQuota`` (``scheduling.x-k8s.io/v1alpha1``, one per namespace) has ``min``,
the guaranteed resources, and ``max``, the ceiling. A namespace may *borrow* beyond its
``min`` the ``min`` other namespaces leave unused, up to its ``max``; when the owner needs
it back, preemption reclaims it.

* **Quota usage** is the sum of the requests (``computePodResourceRequest``: containers
  summed, the largest init container, plus overhead; no sidecar or pod-level rules) of
  the namespace's pods that are bound (seen by the informer) or reserved by this
  scheduler (Reserve; Unreserve gives it back). A pod that finishes stops counting.
* **PreFilter** rejects a pod (Unschedulable: preemption may help) when its request
  plus the quota's usage plus the requests of more important pods nominated in the same
  namespace exceeds ``max`` ("... because ElasticQuota <ns> is more than Max"), or when
  the requests of every quota plus the pod's (and nominated pods of other namespaces
  whose quota is within ``min``) exceed the sum of all ``min`` ("... because total
  ElasticQuota used is more than min").
* **PostFilter** preempts, with kube-scheduler's preemption evaluator but its own victim
  rules (``SelectVictimsOnNode``): when the preemptor's quota would go over ``min``, it
  may evict only lower-priority pods of its own namespace; within ``min``, it reclaims
  from other namespaces that use more than their ``min`` (any priority). Victims are
  reprieved most important first as long as the preemptor still fits and the quotas
  allow it. Every potential node is examined (no candidate sampling).

A namespace without an ElasticQuota is not constrained, and its pods may only preempt
lower-priority pods of namespaces without one.

Deliberate difference: upstream prepares the chosen candidate synchronously (the
scheduling cycle waits for the victims' deletions); here the evictions run in the
background as DefaultPreemption's do, and the preemptor is retried when they land.
The ElasticQuota's ``status.used`` is written by scheduler-plugins' ElasticQuota
controller, not by the scheduler; ksched does not run that controller.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ksched.api._parse import FieldError
from ksched.api.pod import Pod, start_time_of
from ksched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ksched.api.workloads import ElasticQuota, resource_list
from ksched.backend.queue.cluster_event import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from ksched.cluster import EVENT_RESOURCES
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle, NodePod, PostFilterResult
from ksched.framework.status import Code, Status
from ksched.plugins.default_preemption import (
    ERR_NEVER,
    Candidate,
    DefaultPreemption,
    _Attempt,
    _restore,
    filter_pods_with_pdb_violation,
)
from ksched.plugins.workload_listers import Lister, elastic_quotas

log = logging.getLogger(__name__)

__all__ = ["NAME", "CapacityScheduling", "ElasticQuotaInfo", "pod_request"]

NAME: Final = "CapacityScheduling"
KIND: Final = "elasticquotas.scheduling.x-k8s.io"
QUOTA_EVENTS: Final = EVENT_RESOURCES[KIND]
UPPER_BOUND_OF_MAX: Final = 2**63 - 1
LOWER_BOUND_OF_MIN: Final = 0
PRE_FILTER_KEY: Final = "PreFilter" + NAME
SNAPSHOT_KEY: Final = "ElasticQuotaSnapshot"
ERR_READ_STATE: Final = "not eligible due to failed to read from cycleState"
ERR_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
ERR_GLOBAL_MAX: Final = "global quota max exceeded"

#: A ``framework.Resource``: amounts by name (cpu in millicores; "pods" is
#: ``AllowedPodNumber``; other names are scalar resources).
Resource = dict[str, int]
_NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


def _add(into: Resource, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def pod_request(pod: Pod) -> Resource:
    """``computePodResourceRequest``: the app containers' requests summed, the largest
    init container's per resource (not ``pods``), plus the pod's overhead."""
    spec = pod.raw.get("spec") or {}
    out: Resource = {}
    try:
        for i, c in enumerate(spec.get("containers") or []):
            _add(out, _requests(c, f"spec.containers[{i}].resources.requests"))
        for i, c in enumerate(spec.get("initContainers") or []):
            for k, v in _requests(c, f"spec.initContainers[{i}].resources.requests").items():
                if k != PODS:
                    out[k] = max(out.get(k, 0), v)
        overhead = resource_list(spec.get("overhead"), "spec.overhead")
        if overhead:
            _add(out, overhead)
    except FieldError:
        pass  # the pod parsed already: its requests are valid
    return out


def _requests(container: Any, path: str) -> Resource:
    resources = container.get("resources") if isinstance(container, dict) else None
    requests = resources.get("requests") if isinstance(resources, dict) else None
    return resource_list(requests, path) or {}


def _cmp2(x1: Resource, x2: Resource, y: Resource, bound: int) -> bool:
    """``cmp2``: whether ``x1 + x2`` exceeds ``y`` in any resource (scalar resources
    of ``x1`` that ``y`` lacks compare with ``bound``)."""
    for r in _NATIVE:
        if x1.get(r, 0) + x2.get(r, 0) > y.get(r, 0):
            return True
    for r, q in x1.items():
        if r in _NATIVE:
            continue
        if q + x2.get(r, 0) > y.get(r, bound):
            return True
    return False


@dataclass(slots=True)
class ElasticQuotaInfo:
    """A namespace's quota and usage (upstream ``ElasticQuotaInfo``)."""

    namespace: str
    min: Resource
    max: Resource
    used: Resource = field(default_factory=dict)
    pods: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, eq: ElasticQuota) -> ElasticQuotaInfo:
        low = (
            dict(eq.min)
            if eq.min is not None
            else dict.fromkeys((CPU, MEMORY, EPHEMERAL_STORAGE), 0)
        )
        high = (
            dict(eq.max)
            if eq.max is not None
            else dict.fromkeys((CPU, MEMORY, EPHEMERAL_STORAGE), UPPER_BOUND_OF_MAX)
        )
        return cls(eq.namespace, low, high)

    def clone(self) -> ElasticQuotaInfo:
        return ElasticQuotaInfo(
            self.namespace, dict(self.min), dict(self.max), dict(self.used), set(self.pods)
        )

    def used_over_min_with(self, request: Resource) -> bool:
        return _cmp2(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Resource) -> bool:
        return _cmp2(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        return _cmp2(self.used, {}, self.min, LOWER_BOUND_OF_MIN)

    def add_pod_if_not_present(self, pod: Pod) -> None:
        if pod.key in self.pods:
            return
        self.pods.add(pod.key)
        _add(self.used, pod_request(pod))

    def delete_pod_if_present(self, pod: Pod) -> None:
        if pod.key not in self.pods:
            return
        self.pods.discard(pod.key)
        for k, v in pod_request(pod).items():
            self.used[k] = self.used.get(k, 0) - v


Infos = dict[str, ElasticQuotaInfo]


def _clone(infos: Infos) -> Infos:
    return {k: v.clone() for k, v in infos.items()}


def aggregated_used_over_min_with(infos: Infos, request: Resource) -> bool:
    used: Resource = {}
    low: Resource = {}
    for info in infos.values():
        _add(used, info.used)
        _add(low, info.min)
    _add(used, request)
    return _cmp2(used, {}, low, LOWER_BOUND_OF_MIN)


@dataclass(slots=True)
class _PreFilterState:
    pod_req: Resource
    in_quota: Resource = field(default_factory=dict)
    total: Resource = field(default_factory=dict)


def _parse_pod(obj: Mapping[str, Any]) -> Pod | None:
    try:
        return Pod.from_dict(dict(obj))
    except ValueError:
        return None


def _assigned(obj: Mapping[str, Any] | None) -> bool:
    return bool(obj) and bool((obj.get("spec") or {}).get("nodeName"))  # type: ignore[union-attr]


class CapacityScheduling:
    """PreFilter, PostFilter and Reserve of scheduler-plugins' CapacityScheduling."""

    name = NAME

    def __init__(self) -> None:
        self.infos: Infos = {}
        self._handle: Handle | None = None
        self._quotas: Lister[ElasticQuota] | None = None
        self._preemptor = _QuotaPreemption(self)

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        self._preemptor.setup(handle)
        informer = handle.informer(KIND)
        self._quotas = elastic_quotas(informer)
        informer.add_handler(
            on_add=self._quota_added, on_update=self._quota_updated, on_delete=self._quota_deleted
        )
        handle.add_pod_handler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted
        )

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError("CapacityScheduling is not set up with a scheduler handle")
        return self._handle

    # ---- informers -------------------------------------------------------------------

    def _quota(self, obj: Mapping[str, Any]) -> ElasticQuota | None:
        try:
            return ElasticQuota.from_dict(dict(obj))
        except ValueError as exc:
            log.error("ignoring invalid ElasticQuota: %s", exc)
            return None

    def _quota_added(self, obj: Mapping[str, Any]) -> None:
        eq = self._quota(obj)
        if eq is None or eq.namespace in self.infos:
            return
        self.infos[eq.namespace] = ElasticQuotaInfo.of(eq)

    def _quota_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        eq = self._quota(new)
        if eq is None:
            return
        info = ElasticQuotaInfo.of(eq)
        previous = self.infos.get(eq.namespace)
        if previous is not None:
            info.pods = previous.pods
            info.used = previous.used
        self.infos[eq.namespace] = info

    def _quota_deleted(self, obj: Mapping[str, Any]) -> None:
        ns = (obj.get("metadata") or {}).get("namespace")
        self.infos.pop(str(ns or ""), None)

    def _pod_added(self, obj: Mapping[str, Any]) -> None:
        if _assigned(obj):
            self._add_pod(obj)

    def _pod_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        # A FilteringResourceEventHandler on assigned pods.
        was, now = _assigned(old), _assigned(new)
        if not was and now:
            self._add_pod(new)
        elif was and not now:
            self._delete_pod(old)
        elif was and now:
            if (old.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            if (new.get("status") or {}).get("phase") not in ("Running", "Pending"):
                self._delete_pod(new)

    def _pod_deleted(self, obj: Mapping[str, Any]) -> None:
        if _assigned(obj):
            self._delete_pod(obj)

    def _add_pod(self, obj: Mapping[str, Any]) -> None:
        pod = _parse_pod(obj)
        if pod is None:
            return
        info = self.infos.get(pod.namespace)
        if info is None:
            # Not seen yet: list the namespace's quotas (only one is supported).
            assert self._quotas is not None
            found = next(iter(self._quotas.list(pod.namespace)), None)
            if found is None:
                return
            info = self.infos[pod.namespace] = ElasticQuotaInfo.of(found)
        info.add_pod_if_not_present(pod)

    def _delete_pod(self, obj: Mapping[str, Any]) -> None:
        pod = _parse_pod(obj)
        if pod is None:
            return
        info = self.infos.get(pod.namespace)
        if info is not None:
            info.delete_pod_if_present(pod)

    # ---- events ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(QUOTA_EVENTS, ActionType.ALL)),
        ]

    # ---- PreFilter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[None, Status | None]:
        snapshot = _clone(self.infos)
        req = pod_request(pod)
        state.write(SNAPSHOT_KEY, snapshot)
        eq = snapshot.get(pod.namespace)
        if eq is None:
            state.write(PRE_FILTER_KEY, _PreFilterState(req))
            return None, None
        in_quota: Resource = {}
        total: Resource = {}
        h = self.handle
        prio = pod.priority
        for node in h.nominated_nodes():
            if h.snapshot.allocatable(node, "pods") is None:
                continue  # upstream walks the snapshot's nodes
            for p in h.nominated_pods_for_node(node):
                if p.uid == pod.uid:
                    continue
                info = self.infos.get(p.namespace)
                if info is None:
                    continue
                p_req = pod_request(p)
                if p.namespace == pod.namespace and p.priority >= prio:
                    _add(in_quota, p_req)
                    _add(total, p_req)
                elif p.namespace != pod.namespace and not info.used_over_min():
                    _add(total, p_req)
        _add(in_quota, req)
        _add(total, req)
        state.write(PRE_FILTER_KEY, _PreFilterState(req, in_quota, total))
        if eq.used_over_max_with(in_quota):
            return None, Status(
                Code.UNSCHEDULABLE,
                f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because "
                f"ElasticQuota {eq.namespace} is more than Max",
            )
        if aggregated_used_over_min_with(snapshot, total):
            return None, Status(
                Code.UNSCHEDULABLE,
                f"Pod {pod.namespace}/{pod.name} is rejected in PreFilter because total "
                "ElasticQuota used is more than min",
            )
        return None, None

    # ---- PostFilter ---------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        h = self.handle
        h.metrics.preemption_attempts.inc()
        out = self._preemptor.preempt(state, pod, statuses)
        return out

    # ---- Reserve ------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        info = self.infos.get(pod.namespace)
        if info is not None:
            info.add_pod_if_not_present(pod)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        info = self.infos.get(pod.namespace)
        if info is not None:
            info.delete_pod_if_present(pod)


class _QuotaPreemption(DefaultPreemption):
    """kube-scheduler's preemption evaluator with CapacityScheduling's ``preemptor``:
    its eligibility rule, every potential node from offset 0, its victim selection.
    Used only through :meth:`CapacityScheduling.post_filter` (its own PreEnqueue is
    never registered)."""

    def __init__(self, plugin: CapacityScheduling) -> None:
        super().__init__()
        self.name = NAME
        self._plugin = plugin
        self.offset = lambda n: 0

    def num_candidates(self, num_nodes: int) -> int:
        return num_nodes

    def preempt(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """``Evaluator.Preempt``; its messages go out unprefixed (CapacityScheduling
        returns the evaluator's status as it is)."""
        out = self._preempt(state, pod, statuses, ())
        assert isinstance(out, tuple)
        return out

    def _not_eligible(
        self, pod: Pod, nominated: str, statuses: Mapping[str, Status], state: CycleState
    ) -> str:
        """The ``preemptor``'s ``PodEligibleToPreemptOthers``."""
        if pod.preemption_policy == "Never":
            return ERR_NEVER
        pre = state.get(PRE_FILTER_KEY)
        if not isinstance(pre, _PreFilterState):
            return ERR_READ_STATE
        if not nominated:
            return ""
        status_of = getattr(statuses, "status_of", None)
        st = status_of(nominated) if status_of is not None else statuses.get(nominated)
        if st is not None and st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        snapshot = state.get(SNAPSHOT_KEY)
        if not isinstance(snapshot, dict):
            return ""
        h = self.handle
        if h.snapshot.allocatable(nominated, "pods") is None:
            return ""
        prio = pod.priority
        own = snapshot.get(pod.namespace)
        if own is not None:
            over = own.used_over_min_with(pre.in_quota)
            for cp in h.pods_on_node(nominated):
                p = cp.pod
                if p.deletion_timestamp is None:
                    continue
                info = snapshot.get(p.namespace)
                if info is None:
                    continue
                if p.namespace == pod.namespace and p.priority < prio:
                    return ERR_TERMINATING
                if p.namespace != pod.namespace and not over and info.used_over_min():
                    return ERR_TERMINATING
        else:
            for cp in h.pods_on_node(nominated):
                p = cp.pod
                if p.namespace in snapshot:
                    continue
                if p.deletion_timestamp is not None and p.priority < prio:
                    return ERR_TERMINATING
        return ""

    def find_candidates(self, a: _Attempt, statuses: Mapping[str, Status]) -> Any:
        potential = self._potential_nodes(statuses, a.snapshot)
        names = potential.resolvable_nodes() if not isinstance(potential, list) else potential
        if not names:
            return [], [], []
        return self._dry_run_in_python(a, names, 0, len(names))

    def select_victims_on_node(
        self, a: _Attempt, node: str
    ) -> tuple[Candidate | None, Status | None]:
        """The ``preemptor``'s ``SelectVictimsOnNode`` (see the module docstring); the
        snapshot is restored exactly."""
        pod = a.pod
        state = a.state
        snapshot_state = state.get(SNAPSHOT_KEY)
        pre = state.get(PRE_FILTER_KEY)
        if not isinstance(snapshot_state, dict):
            return None, Status(
                Code.UNSCHEDULABLE, "Failed to read elasticQuotaSnapshot from cycleState"
            )
        if not isinstance(pre, _PreFilterState):
            return None, Status(Code.UNSCHEDULABLE, "Failed to read preFilterState from cycleState")
        infos = _clone(snapshot_state)  # state.Clone() per node
        prio = pod.priority
        own = infos.get(pod.namespace)
        now = a.now
        snapshot = a.snapshot

        def importance(cp: NodePod) -> tuple[int, float, str]:
            start = start_time_of(cp.pod)
            return (-cp.pod.priority, now if start is None else start, cp.pod.uid)

        on_node = sorted(self.handle.pods_on_node(node), key=importance, reverse=True)
        removed: dict[str, NodePod] = {}

        def remove(cp: NodePod) -> None:
            uid = cp.pod.uid
            if uid in removed:
                raise _NotOnNode(f"no corresponding pod {cp.pod.name} in pods of node {node}")
            snapshot.remove_pod(uid)
            removed[uid] = cp
            info = infos.get(cp.pod.namespace)
            if info is not None:
                info.delete_pod_if_present(cp.pod)

        def add(cp: NodePod) -> None:
            _restore(snapshot, cp, node)
            del removed[cp.pod.uid]
            info = infos.get(cp.pod.namespace)
            if info is not None:
                info.add_pod_if_not_present(cp.pod)

        potential: list[NodePod] = []
        try:
            try:
                if own is not None:
                    over = own.used_over_min_with(pre.in_quota)
                    for cp in on_node:
                        p = cp.pod
                        info = infos.get(p.namespace)
                        if info is None:
                            continue
                        if over:
                            if p.namespace == pod.namespace and p.priority < prio:
                                potential.append(cp)
                                remove(cp)
                        elif p.namespace != pod.namespace and info.used_over_min():
                            potential.append(cp)
                            remove(cp)
                else:
                    for cp in on_node:
                        p = cp.pod
                        if p.namespace in infos:
                            continue
                        if p.priority < prio:
                            potential.append(cp)
                            remove(cp)
                if not potential:
                    return None, Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f"No victims found on node {node} for preemptor pod {pod.name}",
                    )
                st = self._filter(a, node)
                if st is not None:
                    return None, st
                if own is not None and (
                    own.used_over_max_with(pre.pod_req)
                    or aggregated_used_over_min_with(infos, pre.pod_req)
                ):
                    return None, Status(Code.UNSCHEDULABLE, ERR_GLOBAL_MAX)
                potential.sort(key=importance)
                violating, non_violating = filter_pods_with_pdb_violation(potential, a.pdbs)
                victims: list[NodePod] = []
                nviol = 0

                def reprieve(cp: NodePod) -> bool:
                    add(cp)
                    fits = self._filter(a, node) is None
                    if not fits:
                        remove(cp)
                        victims.append(cp)
                    if own is not None and (
                        own.used_over_max_with(pre.in_quota)
                        or aggregated_used_over_min_with(infos, pre.total)
                    ):
                        remove(cp)
                        victims.append(cp)
                    return fits

                for cp in violating:
                    if not reprieve(cp):
                        nviol += 1
                for cp in non_violating:
                    reprieve(cp)
            except _NotOnNode as exc:
                return None, Status(Code.ERROR, str(exc))
        finally:
            for cp in list(removed.values()):
                _restore(snapshot, cp, node)
        if not victims:
            return None, Status(Code.ERROR, f'expected at least one victim pod on node "{node}"')
        if violating and non_violating:
            victims.sort(key=importance)
        return Candidate(node, [v.pod.uid for v in victims], nviol), None


class _NotOnNode(Exception):
    """Upstream's ``nodeInfo.RemovePod`` of a pod that is not on the node."""
