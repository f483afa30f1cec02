"""One scheduling cycle, and the binding cycle it spawns (upstream ``schedule_one.go``).

Scheduling cycle (synchronous, on the event loop):

1. skip pods that are being deleted ("skip schedule deleting pod: ns/name") or are
   already assumed/bound;
2. place the pod: the built-in PreFilter/Filter/Score run as one call into Rust; a
   profile with Python PreFilter/Filter/PreScore/Score plugins runs them around that
   call (:func:`_place_with_python_plugins`); PostFilter runs when no node fits;
3. assume the pod on the chosen node in the cache (its resources count from now on),
   run Reserve, then Permit. Any failure unreserves (reverse order), forgets the pod
   and hands it back to the queue with the diagnosis;
4. spawn the binding cycle. When Permit did not ask to wait, the pod's in-flight window
   ends here (upstream calls ``Done`` right after WaitOnPermit, which is then a no-op).

With scheduler extenders (:mod:`ksched.framework.extender`), a pod some extender is
interested in takes :func:`schedule_one_async` instead: the same filters, then the
extenders' filter in configured order, then the plugins' and extenders' scores
(upstream ``findNodesThatPassExtenders`` and ``prioritizeNodes``), each HTTP call
awaited. Before assuming, it checks that the pod is still pending and that a chosen node
that changed meanwhile still fits. Any other pod keeps the synchronous path above.

Binding cycle: WaitOnPermit, PreBind, Bind, PostBind. An interested
extender with a ``bindVerb`` binds instead of the Bind plugins. Bindings go out through
the binding queue (:mod:`ksched.backend.bind_queue`): in priority order, a bounded number
at a time; a cycle with nothing but its Bind to do is a job of the queue's workers, any
other runs as an asyncio task that takes a queue slot around its Bind. On success the
pod stays assumed until the informer's event for the bound pod confirms it; on failure
it is unreserved, forgotten (an ``AssignedPod/Delete`` event for the resources it held)
and requeued through backoff.

Failures record a ``FailedScheduling`` event and set the pod's PodScheduled condition to
False (reason ``Unschedulable`` for rejections, ``SchedulerError`` for errors) with the
same message; the condition patch is skipped when the pod already carries it, as
upstream's ``UpdatePodCondition`` does.

Per-pod Python work is kept small: no logging formatting unless enabled, metrics are
plain counters (:mod:`ksched.metrics`), and the success path allocates one cycle state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ksched import logs
from ksched.api.pod import Pod
from ksched.backend.bind_queue import BindQueue
from ksched.backend.queue import QueuedPodInfo
from ksched.backend.queue.cluster_event import EVENT_ASSIGNED_POD_DELETE
from ksched.cluster import APIError
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import (
    ERR_NO_NODES_AVAILABLE,
    FitError,
    NodeStatuses,
    RawNodeStatus,
)
from ksched.framework.extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY, Extender
from ksched.framework.interface import (
    COMPILED_POD_KEY,
    CORE_FILTER_KEY,
    MAX_NODE_SCORE,
    NOMINATING_KEY,
    NodeInfo,
)
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.metrics import PLUGIN_METRICS_SAMPLE_PERCENT
from ksched.plugins.node_affinity import NAME as NODE_AFFINITY

if TYPE_CHECKING:
    from ksched.scheduler import Scheduler

log = logging.getLogger(__name__)
klog = logs.get_logger(__name__)
_v2 = klog.v(2)
_v3 = klog.v(3)

__all__ = [
    "Binder",
    "GroupBinding",
    "SchedulingStats",
    "needs_extenders",
    "record_failure",
    "schedule_one",
    "schedule_one_async",
    "send_pod_status",
]

_SAMPLE = PLUGIN_METRICS_SAMPLE_PERCENT / 100.0
_random = random.random
_perf = time.perf_counter
#: PreBindPreFlight's verdict when no PreBind plugin runs one; a binding cycle only
#: tells it from None, so one object serves every cycle.
_SKIP = Status(Code.SKIP)


class SchedulingStats:
    """Counters and attempt latencies (nanoseconds) for reports and benchmarks."""

    __slots__ = ("attempt_ns", "bind_errors", "bound", "errors", "scheduled", "unschedulable")

    def __init__(self) -> None:
        self.attempt_ns = array("q")
        self.scheduled = 0
        self.unschedulable = 0
        self.errors = 0
        self.bound = 0
        self.bind_errors = 0


# ---- placement ---------------------------------------------------------------------------


def _rust_fit_error(result: Any, state: CycleState) -> FitError:
    """The FitError of a Rust result without a feasible node. A Rust PreFilter that
    rejected the pod is noted as ``state.pre_filter_rejector``: the built-in PreFilters
    come before every Python one in the profile's order, so none of those ran upstream."""
    if result.pre_filter_msg is not None:
        plugins = result.unschedulable_plugins()
        state.pre_filter_rejector = plugins[-1] if plugins else ""
    return FitError(
        result.num_all_nodes,
        result.reason_counts(),
        unschedulable_plugins=frozenset(result.unschedulable_plugins()),
        pre_filter_msg=result.pre_filter_msg or "",
    )


def _place(
    sched: Scheduler, fw: Framework, info: QueuedPodInfo, state: CycleState, placed: Any = None
) -> tuple[str | None, Status | None, Any]:
    """The chosen node, or the failure status; the third value is the Rust result.
    ``placed`` is this pod's result from a batched Rust call, when there was one."""
    if fw.python_placement:
        return _place_with_python_plugins(sched, fw, info, state)
    if placed is None:
        # The core adds the attempt's plugin evaluations to the framework's counts.
        result = sched.cache.snapshot.schedule(
            info.compiled, fw.profile.kernels, counts=fw.eval_counts
        )
    else:
        result = placed  # counted by the batched call
    node = result.node
    if node is not None:
        return node, None, result
    error = _kernel_error(result)
    if error is not None:
        return None, error, result
    if result.num_all_nodes == 0:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE), result
    fit = _rust_fit_error(result, state)
    return None, _post_filter(fw, state, info, fit, NodeStatuses.of_result(result)), result


def _kernel_error(result: Any) -> Status | None:
    """The error of a Rust PreFilter or Filter that did not just reject nodes (the
    attempt fails with it, as upstream's, without PostFilter)."""
    if result.pre_filter_error and result.pre_filter_msg is not None:
        plugins = result.unschedulable_plugins()
        plugin = plugins[0] if plugins else ""
        return Status(
            Code.ERROR,
            f'running PreFilter plugin "{plugin}": {result.pre_filter_msg}',
            plugin=plugin,
        )
    if result.filter_error is not None:
        plugin, message = result.filter_error
        return Status(Code.ERROR, f'running "{plugin}" filter plugin: {message}', plugin=plugin)
    return None


#: PostFilter runs put off by the asynchronous cycle, which awaits them itself.
_Deferred = list[tuple[FitError, NodeStatuses]]


