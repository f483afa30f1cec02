"""One scheduling attempt of one pod, node by node, with the scheduler's own code.

:func:`explain_pod` answers "why is my pod Pending, why not node X, why node Y" for a
pod on a :class:`~ksched.scheduler.Scheduler` whose informers have synced (the live
cluster behind ``ksched explain``, a recording, the embedded cluster of
``ksched.testing``). It binds nothing, writes nothing and leaves the scheduler as it
found it.

Two things are computed, both with the code ``ksched run`` schedules with:

* **The outcome**: :func:`ksched.schedule_one._place` (or, for a pod a scheduler
  extender is interested in, the extenders' path) runs exactly as in a scheduling
  cycle, with the cycle state marked as a dry run
  (:data:`~ksched.framework.interface.DRY_RUN_KEY`: PostFilter computes its answer, e.g.
  DefaultPreemption its candidate and victims, and acts on nothing). This gives the node
  chosen, or the FailedScheduling message word for word (PostFilter's message
  included) and the nomination. The snapshot's start index and random state are saved
  before and put back after (:meth:`ksched._core.Snapshot.attempt_state`), so the
  attempts that follow decide as if nothing had been explained.
* **The trace**: :meth:`ksched._core.Snapshot.explain_attempt` walks the nodes as that
  attempt does (the same ``percentageOfNodesToScore`` sample from the same start
  index, or every node with ``all_nodes``) and reports each node's Filter outcome and
  each built-in Score plugin's raw and normalized score; the profile's Python plugins
  (out-of-tree, and any plugin implemented in Python) run on it as the cycle runs them
  (PreFilter first, Filter on the nodes the kernels let through, PreScore/Score on the
  survivors, with :meth:`~ksched.framework.runtime.Framework.run_score`'s per-plugin
  breakdown), and so do the extenders' filter and prioritize verbs. Plugins are
  reported by the names they carry, whichever they are.

With ``all_nodes`` the trace examines and scores every node (no sampling); the node
the sampled attempt would choose is then given in a note. For a pod no node fits,
:mod:`ksched.explain.whatif` adds the smallest changes it can verify.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ksched.api.pod import Pod
from ksched.backend.queue import QueuedPodInfo
from ksched.explain.model import (
    FEASIBLE,
    NOT_EXAMINED,
    REJECTED,
    Explanation,
    NodeVerdict,
    PluginScore,
)
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import FitError
from ksched.framework.extender import EXTENDER_NAME, MAX_EXTENDER_PRIORITY
from ksched.framework.interface import (
    CORE_FILTER_KEY,
    DRY_RUN_KEY,
    MAX_NODE_SCORE,
    NOMINATING_KEY,
    NodeInfo,
)
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.schedule_one import (
    _extenders_filter,
    _place,
    _place_with_extenders,
    _post_filter_async,
    needs_extenders,
)

if TYPE_CHECKING:
    from ksched._core import CompiledPod
    from ksched.scheduler import Scheduler

__all__ = [
    "ExplainError",
    "Outcome",
    "attempt_outcome",
    "attempt_outcome_now",
    "explain_pod",
    "explain_pod_now",
    "failure_message",
]


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``node-2`` before ``node-10``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part
    )


class ExplainError(Exception):
    """The pod cannot be explained (no profile handles it...); the message says why."""


def dry_run_state() -> CycleState:
    state = CycleState()
    state.write(DRY_RUN_KEY, True)
    return state


def failure_message(status: Status) -> str:
    """The FailedScheduling message of a failed attempt's status (upstream writes the
    FitError's message for rejections and the status message for errors)."""
    err = status.error
    return err.message if isinstance(err, FitError) else status.message


@dataclasses.dataclass(slots=True)
class Outcome:
    """What the scheduling cycle would decide: the node, or the failure status."""

    node: str | None
    status: Status | None
    state: CycleState


