"""The plugin API: one Protocol per extension point, as upstream's ``interface.go``.

A plugin is any object with a ``name`` attribute that implements one or more of the
Protocols below; the runtime (:mod:`ksched.framework.runtime`) finds the extension
points a plugin implements by its methods. A plugin that needs the cluster (the API,
the snapshot, waiting pods) defines ``setup(handle)`` and receives a :class:`Handle`
when its profile's framework is built. Built-in Filter/Score plugins run inside the Rust
core and are not objects here; out-of-tree plugins are Python and run around it.

Statuses: a method returning ``Status | None`` returns ``None`` for success (see
:mod:`ksched.framework.status` for the meaning of each code). An exception raised by a
plugin is turned into an ``Error`` status naming the plugin.

Extension points, in the order a pod meets them:

**PreEnqueue** ``pre_enqueue(pod)`` - before the pod enters activeQ/backoffQ. Any status
but success keeps the pod out, in unschedulablePods, marked *gated*, until an event the
plugin registered (and its hint) lets it through. Keep it cheap: it runs on every add.

**QueueSort** ``less(a, b)`` - orders activeQ; exactly one per scheduler, shared by all
profiles. A plugin may also provide ``sort_key(info)`` returning a value whose natural
order matches ``less``, which the queue uses for speed.

**EnqueueExtensions** ``events_to_register()`` - the cluster events (with optional
queueing hints) that may make a pod this plugin rejected schedulable. Only
PreEnqueue/PreFilter/Filter/Reserve/Permit plugins register; a plugin of those kinds
without ``events_to_register`` is woken by every event.

**PreFilter** ``pre_filter(state, pod)`` - once per attempt, before filtering: compute
per-pod state into ``state``, optionally narrow the candidate nodes (a
:class:`PreFilterResult`). ``Skip`` skips this plugin's Filter for the attempt;
Unschedulable/UnschedulableAndUnresolvable rejects the pod on every node.

**Kernel PreFilter** ``kernel_pre_filter(state, pod)`` with ``applies_to(pod)`` - the
PreFilter of a built-in plugin whose Filter/Score run in Rust but that must look API
objects up (the volume plugins: claims, PVs, classes). Once per attempt, before the Rust
call, it returns the request its kernels read (a ``ksched._core`` request object), or
None when it has nothing to check for the pod (upstream's Skip). The framework attaches
the requests to the pod's compiled form (``CompiledPod.with_requests``); a PreFilter
rejection travels inside the request, so the kernels apply it in the profile's plugin
order. ``applies_to(pod)`` is a cheap test of the pod alone: a plugin it rejects is a
no-op for that pod at every extension point (Kernel PreFilter, Reserve, PreBind), which
keeps such pods on the batched fast path.

**Filter** ``filter(state, pod, node)`` - whether the pod fits ``node``. Python Filter
plugins run only on the nodes that passed every built-in (Rust) filter.

**PostFilter** ``post_filter(state, pod, statuses)`` - only when no node fits (e.g.
preemption). May nominate a node for the pod (``PostFilterResult``). For a pod some
scheduler extender is interested in (:attr:`Handle.extenders`, ``is_interested``), the
cycle is asynchronous and ``post_filter`` may return an awaitable of its ``(result,
status)`` instead, e.g. to await an extender's ``process_preemption``; for any other pod
it must answer at once.

**PreScore** ``pre_score(state, pod, nodes)`` - once, before scoring the feasible nodes.
``Skip`` skips this plugin's Score.

**Score** ``score(state, pod, node) -> int`` and optionally
``normalize_score(state, pod, scores)`` - Python scores are normalized to 0-100,
weighted by the plugin's weight in the profile, and added to the built-in total.

**Reserve** ``reserve(state, pod, node)`` / ``unreserve(state, pod, node)`` - update
plugin state for the chosen node before binding. If any later step fails, every reserve
plugin's ``unreserve`` runs, in reverse order. ``unreserve`` must be idempotent.

**Permit** ``permit(state, pod, node) -> (status, timeout_seconds)`` - approve, reject,
or delay binding: ``Wait`` parks the pod in the waiting-pods map until every waiting
plugin allows it (:meth:`WaitingPod.allow`, from anywhere), one rejects it, or its
timeout (at most 15 minutes) rejects it.

**PreBind** ``async pre_bind(state, pod, node)`` - work before binding (e.g. provision a
volume). A failure unreserves, forgets the pod and requeues it.

**Bind** ``async bind(state, pod, node)`` - bind the pod. Bind plugins run in order until
one does not return ``Skip``; the default, DefaultBinder, POSTs the Binding.

**PostBind** ``post_bind(state, pod, node)`` - informational, after a successful bind.

Out-of-tree plugins
-------------------

A plugin package registers a factory under the ``ksched.plugins`` entry-point group;
the entry point's name is the plugin's name (see :mod:`ksched.framework.registry`):

.. code-block:: toml

    [project.entry-points."ksched.plugins"]
    GPUFit = "ksched_gpu_memory:GPUFit"

A profile enables it by that name like any plugin (``multiPoint``, or the extension
points it implements, with a Score ``weight``), and passes it args through
``pluginConfig``. The factory is called once per profile that enables the plugin, as
``factory(args, handle)``: ``args`` is the plugin's ``pluginConfig`` args as a plain
mapping (``None`` when not configured), ``handle`` the scheduler's :class:`Handle`
(usable once the scheduler is built, i.e. from ``setup`` on). The plugin runs only
at the extension points its profile enables it at, in the profile's order, and Score
weights come from the profile. ``examples/gpu-memory-plugin`` is a complete package.

Upstream differences a plugin author should know:

* there is no ``context.Context``: cancellation is the scheduler's business, and
  PreBind/Bind are coroutines on the scheduler's event loop;
* Filter and Score see only nodes that passed every built-in filter (in Rust), and
  within ``percentageOfNodesToScore`` sampling of the built-in filters;
* Score returns an ``int``; errors are raised (an exception becomes an ``Error``
  status naming the plugin); ``normalize_score`` is an optional method of the same
  plugin rather than a separate ``ScoreExtensions`` object;
* a plugin is a plain object: ``name`` (a class attribute is enough) and the methods
  of its extension points, no base class required. The Protocols below type-check it.
"""