def _post_filter(
    fw: Framework,
    state: CycleState,
    info: QueuedPodInfo,
    fit: FitError,
    statuses: NodeStatuses,
    deferred: _Deferred | None = None,
) -> Status:
    if deferred is not None:
        deferred.append((fit, statuses))
    elif fw.has_post_filter and not state.skip_post_filter:
        state.write(COMPILED_POD_KEY, info.compiled)
        res, s = fw.run_post_filter(state, info.pod, statuses)
        fit.post_filter_msg = s.message
        state.write(NOMINATING_KEY, None if res is None else res.nominated_node_name)
    return Status(Code.UNSCHEDULABLE, fit.message, error=fit)


def _nominating(state: CycleState) -> str | None:
    """The nomination a failed scheduling cycle hands the failure handler (upstream's
    NominatingInfo): PostFilter's when it ran (None: PostFilter returned no result, the
    nomination stays), else "" (``clearNominatedNode``: no PostFilter plugin, no node
    at all, an error)."""
    return state.get(NOMINATING_KEY) if NOMINATING_KEY in state else ""


async def _post_filter_async(
    fw: Framework, state: CycleState, info: QueuedPodInfo, fit: FitError, statuses: NodeStatuses
) -> Status:
    """:func:`_post_filter` for the asynchronous cycle: a PostFilter plugin may await
    (DefaultPreemption calling the extenders' preempt verb)."""
    if fw.has_post_filter:
        state.write(COMPILED_POD_KEY, info.compiled)
        res, s = await fw.run_post_filter_async(state, info.pod, statuses)
        fit.post_filter_msg = s.message
        state.write(NOMINATING_KEY, None if res is None else res.nominated_node_name)
    return Status(Code.UNSCHEDULABLE, fit.message, error=fit)


class _Filtered:
    """The nodes that passed the Rust and the Python filters, with their Rust totals;
    the nodes Python filters rejected; the Rust result."""

    __slots__ = ("nodes", "rejected", "result", "totals")

    def __init__(
        self,
        nodes: list[NodeInfo],
        totals: dict[str, int],
        rejected: dict[str, Status],
        result: Any,
    ) -> None:
        self.nodes = nodes
        self.totals = totals
        self.rejected = rejected
        self.result = result


def _place_with_python_plugins(
    sched: Scheduler, fw: Framework, info: QueuedPodInfo, state: CycleState
) -> tuple[str | None, Status | None, Any]:
    """Python PreFilter, then the Rust call (keeping every scored node), then Python
    Filter on the nodes that passed the Rust filters, PreScore and Score added to the
    Rust totals; the best total wins, ties broken at random.

    Deviation from upstream: the Rust call samples ``percentageOfNodesToScore`` over
    the built-in filters only, so Python filters see the sampled feasible set.
    """
    filtered, status, result = _run_filters(sched, fw, info, state)
    if filtered is None:
        return None, status, result
    if not filtered.nodes:
        return None, _python_fit_error(sched, fw, state, info, filtered), result
    nodes = filtered.nodes
    if len(nodes) == 1:
        return nodes[0].name, None, result
    totals = filtered.totals
    pod = info.pod
    ps = fw.run_pre_score(state, pod, nodes)
    if ps is not None:
        return None, ps, result
    extra, ss = fw.run_score(state, pod, nodes)
    if ss is not None:
        return None, ss, result
    best = max(totals[n] + extra[n] for n in totals)
    winners = [n for n in totals if totals[n] + extra[n] == best]
    return random.choice(winners), None, result


def _python_fit_error(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    info: QueuedPodInfo,
    filtered: _Filtered,
    deferred: _Deferred | None = None,
) -> Status:
    """Python filters rejected every node the Rust filters let through: the diagnosis
    has both the Rust rejections (asked for again: the successful Rust call kept none)
    and the Python ones, as upstream's NodeToStatus."""
    raw = _rust_rejections(sched, fw, info, state, filtered.result)
    plugins = _rejectors(raw) | set(filtered.result.pre_filter_plugins)
    for n, st in filtered.rejected.items():
        raw.append((n, st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE, st.plugin, list(st.reasons)))
        plugins.add(st.plugin)
    counts: Counter[str] = Counter()
    for _, _, _, reasons in raw:
        for reason in reasons:
            counts[reason] += 1
    fit = FitError(
        filtered.result.num_all_nodes, counts, unschedulable_plugins=frozenset(plugins - {""})
    )
    return _post_filter(fw, state, info, fit, NodeStatuses(raw), deferred)


def _rejectors(raw: list[RawNodeStatus]) -> set[str]:
    """The plugins behind the built-in filters' rejections: a status that names none is
    a node NodeAffinity's PreFilter result left out (upstream counts the narrowing plugin
    among the unschedulable ones although the status names none)."""
    return {plugin or NODE_AFFINITY for _, _, plugin, _ in raw}


def _rust_rejections(
    sched: Scheduler, fw: Framework, info: QueuedPodInfo, state: CycleState, result: Any
) -> list[RawNodeStatus]:
    """The nodes the built-in filters rejected in an attempt that found some feasible
    nodes (a successful Rust call keeps no rejections, so they are computed again)."""
    raw: list[RawNodeStatus] = []
    if result.evaluated_nodes <= result.feasible_nodes:
        return raw
    rust_feasible = {n for n, _ in result.scores} or {result.node}
    for row in sched.cache.snapshot.explain(
        info.compiled, fw.profile.kernels, dra=state.get(CORE_FILTER_KEY)
    ):
        st = row["status"]
        if st is None or row["node"] in rust_feasible:
            continue
        raw.append(
            (
                row["node"],
                st["code"] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE.value,
                st["plugin"],
                list(st["reasons"]),
            )
        )
    return raw


def _pre_filter_result_fit_error(
    fw: Framework,
    state: CycleState,
    info: QueuedPodInfo,
    names: frozenset[str],
    result: Any,
    deferred: _Deferred | None,
) -> Status:
    """No node fits a pod whose Python PreFilter narrowed the attempt to ``names``: the
    other nodes are UnschedulableAndUnresolvable (as upstream's absent-nodes status, so
    preemption leaves them alone; like it, their status names no plugin, while the
    plugins that narrowed the attempt count among the unschedulable ones), the named
    ones keep the filters' rejections."""
    plugins = state.pre_filter_node_plugins
    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]"
    raw: list[RawNodeStatus] = []
    for node, unresolvable, plugin, reasons in result.statuses:
        if node in names:
            raw.append((node, unresolvable, plugin, reasons))
        else:
            raw.append((node, True, "", [msg]))
    counts: Counter[str] = Counter()
    for _, _, _, reasons in raw:
        for reason in reasons:
            counts[reason] += 1
    unschedulable = frozenset(plugin for _, _, plugin, _ in raw if plugin) | frozenset(plugins)
    fit = FitError(result.num_all_nodes, counts, unschedulable_plugins=unschedulable)
    absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)
    return _post_filter(fw, state, info, fit, NodeStatuses(raw, absent), deferred)