def _framework(sched: Scheduler, pod: Pod, profile: str | None) -> tuple[Framework, Pod]:
    name = profile or pod.scheduler_name
    fw = sched.frameworks.get(name)
    if fw is None:
        known = ", ".join(sorted(sched.frameworks))
        raise ExplainError(
            f"no profile handles schedulerName {name!r} of pod {pod.key} (profiles: {known}); "
            "pick one with --profile"
        )
    if pod.scheduler_name != name:
        # Plugins find the pod's framework by its schedulerName (preemption does).
        pod = dataclasses.replace(pod, scheduler_name=name)
    # The framework a scheduling cycle of the pod runs (without the plugins that ignore
    # it, e.g. DynamicResources for a pod without claims).
    return fw.for_pod(pod), pod


def kernel_pod(
    fw: Framework, state: CycleState, pod: Pod, compiled: CompiledPod
) -> tuple[CompiledPod, Status | None]:
    """``compiled`` with the Kernel PreFilter plugins' requests attached (the volume
    plugins': claims, storage classes, CSI limits), as a scheduling cycle prepares the
    pod before its attempt, or the error status of a plugin that failed."""
    if not fw.points.kernel_pre_filter:
        return compiled, None
    return fw.run_kernel_pre_filter(state, pod, compiled)


def _saved(sched: Scheduler) -> Callable[[], None]:
    """Save the snapshot's start index and random state and Python's random state;
    the returned function puts them back."""
    snapshot = sched.cache.snapshot
    saved = snapshot.attempt_state()
    py_random = random.getstate()

    def restore() -> None:
        snapshot.restore_attempt_state(saved)
        random.setstate(py_random)

    return restore


def attempt_outcome_now(sched: Scheduler, fw: Framework, info: QueuedPodInfo) -> Outcome:
    """Run the scheduling cycle's placement for ``info`` as a dry run (a pod no
    extender is interested in) and put the random states and start index back."""
    restore = _saved(sched)
    state = dry_run_state()
    base = info.compiled
    info.compiled, failed = kernel_pod(fw, state, info.pod, base)
    try:
        if failed is not None:
            return Outcome(None, failed, state)
        node, status, _ = _place(sched, fw, info, state)
    finally:
        info.compiled = base
        restore()
    return Outcome(node, status, state)


async def attempt_outcome(sched: Scheduler, fw: Framework, info: QueuedPodInfo) -> Outcome:
    """:func:`attempt_outcome_now`, with the extenders' path for a pod an extender is
    interested in (their HTTP calls are awaited)."""
    if not needs_extenders(sched, info):
        return attempt_outcome_now(sched, fw, info)
    restore = _saved(sched)
    state = dry_run_state()
    base = info.compiled
    info.compiled, failed = kernel_pod(fw, state, info.pod, base)
    try:
        if failed is not None:
            return Outcome(None, failed, state)
        deferred: list[Any] = []
        node, status, _ = await _place_with_extenders(sched, fw, info, state, 0.0, deferred)
        if deferred:
            fit, statuses = deferred[0]
            status = await _post_filter_async(fw, state, info, fit, statuses)
    finally:
        info.compiled = base
        restore()
    return Outcome(node, status, state)


class _Trace:
    """The per-node verdicts being assembled, by node name, in examination order."""

    def __init__(self) -> None:
        self.rows: dict[str, NodeVerdict] = {}
        #: Python plugins or extenders added scores to the kernels' totals.
        self.extra = False

    def reject(self, node: str, status: Status) -> None:
        v = self.rows[node]
        v.outcome = REJECTED
        v.plugin = status.plugin
        v.code = status.code.value
        v.reasons = tuple(status.reasons)
        v.scores = []
        v.total = None

    def feasible(self) -> list[str]:
        return [n for n, v in self.rows.items() if v.outcome == FEASIBLE]