from __future__ import annotations

from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    ASSIGNED_POD,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from ksched.framework.cycle_state import CycleState
from ksched.framework.status import Code, Status

if TYPE_CHECKING:
    from ksched._core import CompiledPod, Snapshot
    from ksched.backend.cache.podgroups import PodGroupStates
    from ksched.backend.queue import QueuedPodInfo
    from ksched.backend.shared_informers import SharedInformer
    from ksched.cluster import ClusterAPI, Kind
    from ksched.config import FeatureGates
    from ksched.framework.extender import Extender
    from ksched.framework.runtime import Framework
    from ksched.metrics import SchedulerMetrics

__all__ = [
    "ASSIGNED_POD",
    "COMPILED_POD_KEY",
    "CORE_FILTER_KEY",
    "DEFERRED_ACTIONS_KEY",
    "DRY_RUN_KEY",
    "NODE",
    "NOMINATING_KEY",
    "POD",
    "ActionType",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "FilterPlugin",
    "Handle",
    "KernelPreFilterPlugin",
    "NodeInfo",
    "NodePod",
    "NodeScore",
    "PermitPlugin",
    "Plugin",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueueingHint",
    "QueueingHintFn",
    "ReservePlugin",
    "ScoreExtensions",
    "ScorePlugin",
    "Status",
    "WaitingPod",
]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

T = TypeVar("T")