def _built_in_pre_filter_failure(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    state: CycleState,
    deferred: _Deferred | None,
) -> tuple[Status, Any] | None:
    """When a Python PreFilter rejected the pod: the failure of a built-in (Rust)
    PreFilter that rejects it too, else None. The built-in PreFilters come before every
    Python one in the profile's order (v1.36's default profile appends DynamicResources
    after the volume plugins, PodTopologySpread and InterPodAffinity), and upstream's
    RunPreFilterPlugins stops at the first UnschedulableAndUnresolvable status or error:
    theirs is the cycle's status, and the Python PreFilter did not run upstream
    (``state.pre_filter_rejector`` names the built-in one)."""
    result = sched.cache.snapshot.schedule(info.compiled, fw.profile.kernels, True)
    fw.record_evaluations(result, state=state, pre_filter_only=True)
    if result.pre_filter_msg is None:
        return None
    error = _kernel_error(result)
    if error is not None:
        return error, result
    fit = _rust_fit_error(result, state)
    return _post_filter(fw, state, info, fit, NodeStatuses.of_result(result), deferred), result


def _run_filters(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    state: CycleState,
    deferred: _Deferred | None = None,
    use_nomination: bool = True,
) -> tuple[_Filtered | None, Status | None, Any]:
    """PreFilter and Filter, Rust and Python: the feasible nodes (possibly none, when
    Python filters rejected them all), or the failure status (PostFilter has run, or is
    put in ``deferred``). ``use_nomination=False`` skips trying the pod's nominated node
    alone first."""
    pod = info.pod
    # Without nodes upstream fails before PreFilter: no evaluation is counted.
    names, s = fw.run_pre_filter(state, pod, count=sched.cache.num_nodes > 0)
    if s is not None:
        if not s.is_rejected():
            return None, s, None
        early = _built_in_pre_filter_failure(sched, fw, info, state, deferred)
        if early is not None:
            return None, early[0], early[1]
        fit = FitError(
            sched.cache.num_nodes,
            {},
            unschedulable_plugins=frozenset((s.plugin,)) if s.plugin else frozenset(),
            pre_filter_msg=s.message,
        )
        # Upstream gives every node the PreFilter's status.
        return None, _post_filter(fw, state, info, fit, NodeStatuses((), s), deferred), None
    snapshot = sched.cache.snapshot
    core_filter = state.get(CORE_FILTER_KEY)
    result = snapshot.schedule(
        info.compiled, fw.profile.kernels, True, use_nomination=use_nomination, dra=core_filter
    )
    # A DynamicResources Filter error ends the attempt before Score upstream.
    fw.record_evaluations(result, state=state, scored=core_filter is None or not core_filter.error)
    nominated = pod.nominated_node_name
    if use_nomination and nominated and result.node == nominated and result.evaluated_nodes == 1:
        # The core placed the pod on its nominated node alone (evaluateNominatedNode):
        # that holds only if the Python filters pass there too, else every node counts.
        ni = NodeInfo(nominated, sched.cache.nodes.get(nominated), snapshot)
        if fw.run_filter(state, pod, ni) is None:
            return _Filtered([ni], {nominated: 0}, {}, result), None, result
        result = snapshot.schedule(
            info.compiled, fw.profile.kernels, True, use_nomination=False, dra=core_filter
        )
        fw.record_evaluations(result, scored=core_filter is None or not core_filter.error)
    if core_filter is not None and core_filter.error:
        # A Filter error aborts the attempt (upstream RunFilterPlugins).
        msg = f'running "DynamicResources" filter plugin: {core_filter.error}'
        return None, Status(Code.ERROR, msg, plugin="DynamicResources"), result
    if result.node is None:
        error = _kernel_error(result)
        if error is not None:
            return None, error, result
        if result.num_all_nodes == 0:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE), result
        if names is not None:
            return (
                None,
                _pre_filter_result_fit_error(fw, state, info, names, result, deferred),
                result,
            )
        fit = _rust_fit_error(result, state)
        statuses = NodeStatuses.of_result(result)
        return None, _post_filter(fw, state, info, fit, statuses, deferred), result
    candidates: list[tuple[str, int]] = list(result.scores) or [(result.node, 0)]
    if names is not None:
        candidates = [(n, t) for n, t in candidates if n in names]
    nodes: list[NodeInfo] = []
    totals: dict[str, int] = {}
    rejected: dict[str, Status] = {}
    for name, total in candidates:
        ni = NodeInfo(name, sched.cache.nodes.get(name), snapshot)
        fs = fw.run_filter(state, pod, ni)
        if fs is None:
            nodes.append(ni)
            totals[name] = total
        elif fs.code is Code.ERROR:
            return None, fs, result
        else:
            rejected[name] = fs
    return _Filtered(nodes, totals, rejected, result), None, result


# ---- extenders ----------------------------------------------------------------------------

#: ``MaxNodeScore / MaxExtenderPriority``: extender scores (0-10) to the plugins' 0-100.
_EXTENDER_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY


def needs_extenders(sched: Scheduler, info: QueuedPodInfo) -> bool:
    """Whether an extender is interested in the pod: its cycle then goes through
    :func:`schedule_one_async` (HTTP calls); any other pod takes the synchronous path,
    with the same outcome as upstream (uninterested extenders are not called)."""
    fw = sched.frameworks.get(info.pod.scheduler_name)
    if fw is None or not fw.extenders:
        return False
    pod = info.pod
    return any(ext.is_interested(pod) for ext in fw.extenders)


async def _place_with_extenders(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    state: CycleState,
    start: float,
    deferred: _Deferred,
) -> tuple[str | None, Status | None, int]:
    """Upstream ``schedulePod`` with extenders: the filters (Rust, then Python), the
    extenders' filter in order on the survivors, then, with more than one node left,
    the plugins' scores plus every interested extender's weighted score; the best
    total wins, ties broken at random. The third value is the snapshot generation the
    filters saw (the extender calls are awaited: the world may move meanwhile).

    Deviations from upstream: built-in scores are normalized over the nodes that passed
    the built-in filters, before extenders (and Python filters) drop some; when no node
    is left, nodes beyond the ``percentageOfNodesToScore`` sample report their filter
    rejection instead of being absent from the diagnosis.
    """
    pod = info.pod
    filtered, status, _ = _run_filters(sched, fw, info, state, deferred)
    generation = sched.cache.snapshot.generation
    # Extender calls are not part of the Filter extension point (as upstream).
    fw.ok_filter.observe(_perf() - start)
    if filtered is None:
        return None, status, generation
    by_name = {ni.name: ni for ni in filtered.nodes}
    feasible, failed, error = await _extenders_filter(fw, pod, by_name)
    if error is not None:
        return None, error, generation
    if not feasible and _nominated_only(pod, filtered):
        # Upstream evaluateNominatedNode: the extenders turned the nominated node down,
        # so every node is evaluated.
        filtered, status, _ = _run_filters(sched, fw, info, state, deferred, use_nomination=False)
        generation = sched.cache.snapshot.generation
        if filtered is None:
            return None, status, generation
        by_name = {ni.name: ni for ni in filtered.nodes}
        feasible, failed, error = await _extenders_filter(fw, pod, by_name)
        if error is not None:
            return None, error, generation
    if not feasible:
        if not filtered.nodes:
            return None, _python_fit_error(sched, fw, state, info, filtered, deferred), generation
        fit_status = _extenders_fit_error(sched, fw, info, state, filtered, failed, deferred)
        return None, fit_status, generation
    if len(feasible) == 1:
        return feasible[0], None, generation
    nodes = [by_name[n] for n in feasible]
    objects = [n.node for n in nodes if n.node is not None]
    pending = [
        (ext, asyncio.ensure_future(ext.prioritize(pod, objects)))
        for ext in fw.extenders
        if ext.is_prioritizer() and ext.is_interested(pod)
    ]
    totals = {n: filtered.totals[n] for n in feasible}
    try:
        if fw.points.pre_score or fw.points.score:
            ps = fw.run_pre_score(state, pod, nodes)
            if ps is not None:
                return None, ps, generation
            extra, ss = fw.run_score(state, pod, nodes)
            if ss is not None:
                return None, ss, generation
            for n in totals:
                totals[n] += extra[n]
        for ext, task in pending:
            try:
                scores = await task
            except Exception as exc:
                # Upstream ignores prioritize errors of every extender.
                klog.v(5).info(
                    "Extender prioritize failed", extender=ext.name(), pod=logs.kobj(pod), err=exc
                )
                continue
            scale = ext.weight() * _EXTENDER_SCALE
            for host, score in scores:
                if host in totals:
                    totals[host] += score * scale
    finally:
        for _, task in pending:
            task.cancel()
    best = max(totals.values())
    return random.choice([n for n, t in totals.items() if t == best]), None, generation