def _rust_trace(trace: Any, kernels: Any) -> _Trace:
    weights = dict(kernels.scores)
    out = _Trace()
    for node, outcome, status, scores, total in trace.nodes:
        v = NodeVerdict(node, outcome)
        if status is not None:
            unresolvable, plugin, reasons = status
            v.plugin = plugin
            v.code = (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            ).value
            v.reasons = tuple(reasons)
        if outcome == FEASIBLE and trace.scored:
            v.scores = [PluginScore(p, raw, norm, weights.get(p, 1)) for p, raw, norm in scores]
            v.total = total
        out.rows[node] = v
    return out


def _node_info(sched: Scheduler, name: str) -> NodeInfo:
    return NodeInfo(name, sched.cache.nodes.get(name), sched.cache.snapshot)


def _add_scores(trace: _Trace, nodes: Iterable[str], extra: dict[str, list[PluginScore]]) -> None:
    for n in nodes:
        v = trace.rows[n]
        added = extra.get(n, [])
        trace.extra = trace.extra or bool(added)
        v.scores = [*v.scores, *added]
        v.total = (v.total or 0) + sum(s.weighted for s in added)


class _Work:
    """One explanation being assembled (shared by the synchronous and asynchronous
    paths)."""

    def __init__(
        self,
        sched: Scheduler,
        fw: Framework,
        pod: Pod,
        notes: list[str],
        *,
        all_nodes: bool,
    ) -> None:
        self.sched = sched
        self.fw = fw
        self.pod = pod
        self.compiled = sched.compile(pod)
        self.info = QueuedPodInfo(pod=pod, compiled=self.compiled, timestamp=0.0, uid=pod.uid)
        self.all_nodes = all_nodes
        self.notes = notes
        self.state = dry_run_state()
        self.outcome: Outcome | None = None
        self.feasible: list[str] = []
        self.rust: Any = None
        self.trace = _Trace()
        self.pre_rejected = False

    @property
    def extenders(self) -> list[Any]:
        return [e for e in self.fw.extenders if e.is_interested(self.pod)]


def _prepare(
    sched: Scheduler, pod: Pod, profile: str | None, *, all_nodes: bool
) -> tuple[_Work, Pod]:
    fw, pod = _framework(sched, pod, profile)
    if sched.cache.has_pod(pod.uid):
        raise ExplainError(
            f"pod {pod.key} is accounted on a node already (assumed or bound); "
            "explain a pending pod"
        )
    notes: list[str] = []
    if pod.deletion_timestamp is not None:
        notes.append(
            "the pod is being deleted: the scheduler skips it "
            f'("skip schedule deleting pod: {pod.key}")'
        )
    driver = sched.group_driver(QueuedPodInfo(pod=pod, compiled=sched.compile(pod), timestamp=0.0))
    if driver is not None:
        need = driver.need(fw)
        count = f" (at least {need} of them must fit)" if need is not None else ""
        notes.append(
            f"the pod belongs to pod group {driver.key}: the scheduler places its members "
            f"together in a pod group cycle, all or nothing{count}; this explains the pod's "
            "own attempt, on the cluster as it is"
        )
    for plugin in fw.pre_enqueue_plugins:
        gate = plugin.pre_enqueue(pod)
        if gate is not None and not gate.is_success():
            notes.append(
                f"PreEnqueue plugin {plugin.name} keeps the pod out of the scheduling queue "
                f"({gate.message}); explained as if it had been let in"
            )
    return _Work(sched, fw, pod, notes, all_nodes=all_nodes), pod


