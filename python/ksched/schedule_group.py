"""The pod group scheduling cycle (upstream ``schedule_one_podgroup.go``): every member
of a group is tried on one snapshot, and the group goes to binding all together or
not at all.

When the loop pops a pod that belongs to a group (a ``scheduling.k8s.io/v1alpha2``
PodGroup named by ``spec.schedulingGroup`` with the GenericWorkload gate on, or a
scheduler-plugins PodGroup named by the ``scheduling.x-k8s.io/pod-group`` label in a
profile with Coscheduling), the group's *driver* (:class:`GroupDriver`) names its other
unscheduled members and the cycle pops them too (upstream ``PopSpecificPod``). Then:

1. **Framework and skips.** Every member must name the same ``schedulerName``; members
   being deleted or already assumed are dropped. Members are ordered by priority, then
   by when they first entered the queue (the driver may order otherwise).
2. **The algorithm** (upstream ``podGroupSchedulingDefaultAlgorithm``): members in
   order, each through the whole scheduling algorithm; a member that fits is assumed *in
   the snapshot* (and Reserve runs) so the next members count it, and Permit tells
   whether the group has enough members yet (GangScheduling: ``minCount`` scheduled).
   A member that fits nowhere runs PostFilter; when that nominates a node (preemption)
   the member is assumed there and requires preemption. Every tentative assumption is
   reverted at the end.

   Step by step, each member's cycle is the single-pod one: the volume plugins' Kernel
   PreFilter lookups ride on its compiled pod, DynamicResources' PreFilter and Filter
   (the allocator in the core's node loop) run for members with ResourceClaims, and
   their Reserve makes the member's PVs and devices in flight, so the next members see
   them taken (Unreserve on revert; PreBind in the binding cycle after submit). The
   group uses its members' :meth:`~ksched.framework.runtime.Framework.for_pod` view
   when they share it, else the profile's full framework.

   When the profile's Python plugins with work for the members are only the group's
   own plugin, the whole algorithm is **one core call** (``Snapshot.schedule_gang``):
   the members are placed in order with the same kernels, each counted before the next,
   and the Permit verdict is the count itself. A group in which some member fits
   nowhere, in a profile with PostFilter plugins, is run again step by step, so that
   each such member's PostFilter sees the members placed before it (as upstream).
3. **Preemption only for the whole group.** PostFilter plugins run in the algorithm in
   dry mode (``DEFERRED_ACTIONS_KEY``): a preemption picks its victims and nominates the
   member but evicts nothing. Only when the group then reaches its count are the
   evictions carried out, and every member goes back to the queue waiting for them
   (upstream's ``waitingOnPreemption``); a group that cannot reach its count takes no
   victims at all.
4. **Submit** (upstream ``submitPodGroupAlgorithmResult``): when the group is
   schedulable, each member that fit is assumed in the cache, reserved and permitted
   for real, and its binding cycle starts, tied to the others' (:class:`GroupBinding`);
   the members that did not fit fail as usual. Otherwise every member goes back: the
   ones that fit with the group's message ("pod group is unschedulable, ..."), the
   others with their own diagnosis.
5. The driver records the group's outcome (the ``scheduler_podgroup_*`` metrics and the
   PodGroup's ``PodGroupScheduled`` condition for scheduling.k8s.io groups).

Deliberate differences from upstream: pod group members are not sent to scheduler
extenders; PostFilter's evictions wait for the group's verdict (upstream evicts for each
member at once, even for a group that then does not fit); the core call advances the
sampling start index and the random tie-breaking, so a group run again step by step
draws fresh ties.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ksched.api.errors import quote
from ksched.api.pod import Pod
from ksched.api.workloads import PodGroup
from ksched.backend.cache.podgroups import PodGroupState, PodGroupStates
from ksched.backend.queue import QueuedPodInfo
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import ERR_NO_NODES_AVAILABLE, FitError
from ksched.framework.interface import DEFERRED_ACTIONS_KEY, NOMINATING_KEY
from ksched.framework.runtime import Framework, applies_to_pod
from ksched.framework.status import Code, Status
from ksched.metrics import PLUGIN_METRICS_SAMPLE_PERCENT
from ksched.plugins.topology_placement import (
    ERR_NO_PLACEMENTS,
    Placement,
    PlacementAssignments,
    generate_placements,
    score_placements,
)
from ksched.schedule_one import (
    GroupBinding,
    _begin,
    _place,
    _reserve_and_bind,
    _rust_fit_error,
    handle_scheduling_failure,
)

if TYPE_CHECKING:
    from ksched.scheduler import Scheduler

log = logging.getLogger(__name__)

__all__ = [
    "GROUP_UNSCHEDULABLE",
    "WAITING_ON_PREEMPTION",
    "GroupDriver",
    "GroupResult",
    "MemberResult",
    "PodGroupCycle",
    "schedule_group",
]

#: ``errPodGroupUnschedulable``.
GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"
#: Reason upstream's RunPermitPlugins appends to a Wait.
PERMIT_WAIT = "one or more plugins asked to wait and no plugin rejected pod"

_SAMPLE = PLUGIN_METRICS_SAMPLE_PERCENT / 100.0
_perf = time.perf_counter


class PodGroupCycle:
    """``CycleState.pod_group_cycle`` during a pod group cycle: the cycle's copy of the
    group's state (upstream's snapshot of the pod group states), where the members the
    cycle places are assumed, and the members placed so far."""

    __slots__ = ("_states", "group", "key", "placed", "placed_pods")

    def __init__(self, states: PodGroupStates, key: tuple[str, str] | None) -> None:
        self._states = states
        self.key = key
        live = states.get(*key) if key is not None else None
        self.group: PodGroupState | None = live.copy() if live is not None else None
        #: uids of the members placed so far (fitting or preempting), in order.
        self.placed: list[str] = []
        self.placed_pods: list[Pod] = []

    def state(self, namespace: str, name: str) -> PodGroupState | None:
        if (namespace, name) == self.key:
            return self.group
        return self._states.get(namespace, name)

    def error(self, namespace: str, name: str) -> str:
        return self._states.error(namespace, name)

    def assume(self, info: QueuedPodInfo) -> None:
        self.placed.append(info.uid)
        self.placed_pods.append(info.pod)
        if self.group is not None:
            self.group.assume_pod(info.pod)

    def forget(self, info: QueuedPodInfo) -> None:
        if info.uid in self.placed:
            self.placed.remove(info.uid)
            self.placed_pods = [p for p in self.placed_pods if p.uid != info.uid]
        if self.group is not None:
            self.group.forget_pod(info.uid)


class GroupDriver(Protocol):
    """What one kind of pod group tells the cycle (in-tree PodGroups, Coscheduling)."""

    #: ``namespace/name``, for messages and logs.
    key: str
    #: The group's key in the cache's pod group states (scheduling.k8s.io groups).
    cycle_key: tuple[str, str] | None
    #: The Python plugins that belong to the group and that the one-call placement
    #: stands in for (their per-member work is the count of members placed).
    plugin_names: frozenset[str]

    def member_uids(self) -> list[str] | Status:
        """The group's unscheduled members (the cycle pops those in the queue), or
        the error that fails the popped pod."""
        ...

    def order(self, infos: list[QueuedPodInfo]) -> list[QueuedPodInfo]: ...

    def need(self, fw: Framework) -> int | None:
        """For the one-call placement: how many members must fit; None when the
        group's Permit cannot be read as a count (the step-by-step algorithm runs)."""
        ...

    def wait_message(self) -> tuple[str, ...]:
        """The reasons of the Permit Wait of a member placed before the count."""
        ...

    def group_pre_filter(self, fw: Framework, first: QueuedPodInfo) -> Status | None:
        """Group-wide PreFilter checks the one-call placement stands in for (None:
        pass; a status: the members run step by step and each gets it)."""
        ...

    def placed_but_rejected(self, member: MemberResult) -> Status:
        """The status of a member that fit while the group did not."""
        ...

    def finish(self, fw: Framework, result: GroupResult, start: float) -> None:
        """Record the group's outcome (metrics, status)."""
        ...