def _nominated_only(pod: Any, filtered: _Filtered) -> bool:
    """Whether the filters placed the pod on its nominated node alone."""
    nominated = pod.nominated_node_name
    return bool(nominated) and (
        filtered.result.evaluated_nodes == 1 and [ni.name for ni in filtered.nodes] == [nominated]
    )


async def _extenders_filter(
    fw: Framework, pod: Any, by_name: dict[str, NodeInfo]
) -> tuple[list[str], dict[str, tuple[bool, str]], Status | None]:
    """Upstream ``findNodesThatPassExtenders``: each interested filtering extender in
    order narrows the nodes; the failed ones get the extender's message
    (FailedAndUnresolvableNodes win over FailedNodes). The third value is the error of
    a failing extender that is not ignorable."""
    feasible = list(by_name)
    failed: dict[str, tuple[bool, str]] = {}
    for ext in fw.extenders:
        if not feasible:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            answer = await ext.filter(pod, [n for n in (by_name[f].node for f in feasible) if n])
        except Exception as exc:
            if ext.is_ignorable():
                klog.info(
                    "Skipping extender as it returned error and has ignorable flag set",
                    extender=ext.name(),
                    err=exc,
                )
                continue
            return [], failed, Status(Code.ERROR, str(exc))
        for name, msg in answer.failed_and_unresolvable.items():
            failed[name] = (True, msg)
        for name, msg in answer.failed.items():
            if name not in answer.failed_and_unresolvable:
                failed[name] = (False, msg)
        feasible = answer.nodes
    return feasible, failed, None


def _extenders_fit_error(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    state: CycleState,
    filtered: _Filtered,
    failed: dict[str, tuple[bool, str]],
    deferred: _Deferred,
) -> Status:
    """Extenders rejected every node the filters let through: upstream's FitError over
    the filters' rejections and the extenders' (``Extender`` among the unschedulable
    plugins, so any cluster event retries the pod), then PostFilter."""
    result = filtered.result
    raw = _rust_rejections(sched, fw, info, state, result)
    plugins: set[str] = {EXTENDER_NAME, *_rejectors(raw), *result.pre_filter_plugins}
    for name, st in filtered.rejected.items():
        raw.append((name, st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE, st.plugin, st.reasons))
        plugins.add(st.plugin)
    for name, (unresolvable, msg) in failed.items():
        raw.append((name, unresolvable, "", [msg]))
    counts: Counter[str] = Counter()
    for _, _, _, reasons in raw:
        for reason in reasons:
            counts[reason] += 1
    fit = FitError(result.num_all_nodes, counts, unschedulable_plugins=frozenset(plugins - {""}))
    return _post_filter(fw, state, info, fit, NodeStatuses(raw), deferred)


def _gone_or_bound(sched: Scheduler, pod: Pod) -> bool:
    """Whether the pod was deleted, replaced or bound since its cycle began."""
    current = sched.pod_informer.store.get(pod.key)
    if current is None:
        return True
    meta = current.get("metadata") or {}
    return bool(
        (meta.get("uid") or pod.uid) != pod.uid
        or meta.get("deletionTimestamp")
        or (current.get("spec") or {}).get("nodeName")
        or sched.cache.has_pod(pod.uid)
    )


async def schedule_one_async(sched: Scheduler, info: QueuedPodInfo) -> None:
    """:func:`schedule_one` for a pod some extender is interested in: the extender
    calls are awaited, so informers, bindings and lease renewals go on meanwhile while
    no other pod is scheduled. Before assuming, the cycle checks the world it decided
    on: a pod deleted or bound meanwhile is dropped; a chosen node that changed is
    checked again against the filters, and a node gone or no longer fitting fails the
    attempt with an error (the pod is retried after backoff)."""
    fw = _begin(sched, info)
    if fw is None:
        return
    pod = info.pod
    start = _perf()
    state = CycleState(record_plugin_metrics=_random() < _SAMPLE)
    base = info.compiled
    if fw.points.kernel_pre_filter:
        info.compiled, failed = fw.run_kernel_pre_filter(state, pod, base)
        if failed is not None:
            info.compiled = base
            handle_scheduling_failure(sched, fw, info, failed, start)
            return
    try:
        await _schedule_async(sched, fw, info, state, start)
    finally:
        info.compiled = base


async def _schedule_async(
    sched: Scheduler, fw: Framework, info: QueuedPodInfo, state: CycleState, start: float
) -> None:
    pod = info.pod
    deferred: _Deferred = []
    node, status, generation = await _place_with_extenders(sched, fw, info, state, start, deferred)
    if _gone_or_bound(sched, pod):
        # Deleted, replaced or bound while the extenders answered: no preemption for it.
        sched.queue.done(pod.uid)
        return
    if deferred:
        # No node fits: PostFilter (preemption), which may await extenders too.
        fit, statuses = deferred[0]
        status = await _post_filter_async(fw, state, info, fit, statuses)
        if _gone_or_bound(sched, pod):
            sched.queue.done(pod.uid)
            return
    if node is not None and sched.cache.snapshot.generation != generation:
        reason = _still_fits(sched, fw, info, state, node)
        if reason is not None:
            status = Status(
                Code.ERROR, f'node "{node}" changed while the extenders were called: {reason}'
            )
            node = None
    if node is None:
        assert status is not None
        handle_scheduling_failure(sched, fw, info, status, start, nominating=_nominating(state))
        return
    _reserve_and_bind(sched, fw, info, state, node, start)


