"""DefaultPreemption (PostFilter, PreEnqueue): evict lower-priority pods so that a pod
that fits nowhere can run, as kube-scheduler v1.36 does.

PostFilter runs when no node fits the pod (upstream ``Evaluator.Preempt``):

1. **Eligibility.** A pod with ``preemptionPolicy: Never`` does not preempt. A pod
   whose nominated node still has a lower-priority pod terminating because of
   preemption waits for it instead of preempting again (unless the nominated node is
   now UnschedulableAndUnresolvable for it).
2. **Candidates.** The nodes that rejected the pod as Unschedulable (not
   UnschedulableAndUnresolvable: removing pods cannot help those) are dry-run from a
   random offset, in order, until ``max(N * minCandidateNodesPercentage / 100,
   minCandidateNodesAbsolute)`` candidates are found, at least one of them without a
   PodDisruptionBudget violation (upstream stops its parallel search on the same rule).
3. **Victims on a node** (``SelectVictimsOnNode``): remove every lower-priority pod,
   check the pod fits (every Filter of the profile, nominated pods of equal or higher
   priority included), then reprieve the removed pods from the most important down
   (priority, then earlier start), the ones whose PDB would be violated first; a pod
   stays a victim only when adding it back makes the preemptor not fit.
4. **Extenders** (``callExtenders``): when extenders that support preemption are
   interested in the pod, each gets the candidates in turn (its ``preemptVerb``) and
   answers the ones it accepts; PostFilter then returns an awaitable, which the pod's
   asynchronous cycle awaits.
5. **Ranking** (``pickOneNodeForPreemption``): fewest PDB violations, lowest
   highest-victim priority, smallest sum of victim priorities, fewest victims, latest
   start time of the highest-priority victims, then the first candidate found.
6. **Preparation, asynchronously** (``prepareCandidateAsync``): the preemptor is
   nominated to the node (PostFilterResult; the scheduling cycle patches
   ``status.nominatedNodeName`` and tells the nominator, so filtering keeps the room for
   it); in a background task lower-priority pods nominated to that node lose their
   nomination, each victim gets the ``DisruptionTarget`` condition and is deleted (a
   victim waiting at Permit is rejected instead), and a ``Preempted`` event is recorded.
   The scheduling loop never waits for those calls; it waits for the preemptor's own
   status patch (the nomination) before the next cycle, as upstream's failure handler
   does (:mod:`ksched.scheduler`), so the next preemptor's dry run sees the deletions
   of the preemptions before it about as soon as upstream's does.

PreEnqueue keeps the preemptor out of activeQ while its victims are being deleted
("waiting for the preemption for this pod to be finished"); the deletions of the
victims (``AssignedPod/Delete``, whose hint for NodeResourcesFit & co. answers Queue)
bring it back, and it binds to the room it made.

Steps 2, 3 and 5 run in the Rust core (``Snapshot.preemption_dry_run``, see
``rust/preemption.rs``): a node without some pods is evaluated there by freeing their
requests arithmetically when only resources are in play, by detaching them otherwise,
and nodes are evaluated in parallel waves. For profiles with Python Filter plugins the
same algorithm runs here step by step (:meth:`DefaultPreemption.select_victims_on_node`),
one Filter call per step; the tests hold the two to the same answers.

Deviations from upstream: candidates are the first ones found in order from the offset
(upstream's parallel search may find a different set of the same size); ties between
equally important victims are broken by uid and ties after all ranking criteria go to
the first candidate found, not to Go's map order; Python PreFilter plugins have no
AddPod/RemovePod extensions (their Filter sees the snapshot with victims removed);
PDB label selectors are matched without validating label syntax.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from ksched import logs
from ksched._core import CompiledPod, PreemptionDryRun, Profile, ScheduleResult, Snapshot
from ksched.api.pod import Pod, start_time_of
from ksched.backend.compile import compile_pod
from ksched.backend.queue.cluster_event import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.cluster import APIError, Conflict, NotFound
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import RawNodeStatus, fit_error_message
from ksched.framework.extender import Extender, ExtenderError, ExtenderVictims
from ksched.framework.interface import (
    COMPILED_POD_KEY,
    CORE_FILTER_KEY,
    DEFERRED_ACTIONS_KEY,
    DRY_RUN_KEY,
    Handle,
    NodePod,
    PostFilterResult,
)
from ksched.framework.status import Code, Status

log = logs.get_logger(__name__)

__all__ = [
    "DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE",
    "DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE",
    "DRY_RUN_CANDIDATE_KEY",
    "NAME",
    "Candidate",
    "DefaultPreemption",
    "PodDisruptionBudget",
    "candidates_of",
    "events_to_register",
    "filter_pods_with_pdb_violation",
    "pick_one_node_for_preemption",
]

NAME: Final = "DefaultPreemption"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: Final = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: Final = 100

#: Upstream's messages (PostFilter prefixes them with "preemption: ").
PREFIX: Final = "preemption: "
ERR_NEVER: Final = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
ERR_NO_VICTIMS: Final = "No preemption victims found for incoming pod"
ERR_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
ERR_NO_CANDIDATE: Final = "no candidate node for preemption"
ERR_WAITING: Final = "waiting for the preemption for this pod to be finished"
ERR_NO_POD_GROUP: Final = "pod group for pod not found"
ERR_PLACEMENT_BASED: Final = "not eligible due to placement-based pod group scheduling limitation"

#: CycleState key of the candidate a dry run would act on (a :class:`Candidate`).
DRY_RUN_CANDIDATE_KEY: Final = f"{DRY_RUN_KEY}/{NAME}"

DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"

# ---- PodDisruptionBudgets ------------------------------------------------------------------


LabelMatcher = Callable[[Mapping[str, str]], bool]


def _requirement(expr: Any) -> tuple[str, str, frozenset[str]] | None:
    if not isinstance(expr, dict):
        return None
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not key or not isinstance(values, list):
        return None
    if op in ("In", "NotIn"):
        if not values or not all(isinstance(v, str) for v in values):
            return None
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return None
    else:
        return None
    return key, op, frozenset(values)


def label_selector_matcher(selector: Any) -> LabelMatcher | None:
    """A ``metav1.LabelSelector`` as a predicate; None for a nil, empty or invalid one,
    which (for a PDB, in the scheduler) matches nothing."""
    if not isinstance(selector, dict):
        return None
    match_labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(exprs, list):
        return None
    reqs = [(str(k), "In", frozenset((v,))) for k, v in match_labels.items() if isinstance(v, str)]
    if len(reqs) != len(match_labels):
        return None
    for expr in exprs:
        req = _requirement(expr)
        if req is None:
            return None
        reqs.append(req)
    if not reqs:
        return None

    def matches(labels: Mapping[str, str]) -> bool:
        for key, op, values in reqs:
            value = labels.get(key)
            if op == "In":
                if value is None or value not in values:
                    return False
            elif op == "NotIn":
                if value is not None and value in values:
                    return False
            elif op == "Exists":
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True

    return matches


@dataclass(slots=True, frozen=True)
class PodDisruptionBudget:
    """What preemption reads of a ``policy/v1`` PodDisruptionBudget."""

    namespace: str
    name: str
    matches: LabelMatcher | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> PodDisruptionBudget:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        allowed = status.get("disruptionsAllowed")
        disrupted = status.get("disruptedPods")
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            matches=label_selector_matcher(spec.get("selector")),
            disruptions_allowed=allowed if isinstance(allowed, int) else 0,
            disrupted_pods=frozenset(disrupted) if isinstance(disrupted, dict) else frozenset(),
        )


_P = TypeVar("_P", bound=NodePod)

PostFilterOutcome = tuple[PostFilterResult | None, Status | None]

#: A PDB as the Rust dry run reads it: ``(namespace, spec.selector, disruptionsAllowed,
#: names in disruptedPods)``; the selector is None when it matches nothing.
PdbTuple = tuple[str, dict[str, Any] | None, int, list[str]]


def filter_pods_with_pdb_violation(
    pods: Sequence[_P], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[_P], list[_P]]:
    """Split ``pods`` (kept in order) into those whose eviction would violate a PDB and
    the others, charging each matching PDB's budget as upstream does: a pod already in
    the PDB's ``disruptedPods`` is not charged, a pod without labels matches none."""
    if not pdbs:
        return [], list(pods)
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[_P] = []
    ok: list[_P] = []
    for item in pods:
        pod = item.pod
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace or pdb.matches is None:
                    continue
                if not pdb.matches(pod.labels) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else ok).append(item)
    return violating, ok