@dataclass(slots=True)
class MemberResult:
    """One member's outcome in the algorithm (upstream ``algorithmResult``)."""

    info: QueuedPodInfo
    state: CycleState
    #: The node it fit (or, requiring preemption, was nominated to); None otherwise.
    node: str | None = None
    #: Its scheduling failure (None when it fit).
    status: Status | None = None
    #: PostFilter's verdict on its nomination (None: leave it; "": clear it).
    nominating: str | None = None
    requires_preemption: bool = False
    #: Its Permit status when it fit or requires preemption (None: success).
    permit: Status | None = None
    seconds: float = 0.0


@dataclass(slots=True)
class GroupResult:
    """The group's outcome (upstream ``podGroupAlgorithmResult``)."""

    members: list[MemberResult] = field(default_factory=list)
    #: None: schedulable; Unschedulable: back to the queue; Error: scheduler error.
    status: Status | None = None
    waiting_on_preemption: bool = False
    #: Evictions to carry out when the group waits on preemption.
    deferred: list[Callable[[], None]] = field(default_factory=list)
    #: Members bound / sent back by :func:`_submit` (for logs and metrics).
    scheduled: int = 0
    unschedulable: int = 0


def _unschedulable(*extra: str) -> Status:
    return Status(Code.UNSCHEDULABLE, GROUP_UNSCHEDULABLE, *extra)