def _filters(w: _Work) -> None:
    """The kernels' trace, then the Python PreFilter/Filter plugins on it."""
    sched, fw, pod, state = w.sched, w.fw, w.pod, w.state
    snapshot = sched.cache.snapshot
    kernels = fw.profile.kernels
    names: frozenset[str] | None = None
    pre_status: Status | None = None
    compiled, failed = kernel_pod(fw, state, pod, w.compiled)
    if failed is not None:
        raise ExplainError(f"PreFilter failed for pod {pod.key}: {failed.message}")
    if fw.points.pre_filter:
        names, pre_status = fw.run_pre_filter(state, pod)
    # DynamicResources' Filter runs in the core, with the allocator its PreFilter made.
    dra = state.get(CORE_FILTER_KEY)
    rust = snapshot.explain_attempt(compiled, kernels, sample=not w.all_nodes, dra=dra)
    if rust.nominated and fw.points.filter and pre_status is None:
        nominated = pod.nominated_node_name
        if fw.run_filter(state, pod, _node_info(sched, nominated)) is not None:
            rust = snapshot.explain_attempt(
                compiled, kernels, sample=not w.all_nodes, use_nomination=False, dra=dra
            )
    if dra is not None and dra.error:
        w.notes.append(
            f"DynamicResources' Filter failed ({dra.error}): the attempt fails with "
            f'"running "DynamicResources" filter plugin: {dra.error}"'
        )
    w.rust = rust
    w.trace = trace = _rust_trace(rust, kernels)
    if rust.nominated:
        w.notes.append(
            f"the pod is nominated to {pod.nominated_node_name} (an earlier preemption), "
            "which passes every filter: it is placed there without looking at other nodes"
        )
    if pre_status is not None:
        if not pre_status.is_rejected():
            raise ExplainError(f"PreFilter failed for pod {pod.key}: {pre_status.message}")
        for n in trace.rows:
            trace.reject(n, pre_status)
        w.pre_rejected = True
        return
    feasible = trace.feasible()
    if names is not None:
        plugins = state.pre_filter_node_plugins
        narrowed = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}]",
            plugin=plugins[0] if plugins else "",
        )
        for n in feasible:
            if n not in names:
                trace.reject(n, narrowed)
        feasible = [n for n in feasible if n in names]
    if fw.points.filter:
        kept = []
        for n in feasible:
            st = fw.run_filter(state, pod, _node_info(sched, n))
            if st is None:
                kept.append(n)
            else:
                trace.reject(n, st)
        feasible = kept
    w.feasible = feasible


async def _extender_filter(w: _Work) -> None:
    """The interested extenders' filter verb on the nodes the plugins let through."""
    if not w.feasible or w.pre_rejected:
        return
    trace = w.trace
    by_name = {n: _node_info(w.sched, n) for n in w.feasible}
    passed, failed, error = await _extenders_filter(w.fw, w.pod, by_name)
    if error is not None:
        raise ExplainError(f"an extender failed for pod {w.pod.key}: {error.message}")
    for n, (unresolvable, msg) in failed.items():
        if n in trace.rows:
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            trace.reject(n, Status(code, msg, plugin=EXTENDER_NAME))
    for n in w.feasible:
        if n not in passed and trace.rows[n].outcome == FEASIBLE:
            trace.reject(
                n, Status(Code.UNSCHEDULABLE, "rejected by an extender", plugin=EXTENDER_NAME)
            )
    w.feasible = [n for n in w.feasible if n in passed]


def _python_scores(w: _Work) -> dict[str, list[PluginScore]]:
    """The Python PreScore/Score plugins on the feasible nodes (two or more)."""
    fw, pod, state = w.fw, w.pod, w.state
    extra: dict[str, list[PluginScore]] = {}
    if len(w.feasible) < 2 or not (fw.points.pre_score or fw.points.score):
        return extra
    nodes = [_node_info(w.sched, n) for n in w.feasible]
    ps = fw.run_pre_score(state, pod, nodes)
    if ps is not None:
        raise ExplainError(f"PreScore failed for pod {pod.key}: {ps.message}")
    breakdown: dict[str, dict[str, tuple[int, int]]] = {}
    _, ss = fw.run_score(state, pod, nodes, breakdown)
    if ss is not None:
        raise ExplainError(f"Score failed for pod {pod.key}: {ss.message}")
    for plugin, per_node in breakdown.items():
        weight = fw.score_weights.get(plugin, 1)
        for n, (raw, norm) in per_node.items():
            extra.setdefault(n, []).append(PluginScore(plugin, raw, norm, weight))
    return extra