#: CycleState key: the pod's compiled form, written before PostFilter runs.
COMPILED_POD_KEY: Final = "ksched/compiled"
#: CycleState key: the nomination PostFilter decided (see ``PostFilterResult``).
NOMINATING_KEY: Final = "ksched/nominating"
#: CycleState key: a filter a PreFilter plugin prepared for the Rust core to run on
#: every node after the built-in filters (DynamicResources' allocator,
#: :class:`ksched._core.DraAllocator`); its ``error`` fails the attempt.
CORE_FILTER_KEY: Final = "ksched/core-filter"
#: CycleState key, set in a pod group cycle: a list where PostFilter plugins put the
#: side effects of their decision (a preemption's evictions) instead of carrying them
#: out; the cycle runs them only when the whole group then fits.
DEFERRED_ACTIONS_KEY: Final = "ksched/deferred-actions"
#: CycleState key: present (True) when the attempt only explains what the scheduler
#: would do (``ksched explain``, shadow mode): a PostFilter plugin computes its answer as
#: usual but acts on nothing (no eviction, no API call). A plugin that changes the
#: cluster from PostFilter must honour it; DefaultPreemption writes the candidate it
#: would act on under ``DRY_RUN_KEY + "/" + its name``.
DRY_RUN_KEY: Final = "ksched/dry-run"