# ---- the cycle ---------------------------------------------------------------------------


def schedule_group(sched: Scheduler, first: QueuedPodInfo, driver: GroupDriver) -> None:
    """Run one pod group cycle for the group of ``first`` (popped from the queue)."""
    queue = sched.queue
    uids = driver.member_uids()
    if isinstance(uids, Status):
        own = sched.frameworks.get(first.pod.scheduler_name)
        if own is None:
            queue.done(first.uid)
            return
        handle_scheduling_failure(sched, own, first, uids, _perf())
        return
    infos = [first]
    for uid in uids:
        if uid == first.uid:
            continue
        other = queue.pop_specific(uid)
        if other is not None:
            infos.append(other)
    start = _perf()
    names = [i.pod.scheduler_name for i in infos]
    mismatch = next((n for n in names if n != names[0]), None)
    if mismatch is not None:
        status = Status(
            Code.ERROR,
            "all pods in a single pod group should have the same .spec.schedulerName set, "
            f"got: {quote(mismatch)} and {quote(names[0])}",
        )
        for info in infos:
            fw_of = sched.frameworks.get(info.pod.scheduler_name)
            if fw_of is None:
                queue.done(info.uid)
            else:
                handle_scheduling_failure(sched, fw_of, info, status, start)
        return
    kept: list[QueuedPodInfo] = []
    views: list[Framework] = []
    for info in infos:
        found = _begin(sched, info)
        if found is not None:
            views.append(found)
            kept.append(info)
    if not kept:
        return
    # One framework for the whole group: the members' own view (Framework.for_pod, e.g.
    # without DynamicResources when no member names a ResourceClaim) when they share
    # it, else the profile's full framework, so every member meets every plugin that
    # has work for it.
    fw = views[0]
    if any(v is not fw for v in views):
        fw = sched.frameworks[kept[0].pod.scheduler_name]
    members = driver.order(kept)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("attempting to schedule pod group %s (%d pods)", driver.key, len(members))
    result = algorithm(sched, fw, driver, members)
    sched.metrics.pod_group_algorithm(_perf() - start)
    if result.waiting_on_preemption:
        for action in result.deferred:
            action()
    _submit(sched, fw, driver, members, result)
    driver.finish(fw, result, start)


def algorithm(
    sched: Scheduler, fw: Framework, driver: GroupDriver, members: Sequence[QueuedPodInfo]
) -> GroupResult:
    """The group's placement (upstream ``podGroupSchedulingAlgorithm``): with the
    TopologyAwareWorkloadScheduling gate, the best of its placements
    (:func:`_placement_algorithm`), else the default algorithm on every node. The
    snapshot is left as it was."""
    if sched.feature_gates.topology_aware_workload_scheduling and isinstance(driver, InTreeGroup):
        return _placement_algorithm(sched, fw, driver, members)
    return _default_algorithm(sched, fw, driver, members, None)