def _still_fits(
    sched: Scheduler, fw: Framework, info: QueuedPodInfo, state: CycleState, node: str
) -> str | None:
    """Why ``node`` no longer takes the pod (None: it still does)."""
    if node not in sched.cache.nodes:
        return "it was deleted"
    verdict = sched.cache.snapshot.filter_node(info.compiled, fw.profile.kernels, node)
    if verdict is not None:
        return ", ".join(verdict[2]) or f"rejected by {verdict[1]}"
    if fw.points.filter:
        s = fw.run_filter(
            state, info.pod, NodeInfo(node, sched.cache.nodes[node], sched.cache.snapshot)
        )
        if s is not None:
            return s.message
    return None


# ---- the scheduling cycle ------------------------------------------------------------------


def skip_pod(sched: Scheduler, info: QueuedPodInfo) -> bool:
    """Whether the cycle would skip ``info`` at once (no profile, being deleted, already
    assumed or bound)."""
    pod = info.pod
    return (
        pod.scheduler_name not in sched.frameworks
        or pod.deletion_timestamp is not None
        or sched.cache.has_pod(pod.uid)
    )


def _begin(
    sched: Scheduler, info: QueuedPodInfo, view: Framework | None = None
) -> Framework | None:
    """The pod's framework (``view`` when the caller knows it), or None when the cycle
    skips the pod (no profile, being deleted, already assumed or bound; the queue is
    told)."""
    pod = info.pod
    queue = sched.queue
    fw = sched.frameworks.get(pod.scheduler_name)
    if fw is None:
        queue.done(pod.uid)
        return None
    if pod.deletion_timestamp is not None:
        sched.recorder.eventf(
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            f"skip schedule deleting pod: {pod.namespace}/{pod.name}",
            fw.name,
        )
        queue.done(pod.uid)
        return None
    if sched.cache.has_pod(pod.uid):
        # Already assumed or bound: skip, as upstream's skipPodSchedule does.
        queue.done(pod.uid)
        return None
    if _v3.enabled:
        ref = logs.kobj(pod)
        klog.with_values(pod=ref).v(3).info("Attempting to schedule pod", pod=ref)
    return fw.for_pod(pod) if view is None else view


def schedule_one(
    sched: Scheduler,
    info: QueuedPodInfo,
    placed: Any = None,
    placed_seconds: float = 0.0,
    batch: _Batch | None = None,
) -> bool:
    """Run one scheduling cycle for ``info`` (popped from the queue). ``placed`` is the
    pod's result from :func:`schedule_batch`'s Rust call and ``placed_seconds`` its even
    share of that call's duration, counted in the attempt's latency; ``batch`` what that
    batch's pods share. False when no node fit the pod (the cycle failed in scheduling,
    PostFilter has run)."""
    fw = _begin(sched, info, None if batch is None else batch.view)
    if fw is None:
        return True
    start = _perf() - placed_seconds
    state = CycleState(record_plugin_metrics=_random() < _SAMPLE)
    base = info.compiled
    if placed is None and fw.points.kernel_pre_filter:
        info.compiled, failed = fw.run_kernel_pre_filter(state, info.pod, base)
        if failed is not None:
            sched.metrics.algorithm_series.observe(_perf() - start)
            handle_scheduling_failure(sched, fw, info, failed, start)
            return False
    try:
        node, status, result = _place(sched, fw, info, state, placed)
    finally:
        # The attempt's kernel requests are not kept with the queued pod.
        info.compiled = base
    sched.metrics.algorithm_series.observe(_perf() - start)
    if result is not None:
        state.evaluated_nodes = result.evaluated_nodes
        state.feasible_nodes = result.feasible_nodes
    if node is None:
        assert status is not None
        fw.ok_filter.observe(_perf() - start)
        handle_scheduling_failure(sched, fw, info, status, start, nominating=_nominating(state))
        return False
    elapsed = _perf() - start
    # The Rust call covers PreFilter, Filter, PreScore and Score; until it reports each
    # phase, its whole duration is recorded under Filter.
    fw.ok_filter.observe(elapsed)
    _reserve_and_bind(sched, fw, info, state, node, start, batch=batch)
    return True


def _reserve_and_bind(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    state: CycleState,
    node: str,
    start: float,
    group: GroupBinding | None = None,
    batch: _Batch | None = None,
) -> bool:
    """The rest of a cycle that chose ``node``: assume, Reserve, Permit, then spawn the
    binding cycle (or unreserve, forget and report the failure; False then). ``group``
    ties the binding to the other members of the pod's group; a pod of ``batch`` has no
    Reserve or Permit plugin to run (:func:`batchable`)."""
    pod = info.pod
    queue = sched.queue
    cache = sched.cache
    cache.assume(pod, info.compiled, node)
    if pod.uid in queue.nominator.by_uid:
        queue.nominator.delete(pod.uid)
    if batch is None and fw.needs_reserve_or_permit(pod):
        s = fw.run_reserve(state, pod, node)
        if s is None:
            s = fw.run_permit(state, pod, node)
            if s is not None and s.code is Code.WAIT:
                s = None
                waiting = True
            else:
                waiting = False
        if s is not None:
            fw.run_unreserve(state, pod, node)
            cache.forget(pod.uid)
            if s.is_rejected():
                fit = FitError(
                    1,
                    {s.message: 1},
                    unschedulable_plugins=frozenset((s.plugin,))
                    if s.code is not Code.PENDING
                    else frozenset(),
                    pending_plugins=frozenset((s.plugin,))
                    if s.code is Code.PENDING
                    else frozenset(),
                )
                s = Status(s.code, fit.message, plugin=s.plugin, error=fit)
            if group is not None:
                group.drop(pod.uid)
            handle_scheduling_failure(sched, fw, info, s, start)
            return False
    else:
        # No plugin at Reserve or Permit: record the (empty) extension points.
        fw.ok_reserve.counts[0] += 1
        fw.ok_permit.counts[0] += 1
        waiting = False

    sched.stats.attempt_ns.append(int((_perf() - start) * 1e9))
    sched.stats.scheduled += 1
    if not waiting:
        queue.done(pod.uid)
    sched.binder.spawn(
        info, node, fw, state, start, waiting, group, None if batch is None else batch.pre_bind
    )
    return True


def batchable(sched: Scheduler, info: QueuedPodInfo) -> bool:
    """Whether ``info``'s profile lets pods be placed by one batched Rust call with the
    same outcome as one by one: no Python plugin that runs between placement and the
    next pod (PreFilter/Filter/Score, Reserve, Permit), and no extenders."""
    fw = sched.frameworks.get(info.pod.scheduler_name)
    if fw is None:
        return False
    fw = fw.for_pod(info.pod)
    return not (
        fw.python_placement
        or fw.extenders
        or fw.needs_reserve_or_permit(info.pod)
        or fw.needs_kernel_pre_filter(info.pod)
    )