@dataclass(slots=True)
class NodeInfo:
    """A node as a Python Filter/Score plugin sees it: the parsed object and what the
    snapshot accounts on it (assumed pods included)."""

    name: str
    node: Node | None
    snapshot: Snapshot

    def requested(self, resource: str) -> int:
        """Sum of the requests of the pods on the node, in scheduler units."""
        return self.snapshot.requested(self.name, resource) or 0

    def allocatable(self, resource: str) -> int:
        return self.snapshot.allocatable(self.name, resource) or 0


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the attempt to these nodes (None: all nodes)."""

    node_names: frozenset[str] | None = None


@dataclass(slots=True)
class PostFilterResult:
    """The node nominated for the pod (preemption), or "" to clear a nomination."""

    nominated_node_name: str = ""


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, unique in its profile (upstream ``Plugin.Name``)."""

    @property
    def name(self) -> str: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """Gate a pod before it enters the active or backoff queue.

    Called on every add and update of a pending pod; any non-success status keeps it
    in unschedulablePods marked as gated, until an event this plugin registered (and
    its hint) lets it through. Must be cheap and must not call the API server.
    """

    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """Order the active queue: ``less(a, b)`` is true when ``a`` goes first.

    Exactly one QueueSort plugin per scheduler, identical in every profile. An
    optional ``sort_key(info)`` whose natural order matches ``less`` lets the queue use
    a heap key instead of pairwise comparisons.
    """

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """The cluster events that may make a pod this plugin rejected schedulable.

    Each :class:`ClusterEventWithHint` names a resource and actions (``NODE``,
    ``ActionType.ADD | ActionType.UPDATE_NODE_LABEL``...) and optionally a queueing
    hint ``hint(pod, old, new) -> QueueingHint``: ``QUEUE`` to retry the pod,
    ``QUEUE_SKIP`` when the change cannot help. A plugin that rejects pods and does
    not implement this is woken by every event (correct, but wasteful).
    """

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Once per scheduling attempt, before filtering.

    Compute what Filter needs from the pod once and write it into ``state`` (read it
    in Filter for every node). Return ``(result, status)``: a :class:`PreFilterResult`
    narrows the candidate nodes (``None``: all); status ``SKIP`` skips this plugin's
    Filter for the attempt; ``UNSCHEDULABLE``/``UNSCHEDULABLE_AND_UNRESOLVABLE``
    rejects the pod on every node.
    """

    def pre_filter(
        self, state: CycleState, pod: Pod
    ) -> tuple[PreFilterResult | None, Status | None]: ...


@runtime_checkable
class KernelPreFilterPlugin(Plugin, Protocol):
    """The Python PreFilter of a built-in plugin with Rust kernels (see the module
    docstring): per-pod lookups of API objects, handed to the kernels as a request.

    ``applies_to(pod)`` must be cheap and depend on the pod alone; when it is false the
    plugin does nothing for the pod at any extension point. ``kernel_pre_filter`` returns
    the request object, or None to skip the plugin for this attempt; it may raise (the
    attempt then fails with an error naming the plugin).
    """

    def applies_to(self, pod: Pod) -> bool: ...

    def kernel_pre_filter(self, state: CycleState, pod: Pod) -> object | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Whether the pod fits ``node``; ``None`` means it does.

    Return ``UNSCHEDULABLE`` (may fit once something changes) or
    ``UNSCHEDULABLE_AND_UNRESOLVABLE`` (preemption cannot help) with a reason; the
    reasons of all nodes are counted into the pod's FailedScheduling message. Python
    Filter plugins see only nodes that passed every built-in filter. Called once per
    candidate node: keep per-pod work in PreFilter.
    """

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Called only when no node fits, with every node's filter status (preemption).

    Return ``(result, status)``; a success status with a :class:`PostFilterResult`
    nominates a node for the pod. PostFilter plugins run in order until one succeeds.
    """

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Once per attempt, with the feasible nodes, before scoring.

    Compute per-pod scoring state into ``state``. ``SKIP`` skips this plugin's Score
    for the attempt; any other non-success status fails the attempt with an error.
    """

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Rank a feasible node: an integer, 0-100 after normalization.

    The profile's weight multiplies it before it is added to the built-in plugins'
    total. Implement :class:`ScoreExtensions` (``normalize_score``) when raw scores are
    not already in ``[MIN_NODE_SCORE, MAX_NODE_SCORE]``. Raise on error.
    """

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int: ...


@runtime_checkable
class ScoreExtensions(Plugin, Protocol):
    """Rewrite this plugin's scores of all nodes in place (e.g. scale to 0-100)."""

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Claim plugin-side state for the chosen node before the pod is bound.

    The pod is already assumed in the cache. If this or any later step fails, every
    Reserve plugin's ``unreserve`` runs in reverse order; ``unreserve`` must be
    idempotent and cannot fail.
    """

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Approve, reject or delay the binding: ``(status, timeout_seconds)``.

    ``WAIT`` parks the pod (see :class:`WaitingPod`) until every waiting plugin allows
    it, one rejects it, or its timeout (at most 15 minutes) rejects it.
    """

    def permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """Work before binding, in the binding cycle (a coroutine: may await the API).

    A failure unreserves and forgets the pod and sends it back to the queue.

    Optional: ``pre_bind_pre_flight(state, pod, node) -> Status | None`` (Skip: no
    work, the PreBind does not run) and ``pre_bind_parallel = True`` (upstream's
    ``PreBindPreFlightResult.AllowParallel``: consecutive such plugins run concurrently).
    """

    def pre_bind(self, state: CycleState, pod: Pod, node: str) -> Awaitable[Status | None]: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Bind the pod to the node (a coroutine). Bind plugins run in order until one
    does not return ``SKIP``; DefaultBinder POSTs the Binding."""

    def bind(self, state: CycleState, pod: Pod, node: str) -> Awaitable[Status | None]: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """Informational, after a successful bind (clean up what PreBind/Reserve kept)."""

    def post_bind(self, state: CycleState, pod: Pod, node: str) -> None: ...


class WaitingPod(Protocol):
    """A pod parked at Permit. ``allow``/``reject`` may be called from anywhere."""

    @property
    def pod(self) -> Pod: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class NodePod(Protocol):
    """A pod accounted on a node (bound, or assumed while its binding is in flight)."""

    @property
    def pod(self) -> Pod: ...

    @property
    def compiled(self) -> CompiledPod: ...

    @property
    def assumed(self) -> bool: ...


class Handle(Protocol):
    """What the scheduler gives plugins (upstream ``framework.Handle``).

    Out-of-tree plugins receive it in their factory and may keep it; it is usable from
    the moment the scheduler exists (``setup`` and every extension point).
    """

    @property
    def api(self) -> ClusterAPI:
        """The cluster API (list, watch, bind, events, pod status, deletion, leases)."""
        ...

    @property
    def snapshot(self) -> Snapshot:
        """The node snapshot the current cycle schedules against (read-only)."""
        ...

    def node_info(self, name: str) -> NodeInfo:
        """The node ``name`` as Filter/Score plugins see it."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]: ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the pod waiting at Permit; false when no such pod waits."""
        ...

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pending pods to activeQ (upstream ``PodActivator``)."""
        ...

    def nominated_pods_for_node(self, node: str) -> list[Pod]: ...

    def nominated_nodes(self) -> Collection[str]:
        """The nodes that have pods nominated to them."""
        ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    def framework(self, scheduler_name: str) -> Framework | None:
        """The framework of the profile that handles ``scheduler_name``."""
        ...

    def pods_on_node(self, node: str) -> Collection[NodePod]:
        """The pods the cache accounts on ``node`` (upstream ``NodeInfo.Pods``)."""
        ...

    def node_generation(self, node: str) -> int:
        """A number that changes whenever ``node``, its pods or the pods nominated to
        it change."""
        ...

    def node_generations(self) -> Mapping[str, int]:
        """:meth:`node_generation` of every node (0 when absent), read-only."""
        ...

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The latest object of a pod from the informer (upstream's pod lister)."""
        ...

    def informer(self, kind: Kind) -> SharedInformer:
        """The shared informer of ``kind`` (PersistentVolumeClaims, ResourceSlices...,
        :mod:`ksched.backend.shared_informers`): its ``store`` and ``get(ns, name)``
        read the objects as last seen, ``add_handler`` adds change handlers. Ask for it
        in ``setup``; the scheduler lists it before nodes and pods."""
        ...

    def shared(self, key: str, factory: Callable[[], T]) -> T:
        """An object shared by the plugins of every profile of this scheduler (e.g. the
        storage columns several volume plugins read), made by ``factory`` on the first
        request for ``key``. Ask in ``setup``."""
        ...

    @property
    def pod_group_states(self) -> PodGroupStates:
        """The runtime state of every scheduling.k8s.io PodGroup (tracked with the
        GenericWorkload gate on; upstream ``PodGroupManager.PodGroupStates``)."""
        ...

    def add_pod_handler(
        self,
        *,
        on_add: Callable[[dict[str, Any]], None] | None = None,
        on_update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        on_delete: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Call these with the raw objects of every pod change the scheduler's pod
        informer sees, after the scheduler's own handling (upstream: a plugin adds event
        handlers to the shared pod informer). Add them in ``setup``."""
        ...

    @property
    def feature_gates(self) -> FeatureGates:
        """The feature gates that change scheduling."""
        ...

    def pod_disruption_budgets(self) -> Collection[dict[str, Any]]:
        """Every ``policy/v1`` PodDisruptionBudget, as the informer holds them."""
        ...

    def record_event(
        self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str
    ) -> None:
        """An event about ``pod``, sent in the background."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run API work in the background; shutdown waits for it."""
        ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured scheduler extenders, in order; empty when there are none
        (upstream ``Handle.Extenders``). See :mod:`ksched.framework.extender`."""
        ...


@dataclass(slots=True)
class PluginSet:
    """Python plugins of a profile by extension point, in configured order."""

    pre_enqueue: list[Any] = field(default_factory=list)
    queue_sort: list[Any] = field(default_factory=list)
    kernel_pre_filter: list[Any] = field(default_factory=list)
    pre_filter: list[Any] = field(default_factory=list)
    filter: list[Any] = field(default_factory=list)
    post_filter: list[Any] = field(default_factory=list)
    pre_score: list[Any] = field(default_factory=list)
    score: list[Any] = field(default_factory=list)
    reserve: list[Any] = field(default_factory=list)
    permit: list[Any] = field(default_factory=list)
    pre_bind: list[Any] = field(default_factory=list)
    bind: list[Any] = field(default_factory=list)
    post_bind: list[Any] = field(default_factory=list)