def _default_algorithm(
    sched: Scheduler,
    fw: Framework,
    driver: GroupDriver,
    members: Sequence[QueuedPodInfo],
    nodes: list[str] | None,
) -> GroupResult:
    """One core call when it decides the group, else member by member (see the module
    docstring); within ``nodes`` (a placement) when given."""
    need = driver.need(fw) if _one_call(fw, driver, members) else None
    if need is not None and driver.group_pre_filter(fw, members[0]) is None:
        result = _one_call_algorithm(sched, fw, driver, members, need, nodes)
        if result is not None:
            return result
    return _step_by_step(sched, fw, driver, members, nodes)


def _placement_algorithm(
    sched: Scheduler, fw: Framework, driver: InTreeGroup, members: Sequence[QueuedPodInfo]
) -> GroupResult:
    """Upstream ``podGroupSchedulingPlacementAlgorithm``: the placementGenerate plugin's
    placements (all nodes without one), the default algorithm within each, and the
    best of those that succeed by the placementScore plugins (ties at random)."""
    snapshot: Any = sched.cache.snapshot
    all_nodes: list[str] = snapshot.node_names()
    state = sched.cache.pod_groups.get(driver.namespace, driver.name)
    placements: list[Placement]
    if fw.profile.placement_generate:
        plugin = fw.profile.placement_generate[0]
        began = _perf()
        group = sched.pod_group_lister().get(driver.namespace, driver.name)
        generated = generate_placements(
            sched.handle,
            group,
            driver.namespace,
            driver.name,
            all_nodes,
            state.scheduled_pods() if state is not None else None,
        )
        if not isinstance(generated, Status) and not generated:
            generated = Status(Code.UNSCHEDULABLE, ERR_NO_PLACEMENTS, plugin=plugin)
        code = generated.code if isinstance(generated, Status) else Code.SUCCESS
        seconds = _perf() - began
        fw.observe("PlacementGenerate", code, seconds)
        fw.metrics.plugin_execution_duration.observe(
            (plugin, "PlacementGenerate", code.value), seconds
        )
        if isinstance(generated, Status):
            return GroupResult(status=generated)
        placements = generated
    else:
        placements = [Placement("", all_nodes)]
    first: GroupResult | None = None
    successes: list[tuple[Placement, GroupResult]] = []
    for placement in placements:
        within = None if len(placement.nodes) == len(all_nodes) else placement.nodes
        result = _default_algorithm(sched, fw, driver, members, within)
        if result.status is not None and result.status.code is Code.ERROR:
            return result
        if first is None:
            first = result
        if result.status is None or result.waiting_on_preemption:
            successes.append((placement, result))
    assert first is not None
    if not successes:
        first.status = Status(
            Code.UNSCHEDULABLE,
            f"0/{len(placements)} placements are available, first placement status: "
            f"{_as_error(first.status)}",
        )
        return first
    if len(successes) == 1:
        return successes[0][1]
    began = _perf()
    candidates = [
        PlacementAssignments(p, [m.info.pod for m in r.members if m.node is not None])
        for p, r in successes
    ]
    totals = score_placements(
        sched.handle,
        fw.profile.placement_score,
        fw.profile.plugin_args,
        state.scheduled_count if state is not None else 0,
        candidates,
    )
    code = totals.code if isinstance(totals, Status) else Code.SUCCESS
    fw.observe("PlacementScore", code, _perf() - began)
    if isinstance(totals, Status):
        return GroupResult(status=totals)
    draws = [random.getrandbits(63) for _ in totals]
    best = 0
    for i in range(1, len(totals)):
        if totals[i] > totals[best] or (totals[i] == totals[best] and draws[i] > draws[best]):
            best = i
    return successes[best][1]