class _Batch:
    """What the pods of one :func:`schedule_batch` call share: their scheduling
    signature covers everything the plugins' ``ignores_pod`` and ``applies_to`` read
    (namespace, labels, requests, volumes; a pod with ResourceClaims has none), so the
    framework view (``Framework.for_pod``) and whether a PreBind plugin applies are
    worked out once, for the first pod, as :func:`batchable` already decides for all of
    them that no Reserve or Permit plugin applies."""

    __slots__ = ("pre_bind", "view")

    def __init__(self, view: Framework, pre_bind: bool) -> None:
        self.view = view
        self.pre_bind = pre_bind


def schedule_batch(
    sched: Scheduler, infos: list[QueuedPodInfo], left: list[QueuedPodInfo] | None = None
) -> bool:
    """Place pods of one scheduling signature with one Rust call, then finish each
    pod's cycle in order exactly as :func:`schedule_one` would. False when some pod
    fit no node.

    With ``left``, a member whose preemption nominated a node ends the batch: the
    members after it are put in ``left``, unscheduled, for the caller to schedule one
    by one once the nomination is written (:attr:`Scheduler.nomination_writes`), each
    with a cycle of its own on the snapshot as it then is (as upstream's next cycles
    would be: its failure handler writes the nomination before the next cycle).

    Contract of ``Snapshot.schedule_batch(pods, profile) -> list[ScheduleResult]``: it
    places the pods in order as successive ``schedule`` calls would (same sampling start
    index and random tie-breaks), accounting each placed pod on its node before placing
    the next, and returns with the snapshot as it found it (pod accounting restored;
    the start index and random state advanced as by the N calls). Each placed pod is
    then assumed through the cache here, so the end state equals the one-by-one path.
    """
    if len(infos) == 1:
        fw1 = sched.frameworks.get(infos[0].pod.scheduler_name)
        if fw1 is not None:
            sched.metrics.batch_attempts.inc((fw1.name, "no_hint"))
        return schedule_one(sched, infos[0])
    fw = sched.frameworks[infos[0].pod.scheduler_name]
    snapshot: Any = sched.cache.snapshot
    began = _perf()
    # The pods share a signature, so one framework view (``for_pod``) places them all:
    # the core adds their plugin evaluations to its counts.
    view = fw.for_pod(infos[0].pod)
    batch = _Batch(view, view.needs_pre_bind(infos[0].pod))
    results = snapshot.schedule_batch(
        [i.compiled for i in infos], fw.profile.kernels, view.eval_counts
    )
    share = (_perf() - began) / len(infos)
    all_placed = True
    used = len(infos)
    for k, (info, result) in enumerate(zip(infos, results, strict=True)):
        all_placed = schedule_one(sched, info, result, share, batch) and all_placed
        if left is not None and sched.nomination_writes and k + 1 < len(infos):
            left.extend(infos[k + 1 :])
            used = k + 1
            break
    attempts = sched.metrics.batch_attempts
    attempts.inc((fw.name, "no_hint"))
    if used > 1:
        attempts.inc((fw.name, "hint_used"), float(used - 1))
    return all_placed


# ---- failures --------------------------------------------------------------------------


def handle_scheduling_failure(
    sched: Scheduler,
    fw: Framework,
    info: QueuedPodInfo,
    status: Status,
    start: float,
    *,
    nominating: str | None = "",
) -> None:
    """Record the failure (metrics, event, condition) and requeue the pod.

    ``nominating`` is the nomination to apply (upstream ``NominatingInfo``): None leaves
    it as it is, a node name nominates the pod there (the nominator now,
    ``status.nominatedNodeName`` through the status patch), "" clears it. Upstream
    clears it on every failure (``clearNominatedNode``) but a PostFilter's, which hands
    over its own result (:func:`_nominating`)."""
    pod = info.pod
    rejected = status.is_rejected()
    sched.metrics.attempt("unschedulable" if rejected else "error", fw.name, _perf() - start)
    if rejected:
        sched.stats.unschedulable += 1
    else:
        sched.stats.errors += 1
    err = status.error
    ref = logs.kobj(pod)
    if isinstance(err, FitError):
        info.unschedulable_plugins = err.unschedulable_plugins
        info.pending_plugins = err.pending_plugins
        message = err.message
        if _v2.enabled:
            klog.with_values(pod=ref).v(2).info(
                "Unable to schedule pod; no fit; waiting", pod=ref, err=message
            )
    else:
        info.unschedulable_plugins = frozenset()
        info.pending_plugins = frozenset()
        message = status.message
        if message == ERR_NO_NODES_AVAILABLE:
            if _v2.enabled:
                klog.with_values(pod=ref).v(2).info(
                    "Unable to schedule pod; no nodes are registered to the cluster; waiting",
                    pod=ref,
                )
        elif not rejected:
            klog.with_values(pod=ref).error("Error scheduling pod; retrying", err=message, pod=ref)
    current = sched.pod_informer.store.get(pod.key)
    if current is None:
        klog.with_values(pod=ref).info(
            "Pod doesn't exist in informer cache",
            pod=ref,
            err=f'pod "{pod.name}" not found',
        )
        sched.queue.done(pod.uid)
        return
    node_name = (current.get("spec") or {}).get("nodeName")
    if node_name:
        # Bound by someone else: nothing to retry.
        klog.with_values(pod=ref).info(
            "Pod has been assigned to node. Abort adding it back to queue.",
            pod=ref,
            node=node_name,
        )
        sched.queue.done(pod.uid)
        return
    sched.queue.add_unschedulable_if_not_present(info)
    if nominating is not None:
        # Upstream AddNominatedPod: the next cycles see the nomination before the
        # informer reports the patched pod.
        sched.queue.nominator.nominate(pod, nominating)
    record_failure(
        sched,
        info,
        message,
        fw.name,
        reason="Unschedulable" if rejected else "SchedulerError",
        current=current,
        nominating=nominating,
    )
    if nominating:
        # A preemption nominated the pod: the scheduling loop starts the next cycle
        # once the nomination is written (upstream's synchronous updatePod).
        task = sched.pod_status_tasks.get(pod.key)
        if task is not None and not task.done():
            writes = sched.nomination_writes
            if len(writes) >= 64:  # no loop drains them (cycles driven by hand)
                writes[:] = [t for t in writes if not t.done()]
            writes.append(task)