async def _extender_scores(w: _Work, extra: dict[str, list[PluginScore]]) -> None:
    """The interested extenders' prioritize verb, weighted as the cycle weighs it."""
    if len(w.feasible) < 2:
        return
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    objects = [ni.node for ni in (_node_info(w.sched, n) for n in w.feasible) if ni.node]
    for ext in w.extenders:
        if not ext.is_prioritizer():
            continue
        try:
            answer = await ext.prioritize(w.pod, objects)
        except Exception as exc:  # upstream ignores prioritize errors too
            w.notes.append(f"extender {ext.name()} could not prioritize: {exc}")
            continue
        for host, score in answer:
            if host in w.feasible:
                extra.setdefault(host, []).append(
                    PluginScore(f"{EXTENDER_NAME} {ext.name()}", score, score * scale, ext.weight())
                )


def _finish(
    w: _Work,
    extra: dict[str, list[PluginScore]],
    *,
    suggest: bool,
    suggest_nodes: Collection[str],
) -> Explanation:
    from ksched.explain import whatif

    if len(w.feasible) >= 2:
        _add_scores(w.trace, w.feasible, extra)
    rust = w.rust
    kernels = w.fw.profile.kernels
    expl = Explanation(
        pod=w.pod.key,
        profile=w.fw.name,
        num_all_nodes=rust.num_all_nodes,
        evaluated_nodes=rust.evaluated_nodes,
        feasible_nodes=0,
        num_to_find=rust.num_to_find,
        sampled=not w.all_nodes,
        percentage_of_nodes_to_score=kernels.percentage_of_nodes_to_score,
        start_index=rust.start_index,
        nodes=[],
        notes=w.notes,
    )
    _decide(expl, w.trace, w.outcome, rust, w.sched)
    outcome = w.outcome
    if outcome is not None and outcome.status is not None and suggest:
        expl.suggestions = whatif.suggest(w.sched, w.fw, w.pod, expl, outcome.state)
    for n in suggest_nodes:
        expl.node_suggestions[n] = whatif.suggest(
            w.sched, w.fw, w.pod, expl, CycleState(), only=(n,)
        )
    return expl


def explain_pod_now(
    sched: Scheduler,
    pod: Pod,
    *,
    profile: str | None = None,
    all_nodes: bool = False,
    suggest: bool = True,
    suggest_nodes: Collection[str] = (),
    outcome: bool = True,
) -> Explanation:
    """:func:`explain_pod` without awaiting: for a pod no scheduler extender is
    interested in (raises :class:`ExplainError` otherwise). ``outcome=False`` skips the
    scheduling cycle's own attempt (no FailedScheduling message, no PostFilter): the
    trace alone decides, as shadow mode needs."""
    w, pod = _prepare(sched, pod, profile, all_nodes=all_nodes)
    if w.extenders:
        raise ExplainError(
            f"a scheduler extender is interested in pod {pod.key}: explain it with "
            "explain_pod (the extenders' calls are awaited)"
        )
    with _visible(sched, pod):
        if outcome:
            w.outcome = attempt_outcome_now(sched, w.fw, w.info)
        _filters(w)
        extra = {} if w.pre_rejected else _python_scores(w)
        return _finish(w, extra, suggest=suggest, suggest_nodes=suggest_nodes)


async def explain_pod(
    sched: Scheduler,
    pod: Pod,
    *,
    profile: str | None = None,
    all_nodes: bool = False,
    suggest: bool = True,
    suggest_nodes: Collection[str] = (),
) -> Explanation:
    """One attempt of ``pod`` (pending: not in the cache) on ``sched``, node by node.

    ``profile`` schedules it with that profile instead of its ``schedulerName``'s;
    ``all_nodes`` turns ``percentageOfNodesToScore`` sampling off in the trace;
    ``suggest`` adds, for a pod no node fits, the changes that would make it fit;
    ``suggest_nodes``: the changes that would make it fit on each of these nodes.
    Raises :class:`ExplainError` when no profile handles the pod.
    """
    w, pod = _prepare(sched, pod, profile, all_nodes=all_nodes)
    with _visible(sched, pod):
        w.outcome = await attempt_outcome(sched, w.fw, w.info)
        _filters(w)
        extra: dict[str, list[PluginScore]] = {}
        if not w.pre_rejected:
            if w.extenders:
                await _extender_filter(w)
            extra = _python_scores(w)
            if w.extenders:
                await _extender_scores(w, extra)
        return _finish(w, extra, suggest=suggest, suggest_nodes=suggest_nodes)