def _as_error(status: Status | None) -> str:
    """``Status.AsError().Error()`` of a group status (its error is
    errPodGroupUnschedulable when it has one)."""
    if status is None:
        return ""
    if status.reasons and status.reasons[0] == GROUP_UNSCHEDULABLE:
        return GROUP_UNSCHEDULABLE
    return status.message


def _one_call(fw: Framework, driver: GroupDriver, members: Sequence[QueuedPodInfo]) -> bool:
    """Whether the profile's Python plugins between PreFilter and Permit are only the
    group's own (and no extender is configured). A plugin that says it has no work for
    any member (``applies_to``: the volume plugins' Kernel PreFilter, Reserve and
    PreBind for members without volumes) does not count; one that has work for some
    member makes the group run member by member, where it runs as in a single cycle."""
    if fw.extenders:
        return False
    p = fw.points
    own = driver.plugin_names
    if not all(pl.name in own for pl in (*p.pre_filter, *p.filter, *p.pre_score, *p.score)):
        return False
    return not any(
        pl.name not in own and any(applies_to_pod(pl, m.pod) for m in members)
        for pl in (*p.kernel_pre_filter, *p.reserve, *p.permit)
    )


def _one_call_algorithm(
    sched: Scheduler,
    fw: Framework,
    driver: GroupDriver,
    members: Sequence[QueuedPodInfo],
    need: int,
    nodes: list[str] | None = None,
) -> GroupResult | None:
    """The members placed by one core call; None when a member fit nowhere and the
    profile has PostFilter plugins (the step-by-step algorithm runs them)."""
    began = _perf()
    snapshot: Any = sched.cache.snapshot
    gang = snapshot.schedule_gang([m.compiled for m in members], fw.profile.kernels, need, nodes)
    share = (_perf() - began) / len(members)
    if gang.placed < len(members) and fw.has_post_filter:
        return None
    for r in gang.results:
        fw.record_evaluations(r)
    result = GroupResult(status=_unschedulable())
    wait = driver.wait_message()
    placed = 0
    for info, r in zip(members, gang.results, strict=True):
        m = MemberResult(info, CycleState(record_plugin_metrics=random.random() < _SAMPLE))
        m.seconds = share
        fw.ok_filter.observe(share)
        if r.node is not None:
            placed += 1
            m.node = r.node
            if placed >= need:
                result.status = None
            else:
                m.permit = Status(Code.WAIT, *wait, PERMIT_WAIT)
        elif r.num_all_nodes == 0:
            m.status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE)
            m.nominating = ""
        else:
            fit = _rust_fit_error(r, m.state)
            m.status = Status(Code.UNSCHEDULABLE, fit.message, error=fit)
            m.nominating = ""
        result.members.append(m)
    return result


def _step_by_step(
    sched: Scheduler,
    fw: Framework,
    driver: GroupDriver,
    members: Sequence[QueuedPodInfo],
    nodes: list[str] | None = None,
) -> GroupResult:
    """Upstream's algorithm member by member, each tentatively assumed in the
    snapshot (Reserve included) and reverted at the end; within ``nodes`` when given."""
    cycle = PodGroupCycle(sched.cache.pod_groups, driver.cycle_key)
    result = GroupResult(status=_unschedulable())
    reverts: list[Callable[[], None]] = []
    requires_preemption = False
    try:
        for info in members:
            m, revert, deferred = _member(sched, fw, cycle, info, nodes)
            result.members.append(m)
            if m.status is not None and not m.requires_preemption:
                if m.status.is_rejected():
                    continue  # the group may still reach its count
                result.status = Status(
                    Code.ERROR,
                    f"failed to schedule other pod from a pod group: {_message(m.status)}",
                )
                result.waiting_on_preemption = False
                break
            assert revert is not None
            reverts.append(revert)
            result.deferred.extend(deferred)
            requires_preemption = requires_preemption or m.requires_preemption
            if m.permit is None:
                if requires_preemption:
                    result.status = _unschedulable(WAITING_ON_PREEMPTION)
                    result.waiting_on_preemption = True
                else:
                    result.status = None
    finally:
        for revert in reversed(reverts):
            revert()
    return result