def _now_rfc3339() -> str:
    """``metav1.Now()`` as the API serializes it (seconds, UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record_failure(
    sched: Scheduler,
    info: QueuedPodInfo,
    message: str,
    profile_name: str,
    *,
    reason: str = "Unschedulable",
    current: dict[str, Any] | None = None,
    nominating: str | None = None,
) -> None:
    """FailedScheduling event and the PodScheduled=False condition, in the background.
    ``current`` is the pod's latest object (informer store); ``nominating`` (not None)
    sets ``status.nominatedNodeName`` ("" clears it), as upstream's ``updatePod``.

    The condition is upstream's: ``observedGeneration`` is the pod's
    ``metadata.generation`` (``CalculatePodConditionObservedGeneration``, the
    PodObservedGenerationTracking gate is GA) and ``lastTransitionTime`` is now, or the
    existing condition's when its status does not change (``UpdatePodCondition``, which
    also decides whether anything changed)."""
    pod = info.pod
    meta = (current or {}).get("metadata") or {}
    rv = meta.get("resourceVersion") or pod.resource_version
    sched.recorder.failed_scheduling(pod, message, profile_name, rv)
    status_obj = (current or {}).get("status") or {}
    existing = next(
        (
            c
            for c in status_obj.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "PodScheduled"
        ),
        None,
    )
    condition: dict[str, Any] = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
    }
    generation = meta.get("generation")
    if isinstance(generation, int) and generation:
        condition["observedGeneration"] = generation
    if existing is not None and existing.get("status") == "False":
        transition = existing.get("lastTransitionTime")
    else:
        transition = _now_rfc3339()
    if transition:
        condition["lastTransitionTime"] = transition
    condition_changed = existing is None or any(
        existing.get(k) != condition.get(k)
        for k in (
            "status",
            "reason",
            "message",
            "observedGeneration",
            "lastTransitionTime",
            "lastProbeTime",
        )
    )
    nomination_changed = (
        nominating is not None and (status_obj.get("nominatedNodeName") or "") != nominating
    )
    if not condition_changed and not nomination_changed:
        return
    patch_status: dict[str, Any] = {}
    if condition_changed:
        patch_status["conditions"] = [condition]
    if nomination_changed:
        patch_status["nominatedNodeName"] = nominating or None
    send_pod_status(sched, pod, {"status": patch_status})


def send_pod_status(sched: Scheduler, pod: Pod, patch: dict[str, Any]) -> None:
    """Patch the pod's status in the background, coalesced per pod: while a patch of the
    pod is in flight, a newer one waits and only the latest is sent after it (a pod
    retried many times a second, e.g. a pod group's member popped from backoffQ, would
    otherwise queue one API call per attempt; upstream's API dispatcher coalesces
    them the same way)."""
    pending = sched.status_patches
    key = pod.key
    if key in pending:
        pending[key] = patch
        return
    pending[key] = patch

    async def _patch() -> None:
        try:
            while True:
                sent = pending[key]
                try:
                    await sched.api.patch_pod_status(
                        namespace=pod.namespace, name=pod.name, patch=sent
                    )
                except (APIError, OSError) as exc:
                    klog.error("Error updating pod", err=exc, pod=logs.kobj(pod))
                if pending.get(key) == sent:
                    return
        finally:
            pending.pop(key, None)

    _track_status_patch(sched, pod.key, sched.background(_patch()))


def _track_status_patch(sched: Scheduler, key: str, task: asyncio.Task[None]) -> None:
    """Remember ``task`` as the pod's status patch in flight until it ends."""
    tasks = sched.pod_status_tasks
    tasks[key] = task

    def _done(t: asyncio.Task[None]) -> None:
        if tasks.get(key) is t:
            del tasks[key]

    task.add_done_callback(_done)


async def _status_patch_settled(sched: Scheduler, key: str) -> None:
    """Wait for the status patch of the pod's failed attempt, if one is in flight.
    Upstream's failure handler patches the status synchronously (the
    SchedulerAsyncAPICalls gate is off in v1.36), before the pod can be tried again, so
    a later binding never overtakes it: the nomination a preemption set shows in the
    pod's history before its binding (the apiserver refuses nominatedNodeName on a
    bound pod)."""
    task = sched.pod_status_tasks.get(key)
    if task is not None and not task.done():
        await asyncio.wait({task})


# ---- the binding cycle ---------------------------------------------------------------------