@contextlib.contextmanager
def _visible(sched: Scheduler, pod: Pod) -> Iterator[None]:
    """A pod that does not exist in the cluster (``-f pod.yaml``) is put in the pod
    informer's store for the attempt, as a real pending pod is: plugins read the pod's
    latest object there (DefaultPreemption does)."""
    store = sched.pod_informer.store
    if pod.key in store:
        yield
        return
    store[pod.key] = pod.raw
    try:
        yield
    finally:
        store.pop(pod.key, None)


def _decide(
    expl: Explanation, trace: _Trace, outcome: Outcome | None, rust: Any, sched: Scheduler
) -> None:
    """Fill in the chosen node, the ties, the failure and the order of the rows."""
    feasible = trace.feasible()
    expl.feasible_nodes = len(feasible)
    scored = [n for n in feasible if trace.rows[n].total is not None]
    best = max((trace.rows[n].total or 0 for n in scored), default=None)
    expl.tied = [n for n in scored if trace.rows[n].total == best] if len(scored) > 1 else []
    attempted = outcome is not None
    if outcome is None:
        outcome = Outcome(rust.chosen, None, CycleState())
    if outcome.status is not None:
        expl.failed_scheduling = failure_message(outcome.status)
        nominating = outcome.state.get(NOMINATING_KEY)
        expl.nominated_node = nominating or None
        if feasible:
            expl.notes.append(
                "the trace found feasible nodes but the attempt failed: the cluster changed "
                "between the two, or a plugin answers differently on a second call"
            )
    if attempted and expl.sampled:
        chosen = outcome.node
        if chosen is not None and chosen not in feasible:
            expl.notes.append(
                f"the attempt chose {chosen}, which the trace did not find feasible "
                "(a plugin answers differently on a second call)"
            )
    elif not feasible:
        chosen = None
    elif len(feasible) == 1:
        chosen = feasible[0]
    elif len(expl.tied) > 1:
        # The kernels' own tie-break is known exactly; Python scores change the ties.
        chosen = rust.chosen if rust.chosen in expl.tied and not trace.extra else expl.tied[0]
    else:
        chosen = expl.tied[0] if expl.tied else feasible[0]
    if attempted and not expl.sampled and outcome.node is not None and outcome.node != chosen:
        expl.notes.append(
            "--all-nodes: every node was examined and scored; ksched run examines a "
            f"sample (percentageOfNodesToScore) and would choose {outcome.node}"
        )
    expl.chosen = chosen
    if chosen is not None:
        if rust.nominated:
            expl.chosen_by = "nominated-node"
        elif len(feasible) == 1:
            expl.chosen_by = "only-feasible-node"
        elif len(expl.tied) > 1:
            expl.chosen_by = "tie-break"
        else:
            expl.chosen_by = "score"
        if chosen in trace.rows:
            trace.rows[chosen].chosen = True
    order = {n: i for i, n in enumerate(trace.rows)}
    filters = {p: i for i, p in enumerate(sched.frameworks[expl.profile].profile.filters)}

    def key(v: NodeVerdict) -> tuple[Any, ...]:
        if v.chosen:
            return (0,)
        if v.outcome == FEASIBLE:
            return (1, -(v.total or 0), natural_key(v.node))
        if v.outcome == REJECTED:
            return (2, filters.get(v.plugin, len(filters)), v.plugin, v.reason, natural_key(v.node))
        assert v.outcome == NOT_EXAMINED
        return (3, order[v.node])

    expl.nodes = sorted(trace.rows.values(), key=key)
