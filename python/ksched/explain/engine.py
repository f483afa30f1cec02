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
from collections.abc import Collection, Iterable, Iterator
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
from ksched.framework.interface import DRY_RUN_KEY, MAX_NODE_SCORE, NOMINATING_KEY, NodeInfo
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
    from ksched.scheduler import Scheduler

__all__ = ["ExplainError", "Outcome", "attempt_outcome", "explain_pod", "failure_message"]


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
    return fw, pod


async def attempt_outcome(sched: Scheduler, fw: Framework, info: QueuedPodInfo) -> Outcome:
    """Run the scheduling cycle's placement for ``info`` as a dry run and put the
    snapshot's start index, its random state and Python's back afterwards."""
    snapshot = sched.cache.snapshot
    saved = snapshot.attempt_state()
    py_random = random.getstate()
    state = dry_run_state()
    try:
        if needs_extenders(sched, info):
            deferred: list[Any] = []
            node, status, _ = await _place_with_extenders(sched, fw, info, state, 0.0, deferred)
            if deferred:
                fit, statuses = deferred[0]
                status = await _post_filter_async(fw, state, info, fit, statuses)
        else:
            node, status, _ = _place(sched, fw, info, state)
    finally:
        snapshot.restore_attempt_state(saved)
        random.setstate(py_random)
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
    for plugin in fw.pre_enqueue_plugins:
        gate = plugin.pre_enqueue(pod)
        if gate is not None and not gate.is_success():
            notes.append(
                f"PreEnqueue plugin {plugin.name} keeps the pod out of the scheduling queue "
                f"({gate.message}); explained as if it had been let in"
            )
    with _visible(sched, pod):
        expl = await _explain(sched, fw, pod, notes, all_nodes=all_nodes, suggest=suggest)
        if suggest_nodes:
            from ksched.explain import whatif

            for n in suggest_nodes:
                expl.node_suggestions[n] = whatif.suggest(
                    sched, fw, pod, expl, CycleState(), only=(n,)
                )
        return expl


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


async def _explain(
    sched: Scheduler,
    fw: Framework,
    pod: Pod,
    notes: list[str],
    *,
    all_nodes: bool,
    suggest: bool,
) -> Explanation:
    from ksched.explain import whatif

    compiled = sched.compile(pod)
    info = QueuedPodInfo(pod=pod, compiled=compiled, timestamp=0.0, uid=pod.uid)
    outcome = await attempt_outcome(sched, fw, info)

    snapshot = sched.cache.snapshot
    kernels = fw.profile.kernels
    state = dry_run_state()
    names: frozenset[str] | None = None
    pre_status: Status | None = None
    if fw.points.pre_filter:
        names, pre_status = fw.run_pre_filter(state, pod)
    rust = snapshot.explain_attempt(compiled, kernels, sample=not all_nodes)
    if rust.nominated and fw.points.filter and pre_status is None:
        nominated = pod.nominated_node_name
        if fw.run_filter(state, pod, _node_info(sched, nominated)) is not None:
            rust = snapshot.explain_attempt(
                compiled, kernels, sample=not all_nodes, use_nomination=False
            )
    trace = _rust_trace(rust, kernels)
    expl = Explanation(
        pod=pod.key,
        profile=fw.name,
        num_all_nodes=rust.num_all_nodes,
        evaluated_nodes=rust.evaluated_nodes,
        feasible_nodes=0,
        num_to_find=rust.num_to_find,
        sampled=not all_nodes,
        percentage_of_nodes_to_score=kernels.percentage_of_nodes_to_score,
        start_index=rust.start_index,
        nodes=[],
        notes=notes,
    )
    if rust.nominated:
        notes.append(
            f"the pod is nominated to {pod.nominated_node_name} (an earlier preemption), "
            "which passes every filter: it is placed there without looking at other nodes"
        )
    if pre_status is not None:
        if not pre_status.is_rejected():
            raise ExplainError(f"PreFilter failed for pod {pod.key}: {pre_status.message}")
        for n in trace.rows:
            trace.reject(n, pre_status)
    else:
        await _python_and_extenders(sched, fw, pod, state, trace, names, expl)

    _decide(expl, trace, outcome, rust, sched)
    if outcome.status is not None and suggest:
        expl.suggestions = whatif.suggest(sched, fw, pod, expl, outcome.state)
    return expl


async def _python_and_extenders(
    sched: Scheduler,
    fw: Framework,
    pod: Pod,
    state: CycleState,
    trace: _Trace,
    names: frozenset[str] | None,
    expl: Explanation,
) -> None:
    """The Python plugins and the extenders on the kernels' feasible nodes, as the
    scheduling cycle runs them."""
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
            s = fw.run_filter(state, pod, _node_info(sched, n))
            if s is None:
                kept.append(n)
            else:
                trace.reject(n, s)
        feasible = kept
    extenders = [e for e in fw.extenders if e.is_interested(pod)]
    if extenders and feasible:
        by_name = {n: _node_info(sched, n) for n in feasible}
        passed, failed, error = await _extenders_filter(fw, pod, by_name)
        if error is not None:
            raise ExplainError(f"an extender failed for pod {pod.key}: {error.message}")
        for n, (unresolvable, msg) in failed.items():
            if n in trace.rows:
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
                trace.reject(n, Status(code, msg, plugin=EXTENDER_NAME))
        for n in feasible:
            if n not in passed and trace.rows[n].outcome == FEASIBLE:
                trace.reject(
                    n, Status(Code.UNSCHEDULABLE, "rejected by an extender", plugin=EXTENDER_NAME)
                )
        feasible = [n for n in feasible if n in passed]
    if len(feasible) < 2:
        return
    nodes = [_node_info(sched, n) for n in feasible]
    extra: dict[str, list[PluginScore]] = {}
    if fw.points.pre_score or fw.points.score:
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
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    objects = [ni.node for ni in nodes if ni.node is not None]
    for ext in extenders:
        if not ext.is_prioritizer():
            continue
        try:
            answer = await ext.prioritize(pod, objects)
        except Exception as exc:  # upstream ignores prioritize errors too
            expl.notes.append(f"extender {ext.name()} could not prioritize: {exc}")
            continue
        for host, score in answer:
            if host in trace.rows and host in feasible:
                extra.setdefault(host, []).append(
                    PluginScore(f"{EXTENDER_NAME} {ext.name()}", score, score * scale, ext.weight())
                )
    _add_scores(trace, feasible, extra)


def _decide(
    expl: Explanation, trace: _Trace, outcome: Outcome, rust: Any, sched: Scheduler
) -> None:
    """Fill in the chosen node, the ties, the failure and the order of the rows."""
    feasible = trace.feasible()
    expl.feasible_nodes = len(feasible)
    scored = [n for n in feasible if trace.rows[n].total is not None]
    best = max((trace.rows[n].total or 0 for n in scored), default=None)
    expl.tied = [n for n in scored if trace.rows[n].total == best] if len(scored) > 1 else []
    if outcome.status is not None:
        expl.failed_scheduling = failure_message(outcome.status)
        nominating = outcome.state.get(NOMINATING_KEY)
        expl.nominated_node = nominating or None
        if feasible:
            expl.notes.append(
                "the trace found feasible nodes but the attempt failed: the cluster changed "
                "between the two, or a plugin answers differently on a second call"
            )
    if expl.sampled:
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
    if not expl.sampled and outcome.node is not None and outcome.node != chosen:
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