def _message(status: Status) -> str:
    err = status.error
    return err.message if isinstance(err, FitError) else status.message


def _member(
    sched: Scheduler,
    fw: Framework,
    cycle: PodGroupCycle,
    info: QueuedPodInfo,
    nodes: list[str] | None = None,
) -> tuple[MemberResult, Callable[[], None] | None, list[Callable[[], None]]]:
    """One member through the algorithm (upstream ``podGroupPodSchedulingAlgorithm``):
    its result, the revert of its tentative assumption, and its deferred evictions."""
    began = _perf()
    state = CycleState(record_plugin_metrics=random.random() < _SAMPLE)
    state.pod_group_cycle = cycle
    deferred: list[Callable[[], None]] = []
    state.write(DEFERRED_ACTIONS_KEY, deferred)
    m = MemberResult(info, state)
    pod = info.pod
    placed: Any = None
    if nodes is not None and fw.python_placement:
        m.status = Status(
            Code.ERROR,
            "pod group placements are not supported with Python PreFilter, Filter "
            "or Score plugins in the profile",
        )
        return m, None, []
    base = info.compiled
    if fw.points.kernel_pre_filter:
        # The volume plugins' PreFilter lookups, as schedule_one runs them: the
        # attempt's kernel requests ride on the compiled pod for the Rust call.
        info.compiled, failed = fw.run_kernel_pre_filter(state, pod, base)
        if failed is not None:
            info.compiled = base
            m.status = failed
            m.nominating = ""
            m.seconds = _perf() - began
            return m, None, []
    try:
        if nodes is not None:
            snapshot: Any = sched.cache.snapshot
            placed = snapshot.schedule_gang([info.compiled], fw.profile.kernels, 1, nodes).results[
                0
            ]
        node, status, _ = _place(sched, fw, info, state, placed)
    finally:
        # The attempt's kernel requests are not kept with the queued pod.
        info.compiled = base
    fw.ok_filter.observe(_perf() - began)
    if node is None:
        assert status is not None
        m.status = status
        nominated = state.get(NOMINATING_KEY)
        # Without PostFilter plugins upstream clears the nomination; a PostFilter
        # that returned no result leaves it.
        m.nominating = nominated if fw.has_post_filter else ""
        if not nominated:
            m.seconds = _perf() - began
            return m, None, []
        # Preemption nominated a node: the next members see this one there.
        node = nominated
        m.requires_preemption = True
    m.node = node
    snapshot = sched.cache.snapshot
    cache = sched.cache
    own_nomination = pod.uid in sched.queue.nominator.by_uid
    if own_nomination:
        snapshot.clear_nominated(pod.uid)
    snapshot.assume(info.compiled, node)
    cache.touch(node)
    cycle.assume(info)
    reserved = False

    def revert() -> None:
        if reserved:
            fw.run_unreserve(state, pod, node)
        snapshot.remove_pod(pod.uid)
        cache.touch(node)
        cycle.forget(info)
        if own_nomination:
            nomination = sched.queue.nominator.by_uid.get(pod.uid)
            if nomination is not None:
                snapshot.set_nominated(info.compiled, nomination.node)

    if fw.points.reserve:
        rs = fw.run_reserve(state, pod, node)
        reserved = True
        if rs is not None:
            revert()
            m.node = None
            m.requires_preemption = False
            m.nominating = ""
            m.status = _one_node_rejection(rs) if rs.is_rejected() else rs
            m.seconds = _perf() - began
            return m, None, []
    if fw.points.permit:
        ps = fw.run_permit(state, pod, node, park=False)
        if ps is not None and ps.code is not Code.WAIT:
            revert()
            m.node = None
            m.requires_preemption = False
            m.nominating = ""
            m.status = _one_node_rejection(ps) if ps.is_rejected() else ps
            m.seconds = _perf() - began
            return m, None, []
        m.permit = ps
    m.seconds = _perf() - began
    return m, revert, deferred