async def _extenders_bind(
    extenders: Sequence[Extender], pod: Any, node: str
) -> tuple[bool, Status | None]:
    """Upstream ``extendersBinding``: the first extender that binds and is interested in
    the pod binds it (an ignorable one that fails passes the turn on). ``(False,
    None)`` when none did: the Bind plugins bind."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        try:
            await ext.bind(pod, node)
        except Exception as exc:
            if ext.is_ignorable():
                klog.info(
                    "Skipping extender in bind as it returned error and has ignorable flag set",
                    extender=ext.name(),
                    err=exc,
                )
                continue
            return True, Status(Code.ERROR, str(exc))
        return True, None
    return False, None


class GroupBinding:
    """The binding cycles of one pod group's members, tied together: no member sends
    its Bind until every member has passed WaitOnPermit and PreBind, and a member that
    fails before that point fails the members still waiting with it, which are then
    unreserved, forgotten and sent back together. Once the Binds are sent, a member
    whose Bind fails is retried alone (the API cannot unbind the others)."""

    __slots__ = ("_arrived", "_expected", "_ready", "failure", "key")

    def __init__(self, key: str, uids: Sequence[str]) -> None:
        self.key = key
        self._expected = set(uids)
        self._arrived: set[str] = set()
        self._ready = asyncio.Event()
        #: The member that failed before binding, and why ("" while none did).
        self.failure = ""

    def drop(self, uid: str) -> None:
        """A member left the group's binding before its binding cycle began (its
        Reserve or Permit failed): the others do not wait for it."""
        self._expected.discard(uid)
        self._check()

    def fail(self, uid: str, pod_key: str, message: str) -> None:
        self._expected.discard(uid)
        if not self.failure:
            self.failure = f"{pod_key}: {message}"
        self._ready.set()

    def _check(self) -> None:
        if self._expected <= self._arrived:
            self._ready.set()

    async def arrive(self, uid: str) -> bool:
        """The member passed PreBind; True once every member has (bind now), False when
        a member failed before binding."""
        self._arrived.add(uid)
        self._check()
        await self._ready.wait()
        return not self.failure


class Binder:
    """Runs binding cycles and tracks the ones in flight.

    A cycle that needs nothing but its Bind (no Permit wait, no PreBind plugin that
    applies to the pod, no pod group)
    is a job of the binding queue (:mod:`ksched.backend.bind_queue`): a bounded pool of
    workers runs such cycles in priority order, without a task per pod. Any other cycle
    runs as its own task and takes a slot of the same queue around its Bind, so every
    binding goes out in priority order and at most ``queue.workers`` are in flight. The
    scheduling loop stops taking pods while the queue's backlog reaches its run-ahead
    limit (:meth:`wait_for_room`)."""

    def __init__(self, sched: Scheduler, queue: BindQueue | None = None) -> None:
        self._sched = sched
        self._in_flight: set[asyncio.Task[None]] = set()
        self.queue = queue if queue is not None else BindQueue()
        #: Cycle tasks waiting for or holding a slot (counted in the queue's backlog).
        self._slots = 0

    def spawn(
        self,
        info: QueuedPodInfo,
        node: str,
        fw: Framework,
        state: CycleState,
        start: float,
        waiting: bool = False,
        group: GroupBinding | None = None,
        pre_bind: bool | None = None,
    ) -> None:
        """Start the binding cycle; ``pre_bind``: whether a PreBind plugin applies to
        the pod, when the caller knows (None: asked here)."""
        if (
            not waiting
            and group is None
            and not (fw.needs_pre_bind(info.pod) if pre_bind is None else pre_bind)
        ):
            self.queue.submit(
                info.pod.priority, self._bind, info, node, fw, state, start, False, None, True
            )
            return
        task = asyncio.get_running_loop().create_task(
            self._bind(info, node, fw, state, start, waiting, group)
        )
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    @property
    def in_flight(self) -> int:
        """Binding cycles not finished: queued jobs, running ones and cycle tasks (a
        task waiting for or holding a slot counts once)."""
        return len(self._in_flight) + self.queue.backlog - self._slots

    def room(self) -> int:
        """How many more pods the scheduling loop may decide before the bindings'
        backlog reaches the run-ahead limit."""
        return self.queue.room()

    async def wait_for_room(self) -> None:
        """Return once the backlog is below the limit (or :meth:`wake` is called)."""
        await self.queue.wait_for_room()

    def wake(self) -> None:
        self.queue.wake()

    async def _bind(
        self,
        info: QueuedPodInfo,
        node: str,
        fw: Framework,
        state: CycleState,
        start: float,
        waiting: bool,
        group: GroupBinding | None = None,
        job: bool = False,
    ) -> None:
        """The binding cycle. ``job``: a job of the binding queue, whose pod no PreBind
        plugin applies to (its PreBindPreFlight is Skip and its PreBind runs nothing:
        only their metrics are recorded), and that already holds a worker's slot."""
        sched = self._sched
        pod = info.pod
        if sched.pod_status_tasks:
            await _status_patch_settled(sched, pod.key)
        pre_flight: Status | None = _SKIP
        if job:
            if fw.points.pre_bind:
                fw.skip_pre_bind(state)
        elif fw.points.pre_bind:
            pre_flight = fw.run_pre_bind_pre_flights(state, pod, node)
            if pre_flight is not None and pre_flight.code is not Code.SKIP:
                if waiting:
                    wp = fw.waiting_pods.get(pod.uid)
                    if wp is not None:
                        wp.reject("", pre_flight.message)
                    await fw.wait_on_permit(pod)
                    sched.queue.done(pod.uid)
                self._failed(info, node, fw, state, start, pre_flight)
                return
        if (pre_flight is None or waiting) and pod.nominated_node_name != node:
            # NominatedNodeNameForExpectation: tell other components (the cluster
            # autoscaler) where the pod is about to be bound while PreBind or Permit work.
            await self._nominate(pod, node)
        if waiting:
            s = await fw.wait_on_permit(pod)
            if s is not None:
                if s.is_rejected():
                    fit = FitError(1, {s.message: 1}, unschedulable_plugins=frozenset((s.plugin,)))
                    s = Status(s.code, fit.message, plugin=s.plugin, error=fit)
                if group is not None:
                    group.fail(pod.uid, pod.key, s.message)
                self._failed(info, node, fw, state, start, s)
                return
            # Failures from here on cannot make the pod "unschedulable": stop
            # recording in-flight events for it.
            sched.queue.done(pod.uid)
        s = await fw.run_pre_bind(state, pod, node) if fw.points.pre_bind and not job else None
        if group is not None:
            if s is not None:
                group.fail(pod.uid, pod.key, s.message)
            elif not await group.arrive(pod.uid):
                s = Status(
                    Code.ERROR,
                    f"pod group {group.key}: member {group.failure} failed before binding",
                )
        if s is None:
            if not job and (waiting or group is not None or fw.needs_pre_bind(pod)):
                # Its own task: Bind in a slot of the binding queue, in priority order.
                self._slots += 1
                try:
                    async with self.queue.slot(pod.priority):
                        s = await self._run_bind(fw, state, pod, node)
                finally:
                    self._slots -= 1
            else:
                s = await (
                    self._run_bind(fw, state, pod, node)
                    if fw.extenders
                    else fw.run_bind(state, pod, node)
                )
        if s is not None:
            sched.stats.bind_errors += 1
            ref = logs.kobj(pod)
            klog.with_values(pod=ref).v(1).info("Failed to bind pod", pod=ref)
            self._failed(info, node, fw, state, start, s)
            return
        sched.stats.bound += 1
        if _v2.enabled:
            ref = logs.kobj(pod)
            klog.with_values(pod=ref).v(2).info(
                "Successfully bound pod to node",
                pod=ref,
                node=node,
                evaluatedNodes=state.evaluated_nodes,
                feasibleNodes=state.feasible_nodes,
            )
        metrics = sched.metrics
        fw.record_scheduled(_perf() - start)
        attempts = info.attempts
        metrics.attempts_series.observe(attempts)
        if info.initial_attempt_timestamp is not None:
            metrics.sli_series(attempts).observe(
                sched.queue.clock() - info.initial_attempt_timestamp
            )
        if info.flushed:
            metrics.pod_scheduled_after_flush.inc()
        sched.recorder.scheduled(pod, node, fw.name)
        if fw.points.post_bind:
            fw.run_post_bind(state, pod, node)

    @staticmethod
    async def _run_bind(fw: Framework, state: CycleState, pod: Pod, node: str) -> Status | None:
        """The interested binding extender, else the Bind plugins."""
        if fw.extenders:
            bound, s = await _extenders_bind(fw.extenders, pod, node)
            if bound:
                return s
        return await fw.run_bind(state, pod, node)

    async def _nominate(self, pod: Pod, node: str) -> None:
        try:
            await self._sched.api.patch_pod_status(
                namespace=pod.namespace,
                name=pod.name,
                patch={"status": {"nominatedNodeName": node}},
            )
        except (APIError, OSError) as exc:
            log.warning("could not set the nominated node of %s to %s: %s", pod.key, node, exc)

    def _failed(
        self,
        info: QueuedPodInfo,
        node: str,
        fw: Framework,
        state: CycleState,
        start: float,
        status: Status,
    ) -> None:
        """Upstream ``handleBindingCycleError``: unreserve, forget, wake the pods the
        freed resources may help, then the failure handler."""
        sched = self._sched
        pod = info.pod
        fw.run_unreserve(state, pod, node)
        was_assumed = sched.cache.is_assumed(pod.uid)
        sched.cache.forget(pod.uid)
        if status.code is Code.SKIP:
            status = Status(Code.ERROR, "no bind plugin bound the pod", plugin=status.plugin)
        if was_assumed:
            # The forgotten pod held resources on ``node``: report it as an assigned pod
            # deletion (not for the pod itself when it was rejected).
            held = dataclasses.replace(pod, node_name=node)
            if status.is_rejected():
                handle_scheduling_failure(sched, fw, info, status, start)
                sched.queue.move_all_to_active_or_backoff(
                    EVENT_ASSIGNED_POD_DELETE, held, None, lambda p: p.uid != pod.uid
                )
                return
            sched.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, held, None)
        handle_scheduling_failure(sched, fw, info, status, start)

    def cancel(self) -> None:
        """Cancel every binding cycle in flight (the conformance harness leaves a
        PreBind waiting for the PV controller this way)."""
        for task in list(self._in_flight):
            task.cancel()

    async def drain(self) -> None:
        while self._in_flight or self.queue.backlog:
            if self._in_flight:
                await asyncio.gather(*list(self._in_flight), return_exceptions=True)
            await self.queue.idle()