# ---- candidates and their ranking -------------------------------------------------------------


@dataclass(slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` (uids, most important first)
    are gone."""

    node: str
    victims: list[str]
    num_pdb_violations: int

    def as_tuple(self) -> tuple[str, list[str], int]:
        return self.node, self.victims, self.num_pdb_violations


def candidates_of(found: PreemptionDryRun | list[Candidate]) -> list[Candidate]:
    """The candidates of a dry run, non-violating ones first, in the order found."""
    if isinstance(found, PreemptionDryRun):
        return [Candidate(node, victims, nviol) for node, victims, nviol in found.candidates()]
    return found


def pick_one_node_for_preemption(
    snapshot: Snapshot, candidates: Sequence[Candidate], now: float
) -> Candidate | None:
    """The best candidate (upstream ``pickOneNodeForPreemption``, see the module
    docstring), reading the victims' priorities and start times from the snapshot; the
    first of equals."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    i = snapshot.pick_one_node_for_preemption([c.as_tuple() for c in candidates], now)
    return None if i is None else candidates[i]


# ---- the plugin -----------------------------------------------------------------------------


def _skip_after_assigned_pod_deletion(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Upstream returns Skip: the plugins whose rejection preemption resolves (in the
    pod's unschedulable plugins too) decide when it is retried."""
    return QueueingHint.QUEUE_SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.DELETE), _skip_after_assigned_pod_deletion
        )
    ]


def _terminating_by_preemption(pod: Pod) -> bool:
    if pod.deletion_timestamp is None:
        return False
    for c in (pod.raw.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == DISRUPTION_TARGET:
            return bool(
                c.get("status") == "True" and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


_last_rfc3339: tuple[int, str] = (-1, "")


def _rfc3339(t: float) -> str:
    """``t`` as the API's whole-second timestamp (the last one is remembered: the
    victims of one preemption share it)."""
    global _last_rfc3339
    second = int(t)
    if _last_rfc3339[0] != second:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_rfc3339 = (second, text)
    return _last_rfc3339[1]


def _more_important_first(cp: NodePod, now: float) -> tuple[int, float, str]:
    """Sort key of upstream ``MoreImportantPod`` (higher priority, then earlier start),
    ties by uid as the Rust dry run breaks them."""
    pod = cp.pod
    start = start_time_of(pod)
    return (-pod.priority, now if start is None else start, pod.uid)


class _Attempt:
    """Everything one PostFilter call computes once and reads for every node."""

    __slots__ = (
        "compiled",
        "framework",
        "kernels",
        "now",
        "pdb_tuples",
        "pdbs",
        "pod",
        "python_filters",
        "snapshot",
        "state",
    )

    def __init__(
        self,
        pod: Pod,
        compiled: CompiledPod,
        snapshot: Snapshot,
        kernels: Profile,
        framework: Any,
        state: CycleState,
        pdbs: Sequence[tuple[PodDisruptionBudget, PdbTuple]],
        now: float,
    ) -> None:
        self.pod = pod
        self.compiled = compiled
        self.snapshot = snapshot
        self.kernels = kernels
        self.framework = framework
        self.state = state
        self.pdbs = [p for p, _ in pdbs]
        self.pdb_tuples = [t for _, t in pdbs]
        self.now = now
        #: Python Filter plugins run too: victims are then chosen step by step here,
        #: with a Filter call per step, instead of in the Rust dry run.
        self.python_filters = bool(framework is not None and framework.points.filter)


class DefaultPreemption:
    """PostFilter: preempt lower-priority pods; PreEnqueue: hold a preemptor while its
    victims are being deleted."""

    name = NAME

    def __init__(
        self,
        *,
        min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
        min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
        seed: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.min_candidate_nodes_percentage = min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = min_candidate_nodes_absolute
        # Unseeded, the seed comes from Python's random module (not the OS), so
        # random.seed() makes a whole run reproducible (ksched replay --seed).
        self._rng = random.Random(seed if seed is not None else random.getrandbits(64))
        #: ``offset(n)``: where the dry run starts among ``n`` potential nodes.
        self.offset: Callable[[int], int] = self._rng.randrange
        self._clock = clock
        self._handle: Handle | None = None
        #: scheduling.k8s.io PodGroups, read with TopologyAwareWorkloadScheduling on.
        self._pod_groups: Any = None
        #: Preemptors whose victims are being deleted: uid → the last victim
        #: ``(namespace, name)`` once its deletion is under way (upstream ``preempting``
        #: and ``lastVictimsPendingPreemption``).
        self._preempting: dict[str, tuple[str, str] | None] = {}
        #: "namespace/name" → (resourceVersion, parsed PDB, its form for the Rust core).
        self._pdb_cache: dict[str, tuple[str, PodDisruptionBudget, PdbTuple]] = {}

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> DefaultPreemption:
        """Build from ``DefaultPreemptionArgs`` in upstream JSON shape (defaulted)."""
        args = args or {}
        pct = args.get("minCandidateNodesPercentage")
        absolute = args.get("minCandidateNodesAbsolute")
        return cls(
            min_candidate_nodes_percentage=DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
            if pct is None
            else int(pct),
            min_candidate_nodes_absolute=DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE
            if absolute is None
            else int(absolute),
        )

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        gates = getattr(handle, "feature_gates", None)
        if gates is not None and gates.topology_aware_workload_scheduling:
            from ksched.plugins.workload_listers import pod_groups

            self._pod_groups = pod_groups(handle.informer("podgroups"))

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError("DefaultPreemption is not set up with a scheduler handle")
        return self._handle

    # ---- PreEnqueue and events -------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        preempting = self._preempting
        if not preempting or pod.uid not in preempting:
            return None
        last = preempting[pod.uid]
        if last is not None:
            victim = self.handle.get_pod(*last)
            if victim is None or (victim.get("metadata") or {}).get("deletionTimestamp"):
                return None  # the last deletion went through: preemption is done
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_WAITING)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register()

    def is_preempting(self, uid: str) -> bool:
        """Whether victims of this preemptor are still being deleted."""
        return uid in self._preempting

    # ---- PostFilter ------------------------------------------------------------------------

    def num_candidates(self, num_nodes: int) -> int:
        """``max(N * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``,
        at most N (upstream ``calculateNumCandidates``)."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> PostFilterOutcome | Coroutine[Any, Any, PostFilterOutcome]:
        """Preempt for ``pod``; when an extender that supports preemption is interested
        in the pod, an awaitable of the outcome (the extenders' preempt verb is called;
        the scheduler awaits it in the pod's asynchronous cycle)."""
        h = self.handle
        h.metrics.preemption_attempts.inc()
        if pod.scheduling_group and self._pod_groups is not None:
            # Topology-aware workload scheduling: preempting for each placement tried
            # would preempt many times over (upstream disables it for such groups).
            group = self._pod_groups.get(pod.namespace, pod.scheduling_group)
            if group is None:
                return None, Status(Code.UNSCHEDULABLE, PREFIX + ERR_NO_POD_GROUP)
            if group.has_constraints:
                return None, Status(Code.UNSCHEDULABLE, PREFIX + ERR_PLACEMENT_BASED)
        extenders = [e for e in h.extenders if e.supports_preemption() and e.is_interested(pod)]
        out = self._preempt(state, pod, statuses, extenders)
        if isinstance(out, tuple):
            return self._prefixed(out)

        async def finish(pending: Awaitable[PostFilterOutcome]) -> PostFilterOutcome:
            return self._prefixed(await pending)

        return finish(out)

    def _prefixed(self, out: PostFilterOutcome) -> PostFilterOutcome:
        res, status = out
        if status is not None and status.message:
            return res, Status(status.code, PREFIX + status.message, plugin=self.name)
        return res, status

    def _preempt(
        self,
        state: CycleState,
        pod: Pod,
        statuses: Mapping[str, Status],
        extenders: Sequence[Extender] = (),
    ) -> PostFilterOutcome | Awaitable[PostFilterOutcome]:
        h = self.handle
        latest = h.get_pod(pod.namespace, pod.name)
        if latest is None:
            return None, Status(Code.ERROR, f'pod "{pod.name}" not found')
        # 1) eligibility
        nominated = str((latest.get("status") or {}).get("nominatedNodeName") or "")
        reason = self._not_eligible(pod, nominated, statuses, state)
        if reason:
            return None, Status(Code.UNSCHEDULABLE, reason)
        # 2) candidates
        num_all = h.snapshot.num_nodes
        attempt = self.new_attempt(state, pod)
        if attempt is None:
            return None, Status(Code.ERROR, f"no profile handles {pod.scheduler_name!r}")
        found, node_statuses, errors = self.find_candidates(attempt, statuses)
        if errors and not found:
            return None, Status(Code.ERROR, errors[0])
        if not found:
            ref = logs.kobj(pod)
            log.with_values(pod=ref).v(2).info(
                "No preemption candidate is found; preemption is not helpful for scheduling",
                pod=ref,
            )
            counts: dict[str, int] = {}
            for _, _, _, reasons in node_statuses:
                for r in reasons:
                    counts[r] = counts.get(r, 0) + 1
            if len(node_statuses) < num_all:
                counts[ERR_NOT_HELPFUL] = counts.get(ERR_NOT_HELPFUL, 0) + (
                    num_all - len(node_statuses)
                )
            # Clear the pod's nomination, if any.
            return PostFilterResult(""), Status(
                Code.UNSCHEDULABLE, fit_error_message(num_all, counts)
            )
        # 3) extenders, when some are interested (asynchronously).
        if extenders:
            return self._with_extenders(attempt, candidates_of(found), extenders)
        # 4) the best candidate.
        if isinstance(found, PreemptionDryRun):
            top = found.best()
            best = Candidate(*top) if top is not None else None
        else:
            best = pick_one_node_for_preemption(attempt.snapshot, found, attempt.now)
        return self._nominate(best, pod, state)

    def _nominate(self, best: Candidate | None, pod: Pod, state: CycleState) -> PostFilterOutcome:
        """Upstream ``Preempt`` steps 4 and 5: the chosen candidate's victims are
        evicted in the background and the pod is nominated to its node. In a pod group
        cycle (``DEFERRED_ACTIONS_KEY``) the evictions wait for the cycle's verdict; in a
        dry run (:data:`~ksched.framework.interface.DRY_RUN_KEY`) the candidate is only
        written to the cycle state."""
        if best is None or not best.node:
            return None, Status(Code.UNSCHEDULABLE, ERR_NO_CANDIDATE)
        if state.get(DRY_RUN_KEY):
            state.write(DRY_RUN_CANDIDATE_KEY, best)
            return PostFilterResult(best.node), Status(Code.SUCCESS)
        ref = logs.kobj(pod)
        log.with_values(pod=ref).v(2).info(
            "the target node for the preemption is determined", node=best.node, pod=ref
        )
        deferred = state.get(DEFERRED_ACTIONS_KEY)
        if deferred is not None:
            chosen = best
            deferred.append(lambda: self._prepare_candidate_async(chosen, pod))
        else:
            self._prepare_candidate_async(best, pod)
        return PostFilterResult(best.node), Status(Code.SUCCESS)

    async def _with_extenders(
        self, a: _Attempt, candidates: list[Candidate], extenders: Sequence[Extender]
    ) -> PostFilterOutcome:
        """Upstream ``callExtenders``: each interested extender that supports preemption,
        in order, gets the candidates (node → victims) and answers the ones it accepts,
        possibly with other victims; the next extender gets that answer. An error, or
        a node answered without victims, fails the attempt unless the extender is
        ignorable (then it is skipped, or that node dropped). Then the best remaining
        candidate is nominated as usual."""
        h = self.handle
        pod = a.pod
        victims: dict[str, ExtenderVictims] = {}
        for c in candidates:
            on_node = {cp.pod.uid: cp.pod for cp in h.pods_on_node(c.node)}
            pods = [on_node[uid] for uid in c.victims if uid in on_node]
            victims[c.node] = ExtenderVictims(pods, c.num_pdb_violations)
        for ext in extenders:
            try:
                answer = await ext.process_preemption(pod, victims)
            except (ExtenderError, OSError, TimeoutError) as exc:
                if ext.is_ignorable():
                    log.v(2).info(
                        "Skipped extender as it returned error and has ignorable flag set",
                        extender=ext.name(),
                        err=exc,
                    )
                    continue
                return None, Status(Code.ERROR, str(exc))
            for node, v in list(answer.items()):
                if v.pods:
                    continue
                if not ext.is_ignorable():
                    return None, Status(
                        Code.ERROR, f'expected at least one victim pod on node "{node}"'
                    )
                log.v(2).info(
                    "Ignored node for which the extender didn't report victims",
                    node=logs.kref("", node),
                    extender=ext.name(),
                )
                del answer[node]
            victims = answer
            if not victims:
                break
        # Victims that left while the extenders answered need no eviction (upstream
        # ranks with the objects it has and ignores NotFound when deleting them); a
        # candidate left without victims is the cheapest one.
        snapshot = h.snapshot
        kept = [
            Candidate(
                node,
                [p.uid for p in v.pods if snapshot.is_assumed(p.uid) is not None],
                max(0, v.num_pdb_violations),
            )
            for node, v in victims.items()
        ]
        return self._nominate(pick_one_node_for_preemption(snapshot, kept, a.now), pod, a.state)

    def find_candidates(
        self, a: _Attempt, statuses: Mapping[str, Status]
    ) -> tuple[PreemptionDryRun | list[Candidate], list[RawNodeStatus], list[str]]:
        """Upstream ``findCandidates``: the candidates among the nodes ``statuses``
        rejects as Unschedulable (removing pods may help those; not the
        UnschedulableAndUnresolvable ones), examined from a random offset until
        :meth:`num_candidates` are found, at least one of them violating no PDB
        (non-violating candidates first); the statuses of the nodes examined that are
        no candidate (only when there is no candidate); error messages. The candidates
        stay in the core's result when the core found them (:func:`candidates_of`
        lists them)."""
        potential = self._potential_nodes(statuses, a.snapshot)
        n = potential.num_resolvable if isinstance(potential, ScheduleResult) else len(potential)
        if n == 0:
            return [], [], []
        offset, wanted = self.offset(n), self.num_candidates(n)
        if a.python_filters:
            names = (
                potential.resolvable_nodes() if isinstance(potential, ScheduleResult) else potential
            )
            return self._dry_run_in_python(a, names, offset, wanted)
        run = a.snapshot.preemption_dry_run(
            a.compiled,
            a.kernels,
            potential,
            offset,
            wanted,
            a.pdb_tuples,
            a.now,
            dra=a.state.get(CORE_FILTER_KEY),
            counts=a.framework.eval_counts,
        )
        rejected: list[RawNodeStatus] = list(run.statuses)
        return run, rejected, run.errors

    def new_attempt(self, state: CycleState, pod: Pod) -> _Attempt | None:
        """What one preemption attempt of ``pod`` reads for every node (None: no
        profile of this scheduler handles the pod)."""
        h = self.handle
        fw = h.framework(pod.scheduler_name)
        if fw is None:
            return None
        compiled = state.get(COMPILED_POD_KEY)
        if compiled is None:
            compiled = compile_pod(pod)
        return _Attempt(
            pod,
            compiled,
            h.snapshot,
            fw.profile.kernels,
            fw,
            state,
            self._pdbs(h.pod_disruption_budgets()),
            self._clock(),
        )

    def _not_eligible(
        self, pod: Pod, nominated: str, statuses: Mapping[str, Status], state: CycleState
    ) -> str:
        """Upstream ``PodEligibleToPreemptOthers``: "" when eligible, else why not."""
        if pod.preemption_policy == "Never":
            return ERR_NEVER
        if nominated:
            status_of = getattr(statuses, "status_of", None)
            st = status_of(nominated) if status_of is not None else statuses.get(nominated)
            if st is None or st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return ""  # the nominated node cannot take the pod any more: preempt anew
            prio = pod.priority
            for cp in self.handle.pods_on_node(nominated):
                if cp.pod.priority < prio and _terminating_by_preemption(cp.pod):
                    return ERR_TERMINATING
        return ""

    @staticmethod
    def _potential_nodes(
        statuses: Mapping[str, Status], snapshot: Snapshot
    ) -> ScheduleResult | list[str]:
        """The nodes rejected as Unschedulable: the core's failed result itself when the
        statuses are its (the dry run reads them there), else their names."""
        result = getattr(statuses, "result", None)
        absent: Status | None = getattr(statuses, "absent", None)
        absent_counts = absent is not None and absent.code is Code.UNSCHEDULABLE
        if isinstance(result, ScheduleResult) and not absent_counts:
            return result
        out = [n for n, s in statuses.items() if s.code is Code.UNSCHEDULABLE]
        if absent_counts:
            explicit = set(statuses)
            out.extend(n for n in snapshot.node_names() if n not in explicit)
        return out

    def _pdbs(
        self, objs: Collection[Mapping[str, Any]]
    ) -> list[tuple[PodDisruptionBudget, PdbTuple]]:
        if not objs:
            self._pdb_cache.clear()
            return []
        out: list[tuple[PodDisruptionBudget, PdbTuple]] = []
        cache = self._pdb_cache
        seen: set[str] = set()
        for obj in objs:
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            rv = str(meta.get("resourceVersion") or "")
            seen.add(key)
            hit = cache.get(key)
            if hit is None or hit[0] != rv:
                pdb = PodDisruptionBudget.from_dict(obj)
                selector = (obj.get("spec") or {}).get("selector")
                hit = cache[key] = (
                    rv,
                    pdb,
                    (
                        pdb.namespace,
                        selector if isinstance(selector, dict) and pdb.matches else None,
                        pdb.disruptions_allowed,
                        sorted(pdb.disrupted_pods),
                    ),
                )
            out.append((hit[1], hit[2]))
        if len(cache) > len(seen):
            for key in [k for k in cache if k not in seen]:
                del cache[key]
        return out

    # ---- the dry run with Python Filter plugins --------------------------------------------

    def _dry_run_in_python(
        self, a: _Attempt, potential: Sequence[str], offset: int, wanted: int
    ) -> tuple[list[Candidate], list[RawNodeStatus], list[str]]:
        """The dry run of :meth:`find_candidates` for profiles with Python Filter
        plugins: each node step by step, one Filter call per step (the Rust kernels,
        then the Python filters)."""
        n = len(potential)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: list[RawNodeStatus] = []
        errors: list[str] = []
        for i in range(n):
            node = potential[(offset + i) % n]
            if a.snapshot.allocatable(node, "pods") is None:
                continue  # the node left the snapshot (the core skips it too)
            cand, st = self.select_victims_on_node(a, node)
            if cand is not None:
                target = non_violating if cand.num_pdb_violations == 0 else violating
                if len(target) < wanted:
                    target.append(cand)
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            assert st is not None
            if st.code is Code.ERROR:
                errors.append(st.message)
            unresolvable = st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            statuses.append((node, unresolvable, st.plugin or "", list(st.reasons)))
        if non_violating or violating:
            statuses = []
        return non_violating + violating, statuses, errors

    def select_victims_on_node(
        self, a: _Attempt, node: str
    ) -> tuple[Candidate | None, Status | None]:
        """Upstream ``SelectVictimsOnNode`` step by step: the candidate on ``node``, or
        why there is none. The snapshot is restored exactly, whatever happens."""
        prio = a.pod.priority
        potential = [cp for cp in self.handle.pods_on_node(node) if cp.pod.priority < prio]
        if not potential:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_VICTIMS)
        now = a.now
        potential.sort(key=lambda cp: _more_important_first(cp, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, a.pdbs)
        ordered = violating + non_violating
        snapshot = a.snapshot
        removed: dict[str, NodePod] = {}
        try:
            for cp in potential:
                uid = cp.pod.uid
                snapshot.remove_pod(uid)
                removed[uid] = cp
            st = self._filter(a, node)
            if st is not None:
                return None, st
            victims: list[NodePod] = []
            nviol = 0
            for i, cp in enumerate(ordered):
                uid = cp.pod.uid
                _restore(snapshot, cp, node)
                del removed[uid]
                if self._filter(a, node) is not None:
                    snapshot.remove_pod(uid)
                    removed[uid] = cp
                    victims.append(cp)
                    if i < len(violating):
                        nviol += 1
        finally:
            for cp in removed.values():
                _restore(snapshot, cp, node)
        if not victims:
            return None, Status(Code.ERROR, f'expected at least one victim pod on node "{node}"')
        if violating and non_violating:
            victims.sort(key=lambda cp: _more_important_first(cp, now))
        return Candidate(node, [v.pod.uid for v in victims], nviol), None

    def _filter(self, a: _Attempt, node: str) -> Status | None:
        """Every Filter of the profile on ``node`` as the snapshot stands (upstream
        ``RunFilterPluginsWithNominatedPods``)."""
        r = a.snapshot.filter_node(a.compiled, a.kernels, node)
        if r is not None:
            unresolvable, plugin, reasons = r
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            return Status(code, *reasons, plugin=plugin)
        if a.python_filters:
            s: Status | None = a.framework.run_filter(a.state, a.pod, self.handle.node_info(node))
            return s
        return None

    # ---- preparing the chosen node ---------------------------------------------------------

    def _prepare_candidate_async(self, c: Candidate, pod: Pod) -> None:
        """Evict the victims in the background (upstream ``prepareCandidateAsync``)."""
        h = self.handle
        h.metrics.preemption_victims.observe((), float(len(c.victims)))
        on_node = {cp.pod.uid: cp.pod for cp in h.pods_on_node(c.node)}
        victims = [on_node[uid] for uid in c.victims if uid in on_node]
        to_delete = [v for v in victims if v.deletion_timestamp is None]
        if not to_delete:
            return
        prio = pod.priority
        nominated = [p for p in h.nominated_pods_for_node(c.node) if p.priority < prio]
        self._preempting[pod.uid] = None
        # Every victim but the last is deleted in parallel, the last one after them (so
        # that PreEnqueue can tell once its deletion went through). The parallel ones
        # start as tasks now, so an API that answers at once finishes it all in one
        # turn of the event loop.
        log.v(2).info(
            "Start the preemption asynchronously",
            preemptor=logs.kobj(pod),
            node=c.node,
            numVictims=len(victims),
            numVictimsToDelete=len(to_delete),
        )
        loop = asyncio.get_running_loop()
        first = [loop.create_task(self._preempt_pod(c.node, pod, v)) for v in to_delete[:-1]]
        h.spawn(self._preempt_async(c.node, pod, first, to_delete[-1], nominated))

    async def _preempt_async(
        self,
        node: str,
        preemptor: Pod,
        first: list[asyncio.Task[None]],
        last: Pod,
        nominated: list[Pod],
    ) -> None:
        h = self.handle
        uid = preemptor.uid
        failed = False
        began = time.perf_counter()
        try:
            # Lower-priority pods nominated to the node may no longer fit there: clear
            # their nomination so that they look elsewhere sooner.
            for p in nominated:
                try:
                    await h.api.patch_pod_status(
                        namespace=p.namespace,
                        name=p.name,
                        patch={"status": {"nominatedNodeName": None}},
                    )
                except (APIError, OSError, TimeoutError) as exc:
                    log.error(
                        "Cannot clear 'NominatedNodeName' field of pod",
                        err=exc,
                        pod=logs.kobj(p),
                    )
                    failed = True
            ok = True
            for task in first:
                try:
                    await task
                except (APIError, OSError, TimeoutError) as exc:
                    log.error("Error preempting pod", err=exc, preemptor=logs.kobj(preemptor))
                    ok = False
            if ok:
                self._preempting[uid] = (last.namespace, last.name)
                try:
                    await self._preempt_pod(node, preemptor, last)
                except (APIError, OSError, TimeoutError) as exc:
                    log.error(
                        "Error preempting pod",
                        err=exc,
                        preemptor=logs.kobj(preemptor),
                        victim=logs.kobj(last),
                    )
                    ok = False
            failed = failed or not ok
            result = "error" if failed else "success"
            h.metrics.preemption_goroutines_duration.observe((result,), time.perf_counter() - began)
            h.metrics.preemption_goroutines_total.inc((result,))
            log.v(2).info(
                "Async Preemption finished completely",
                preemptor=logs.kobj(preemptor),
                node=node,
                result=result,
            )
        finally:
            for task in first:
                task.cancel()  # no-op for finished ones; the loop is stopping otherwise
            self._preempting.pop(uid, None)
            if failed:
                # The API calls failed: do not leave the preemptor stranded.
                h.activate([uid])

    async def _preempt_pod(self, node: str, preemptor: Pod, victim: Pod) -> None:
        """Reject a victim waiting at Permit, or mark it DisruptionTarget and delete it;
        then record the ``Preempted`` event (upstream ``PreemptPod``)."""
        h = self.handle
        waiting = h.get_waiting_pod(victim.uid)
        if waiting is not None:
            waiting.reject(self.name, "preempted")
        else:
            condition: dict[str, Any] = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "reason": REASON_PREEMPTION_BY_SCHEDULER,
                "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher "
                "priority pod",
            }
            generation = (victim.raw.get("metadata") or {}).get("generation")
            if isinstance(generation, int):
                condition["observedGeneration"] = generation
            if _condition_changes(victim, condition):
                condition["lastTransitionTime"] = _rfc3339(self._clock())
                try:
                    await h.api.patch_pod_status(
                        namespace=victim.namespace,
                        name=victim.name,
                        patch={"status": {"conditions": [condition]}},
                    )
                except NotFound:
                    log.v(2).info(
                        "Victim Pod is already deleted",
                        preemptor=logs.kobj(preemptor),
                        victim=logs.kobj(victim),
                        node=node,
                    )
                    return  # no event, as upstream's PreemptPod
            try:
                await h.api.delete_pod(namespace=victim.namespace, name=victim.name, uid=victim.uid)
            except (NotFound, Conflict):
                log.v(2).info(
                    "Victim Pod is already deleted",
                    preemptor=logs.kobj(preemptor),
                    victim=logs.kobj(victim),
                    node=node,
                )
                return  # already deleted (or replaced by a pod of the same name)
            log.v(2).info(
                "Preemptor Pod preempted victim Pod",
                preemptor=logs.kobj(preemptor),
                victim=logs.kobj(victim),
                node=node,
            )
        h.record_event(
            victim,
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor.uid} on node {node}",
            preemptor.scheduler_name,
        )


def _restore(snapshot: Snapshot, cp: NodePod, node: str) -> None:
    if cp.assumed:
        snapshot.assume(cp.compiled, node)
    else:
        snapshot.add_pod(cp.compiled, node)


def _condition_changes(pod: Pod, condition: Mapping[str, Any]) -> bool:
    """Whether upstream's ``UpdatePodCondition`` would change the pod's status."""
    for c in (pod.raw.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == condition["type"]:
            return any(c.get(k) != v for k, v in condition.items())
    return True