def _one_node_rejection(s: Status) -> Status:
    """A Reserve or Permit rejection as upstream reports it: a FitError on one node."""
    pending = s.code is Code.PENDING
    fit = FitError(
        1,
        {s.message: 1},
        unschedulable_plugins=frozenset() if pending else frozenset((s.plugin,)),
        pending_plugins=frozenset((s.plugin,)) if pending else frozenset(),
    )
    return Status(s.code, fit.message, plugin=s.plugin, error=fit)


def _submit(
    sched: Scheduler,
    fw: Framework,
    driver: GroupDriver,
    members: Sequence[QueuedPodInfo],
    result: GroupResult,
) -> None:
    """Upstream ``submitPodGroupAlgorithmResult``: bind the members of a schedulable
    group, send the others (or everyone) back to the queue."""
    status = result.status
    by_uid = {m.info.uid: m for m in result.members}
    now = _perf()
    binding: GroupBinding | None = None
    if status is None:
        binding = GroupBinding(driver.key, [m.info.uid for m in result.members if m.status is None])
    for info in members:
        m = by_uid.get(info.uid)
        start = now - (m.seconds if m is not None else 0.0)
        if status is not None and status.code is Code.ERROR:
            own = m.status if m is not None and m.status is not None else None
            use = own if own is not None and own.code is Code.ERROR else status
            handle_scheduling_failure(sched, fw, info, use, start, nominating="")
            result.unschedulable += 1
            continue
        if m is None:
            handle_scheduling_failure(sched, fw, info, status or _unschedulable(), start)
            result.unschedulable += 1
            continue
        if m.status is None:
            assert m.node is not None
            if status is None:
                m.state.pod_group_cycle = None
                m.state.delete(DEFERRED_ACTIONS_KEY)
                if _reserve_and_bind(sched, fw, info, m.state, m.node, start, binding):
                    result.scheduled += 1
                else:
                    result.unschedulable += 1
            elif result.waiting_on_preemption:
                handle_scheduling_failure(sched, fw, info, status, start, nominating=m.node)
                result.unschedulable += 1
            else:
                handle_scheduling_failure(
                    sched, fw, info, driver.placed_but_rejected(m), start, nominating=""
                )
                result.unschedulable += 1
            continue
        if m.requires_preemption and not result.waiting_on_preemption:
            handle_scheduling_failure(
                sched, fw, info, driver.placed_but_rejected(m), start, nominating=""
            )
        else:
            handle_scheduling_failure(sched, fw, info, m.status, start, nominating=m.nominating)
        result.unschedulable += 1


# ---- scheduling.k8s.io/v1alpha2 PodGroups --------------------------------------------------

#: ``schedulingapi.PodGroupScheduled`` and its reasons.
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class InTreeGroup:
    """The driver of a ``scheduling.k8s.io/v1alpha2`` PodGroup (GenericWorkload)."""

    plugin_names = frozenset({"GangScheduling"})

    def __init__(self, sched: Scheduler, namespace: str, name: str) -> None:
        self._sched = sched
        self.namespace = namespace
        self.name = name
        self.key = f"{namespace}/{name}"
        self.cycle_key: tuple[str, str] | None = (namespace, name)

    def _state(self) -> PodGroupState | None:
        return self._sched.cache.pod_groups.get(self.namespace, self.name)

    def member_uids(self) -> list[str] | Status:
        state = self._state()
        if state is None:
            err = self._sched.cache.pod_groups.error(self.namespace, self.name)
            return Status(Code.ERROR, f"error while retrieving pod group state: {err}")
        return [p.uid for p in state.unscheduled_pods()]

    def order(self, infos: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        return sorted(
            infos,
            key=lambda i: (
                -i.pod.priority,
                i.initial_attempt_timestamp
                if i.initial_attempt_timestamp is not None
                else float("-inf"),
            ),
        )

    def need(self, fw: Framework) -> int | None:
        if not any(p.name == "GangScheduling" for p in fw.points.permit):
            return 1
        group: PodGroup | None = self._sched.pod_group_lister().get(self.namespace, self.name)
        state = self._state()
        if group is None or state is None:
            return None  # Permit fails: the step-by-step algorithm reports it
        if group.min_count is None:
            return 1
        return max(1, group.min_count - state.scheduled_count)

    def wait_message(self) -> tuple[str, ...]:
        from ksched.plugins.gang_scheduling import MSG_WAITING_SCHEDULED

        return (MSG_WAITING_SCHEDULED,)

    def group_pre_filter(self, fw: Framework, first: QueuedPodInfo) -> Status | None:
        return None

    def placed_but_rejected(self, member: MemberResult) -> Status:
        permit = member.permit.message if member.permit is not None else ""
        return _unschedulable(permit)

    def finish(self, fw: Framework, result: GroupResult, start: float) -> None:
        seconds = _perf() - start
        status = result.status
        metrics = self._sched.metrics
        if status is None:
            condition = {"status": "True", "reason": REASON_SCHEDULED, "message": ""}
            metrics.pod_group_attempt("scheduled", fw.name, seconds)
            log.debug(
                "successfully scheduled pod group %s: %d scheduled, %d unschedulable",
                self.key,
                result.scheduled,
                result.unschedulable,
            )
        elif status.is_rejected():
            condition = {
                "status": "False",
                "reason": REASON_UNSCHEDULABLE,
                "message": status.message,
            }
            if result.waiting_on_preemption:
                metrics.pod_group_attempt("waiting_on_preemption", fw.name, seconds)
            else:
                metrics.pod_group_attempt("unschedulable", fw.name, seconds)
        else:
            condition = {
                "status": "False",
                "reason": REASON_SCHEDULER_ERROR,
                "message": status.message,
            }
            log.error("error scheduling pod group %s: %s", self.key, status.message)
            metrics.pod_group_attempt("error", fw.name, seconds)
        self._update_condition(condition)

    def _update_condition(self, condition: dict[str, Any]) -> None:
        """Upstream ``updatePodGroupCondition``: set the PodGroupScheduled condition
        (never back to False once True), patched in the background."""
        sched = self._sched
        group = sched.pod_group_lister().get(self.namespace, self.name)
        if group is None:
            log.warning("cannot update the status of pod group %s: not found", self.key)
            return
        existing = group.condition(POD_GROUP_SCHEDULED)
        if (
            existing is not None
            and existing.get("status") == "True"
            and condition["status"] != "True"
        ):
            return
        new = {"type": POD_GROUP_SCHEDULED, **condition, "observedGeneration": group.generation}
        if existing is not None:
            if (
                all(existing.get(k, "") == new[k] for k in ("status", "reason", "message"))
                and (existing.get("observedGeneration") or 0) == group.generation
            ):
                return  # apimeta.SetStatusCondition: nothing changes
            changed_status = existing.get("status") != new["status"]
            ltt = existing.get("lastTransitionTime")
            new["lastTransitionTime"] = _rfc3339(time.time()) if changed_status or not ltt else ltt
        else:
            new["lastTransitionTime"] = _rfc3339(time.time())
        conditions = [dict(c) for c in group.conditions if c.get("type") != POD_GROUP_SCHEDULED]
        at = next(
            (i for i, c in enumerate(group.conditions) if c.get("type") == POD_GROUP_SCHEDULED),
            len(conditions),
        )
        conditions.insert(at, new)
        patch = {"status": {"conditions": conditions}}
        # Coalesced per group, as pod status patches are (schedule_one.send_pod_status):
        # a group retried many times a second sends the latest condition only.
        pending = sched.pod_group_patches
        key = self.key
        if key in pending:
            pending[key] = patch
            return
        pending[key] = patch

        async def _patch() -> None:
            from ksched.cluster import APIError

            try:
                while True:
                    sent = pending[key]
                    try:
                        await sched.api.patch_object(
                            kind="podgroups",
                            namespace=self.namespace,
                            name=self.name,
                            patch=sent,
                            patch_type="merge",
                            subresource="status",
                        )
                    except (APIError, OSError) as exc:
                        log.warning("failed to update the status of pod group %s: %s", key, exc)
                    if pending.get(key) == sent:
                        return
            finally:
                pending.pop(key, None)

        sched.background(_patch())
