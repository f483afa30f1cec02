"""Shadow mode (``ksched shadow``): ksched decides beside the active scheduler and
acts on nothing.

:class:`ShadowScheduler` is the scheduler with its informers, cache and frameworks as
``ksched run`` builds them, on a :class:`~ksched.readonly.ReadOnlyClusterAPI` — every
write is refused before it leaves the process, so whatever runs can bind, patch, delete
or record nothing — and without a scheduling loop: pending pods never enter its queue.
Instead it watches the pods the *active* scheduler handles (by default the
schedulerNames of ksched's profiles; ``--shadow-scheduler-name NAME``: those named) and
judges each decision of that scheduler once:

* when the active scheduler binds a pod it saw pending, ksched computes its own decision
  on the view the active scheduler had when it decided (below). The attempt is
  :func:`ksched.explain.explain_pod_now` — the same kernels and Python plugins as a
  scheduling cycle, every node examined and scored (sampling off, so the active
  scheduler's node is scored even when a sample would have left it out). The result is
  ``same_node`` (ksched chooses that node), ``equal_score`` (another node, but the
  active one ties with ksched's best total: a tie broken differently), ``different``
  (ksched rejects the active node or scores it lower; one log line says why, per
  plugin), or ``ksched_unschedulable`` (ksched finds no node);
* when the active scheduler reports a pod unschedulable (its ``PodScheduled`` condition
  turns False with reason ``Unschedulable``) and ksched would place it: ``ksched_only``.
  A pod neither can place is not counted until one of them places it.

The view the active scheduler decided on. A scheduler accounts each pod it places at
once (its assume cache) and binds in the background, so its bindings reach the watch
out of order and late: when pod *P*'s binding arrives, the binding of a pod it placed
just before may still be on its way, and pods it placed just after may already be
there. Shadow mode therefore judges a binding ``grace`` seconds (1 s) after it arrives,
on the snapshot with every binding seen by then *except* those of pods the active
scheduler placed after *P*: pods of the shadowed schedulers created after *P* and bound
at their first attempt (a scheduling queue takes pods of equal priority in the order
they arrive; a pod reported unschedulable first is judged on everything seen when its
binding is judged). :meth:`ksched.backend.cache.Cache.without` takes those pods off the
snapshot for the attempt and puts them back.

``ksched_shadow_decisions_total{result}`` counts them in the scheduler's registry
(``/metrics``). Pods bound before shadow mode started, or created with a node, were no
decision it saw and are not judged.

What shadow mode cannot see: the active scheduler's start index and tie-breaks (hence
``equal_score``), a binding delayed by more than ``grace``, and the order in which it
took pods of different priorities or pods it retried (the model above is exact for
pods of one priority at their first attempt); the log line of a ``different`` gives
both nodes' per-plugin scores, so such a case shows. Scheduler extenders are not
called in shadow mode (a configuration with extenders is refused). A member of a pod
group is judged on its own, as ``ksched explain`` explains it (the active scheduler
placed its group all or nothing, in one cycle). The volume plugins and DynamicResources
run as in a scheduling cycle; their PostFilter and PreBind never run (nothing is
deallocated, bound or provisioned).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod
from ksched.cluster import ClusterAPI
from ksched.explain import ExplainError, Explanation
from ksched.explain.engine import explain_pod_now
from ksched.explain.model import FEASIBLE
from ksched.explain.render import score_difference
from ksched.framework.extender import Extender
from ksched.framework.profile import Profile
from ksched.metrics import Counter
from ksched.readonly import ReadOnlyClusterAPI
from ksched.scheduler import Scheduler

__all__ = [
    "DIFFERENT",
    "EQUAL_SCORE",
    "KSCHED_ONLY",
    "KSCHED_UNSCHEDULABLE",
    "METRIC",
    "RESULTS",
    "SAME_NODE",
    "ShadowDecision",
    "ShadowError",
    "ShadowScheduler",
    "shadow_targets",
]

log = logging.getLogger(__name__)

METRIC: Final = "ksched_shadow_decisions_total"
SAME_NODE: Final = "same_node"
EQUAL_SCORE: Final = "equal_score"
DIFFERENT: Final = "different"
KSCHED_UNSCHEDULABLE: Final = "ksched_unschedulable"
KSCHED_ONLY: Final = "ksched_only"
RESULTS: Final = (SAME_NODE, EQUAL_SCORE, DIFFERENT, KSCHED_UNSCHEDULABLE, KSCHED_ONLY)
#: Decisions kept for inspection (tests, the log's context).
_KEPT = 100_000
#: Seconds a binding waits before it is judged (the bindings the active scheduler had
#: in flight when it decided arrive meanwhile).
DEFAULT_GRACE = 1.0


class ShadowError(ValueError):
    """Shadow mode cannot start with this configuration; the message says why."""


def shadow_targets(profiles: Mapping[str, Profile], names: Sequence[str]) -> dict[str, str]:
    """Active schedulerName → the ksched profile that decides for its pods. No names:
    every profile shadows the scheduler of its own name; a name without a profile of
    that name takes the only profile, if there is one."""
    if not names:
        return {p: p for p in profiles}
    out: dict[str, str] = {}
    for name in names:
        if name in profiles:
            out[name] = name
        elif len(profiles) == 1:
            out[name] = next(iter(profiles))
        else:
            raise ShadowError(
                f"--shadow-scheduler-name {name}: no profile has that schedulerName and "
                f"there are several ({', '.join(profiles)}); name the profile after it"
            )
    return out


@dataclass(slots=True)
class ShadowDecision:
    """One decision of the active scheduler, judged."""

    pod: str
    uid: str
    scheduler_name: str
    result: str
    #: Where the active scheduler bound the pod (None for ``ksched_only``).
    bound_to: str | None
    #: Where ksched would put it (None for ``ksched_unschedulable``).
    ksched_node: str | None
    #: Why, for ``different``, ``ksched_unschedulable`` and ``ksched_only``.
    detail: str = ""


class _Decisions(Collector):
    def __init__(self, counter: Counter) -> None:
        self._counter = counter

    def collect(self) -> Iterator[Metric]:
        yield self._counter.family()

    def describe(self) -> Iterator[Metric]:
        return iter(())


def _unschedulable_message(obj: Mapping[str, Any]) -> str | None:
    """The message of a ``PodScheduled=False, reason=Unschedulable`` condition."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if (
            isinstance(cond, dict)
            and cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            return str(cond.get("message") or "")
    return None


class ShadowScheduler(Scheduler):
    """Judges the active scheduler's decisions; schedules, binds and writes nothing."""

    def __init__(
        self,
        api: ClusterAPI,
        profiles: Mapping[str, Profile],
        *,
        shadowed: Mapping[str, str] | None = None,
        extenders: Sequence[Extender] = (),
        grace: float = DEFAULT_GRACE,
        clock: Callable[[], float] = time.monotonic,
        **kwargs: Any,
    ) -> None:
        if extenders:
            raise ShadowError(
                "shadow mode does not call scheduler extenders: remove `extenders` from the "
                "configuration to shadow without them"
            )
        if not isinstance(api, ReadOnlyClusterAPI):
            api = ReadOnlyClusterAPI(api, mode="shadow mode")
        super().__init__(api, profiles, **kwargs)
        #: Active schedulerName → ksched profile.
        self.shadowed = dict(shadowed) if shadowed is not None else {p: p for p in profiles}
        unknown = set(self.shadowed.values()) - set(self.frameworks)
        if unknown:
            raise ShadowError(f"shadow mode: no profile {', '.join(sorted(unknown))}")
        self.decisions_total = Counter(
            METRIC,
            "Decisions of the active scheduler shadow mode judged, by how ksched's compares.",
            ("result",),
        )
        for r in RESULTS:
            self.decisions_total.values[(r,)] = 0.0
        self.metrics.registry.register(_Decisions(self.decisions_total))
        #: The judged decisions, latest last.
        self.decisions: deque[ShadowDecision] = deque(maxlen=_KEPT)
        #: Pending pods of the shadowed schedulers, by uid (their latest object).
        self._pending: dict[str, Pod] = {}
        self._judged: set[str] = set()
        self._stopped = asyncio.Event()
        self.grace = grace
        self._clock = clock
        self._seq = itertools.count()
        #: uid → the order in which the shadowed pending pods arrived.
        self._order: dict[str, int] = {}
        #: Pods the active scheduler reported unschedulable at least once.
        self._retried: set[str] = set()
        #: Bindings waiting for their judgement: (seen at, pending pod, node).
        self._due: deque[tuple[float, Pod, str]] = deque()
        #: uid → (arrival order, seen at) of recent first-attempt bindings.
        self._recent: dict[str, tuple[int, float]] = {}

    @property
    def read_only_api(self) -> ReadOnlyClusterAPI:
        assert isinstance(self.api, ReadOnlyClusterAPI)
        return self.api

    def counts(self) -> dict[str, int]:
        return {r: int(self.decisions_total.get((r,))) for r in RESULTS}

    # ---- running: informers only ----------------------------------------------------

    async def run(self) -> None:
        """Start the informers (if needed) and judge decisions until :meth:`stop`."""
        if not self.synced.is_set():
            await self.start()
        log.info(
            "shadow mode: judging the decisions of %s (nothing is written)",
            ", ".join(f"{a} (profile {p})" for a, p in self.shadowed.items()),
        )
        while not self._stopped.is_set():
            self.judge_due()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), min(self.grace / 4, 0.25))
        self.judge_due(everything=True)

    def judge_due(self, *, everything: bool = False) -> None:
        """Judge the bindings seen at least ``grace`` seconds ago (or all of them)."""
        now = self._clock()
        while self._due and (everything or self._due[0][0] + self.grace <= now):
            _, pod, node = self._due.popleft()
            self._judge_binding(pod, node)
        horizon = now - 10 * self.grace
        for uid in [u for u, (_, t) in self._recent.items() if t < horizon]:
            del self._recent[uid]

    def stop(self) -> None:
        self._stopped.set()
        super().stop()

    # ---- informer handlers -------------------------------------------------------

    def _on_pod(self, pod: Pod) -> None:
        if pod.is_assigned or pod.is_terminal:
            super()._on_pod(pod)
            return
        # A pending pod: never queued here. The shadowed ones are watched.
        if pod.scheduler_name in self.shadowed:
            self._pending[pod.uid] = pod
            self._order.setdefault(pod.uid, next(self._seq))
            message = _unschedulable_message(pod.raw)
            if message is not None:
                self._judge_unschedulable(pod, message)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        meta = new.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        node = (new.get("spec") or {}).get("nodeName")
        if uid in self._pending:
            if node and not (old.get("spec") or {}).get("nodeName"):
                pending = self._pending.pop(uid)
                now = self._clock()
                self._due.append((now, pending, str(node)))
                if uid not in self._retried and uid in self._order:
                    self._recent[uid] = (self._order[uid], now)
            elif not node:
                try:
                    pod = Pod.from_dict(new)
                except InvalidObjectError as exc:
                    self._invalid(exc)
                    return
                self._pending[uid] = pod
                message = _unschedulable_message(new)
                if message is not None and _unschedulable_message(old) is None:
                    self._judge_unschedulable(pod, message)
                return
        super()._pod_updated(old, new)

    def _pod_deleted(self, obj: dict[str, Any]) -> None:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        self._pending.pop(uid, None)
        self._judged.discard(uid)
        self._retried.discard(uid)
        if not any(p.uid == uid for _, p, _ in self._due):
            self._order.pop(uid, None)
        super()._pod_deleted(obj)

    # ---- judging -----------------------------------------------------------------

    def _evaluate(self, pod: Pod) -> Explanation | None:
        try:
            return explain_pod_now(
                self,
                pod,
                profile=self.shadowed[pod.scheduler_name],
                all_nodes=True,
                suggest=False,
                outcome=False,
            )
        except ExplainError as exc:
            log.warning("shadow mode: cannot judge pod %s: %s", pod.key, exc)
            return None

    def _record(self, d: ShadowDecision) -> None:
        self._judged.add(d.uid)
        self.decisions.append(d)
        self.decisions_total.inc((d.result,))
        if d.result in (DIFFERENT, KSCHED_UNSCHEDULABLE, KSCHED_ONLY):
            log.warning(
                "shadow: %s: pod %s: %s placed it on %s, ksched on %s: %s",
                d.result,
                d.pod,
                d.scheduler_name,
                d.bound_to or "no node",
                d.ksched_node or "no node",
                d.detail,
            )

    def _judge_binding(self, pod: Pod, node: str) -> None:
        uid = pod.uid
        seq = self._order.pop(uid, None)
        self._recent.pop(uid, None)
        if uid in self._judged:
            return
        later: list[str] = []
        if seq is not None and uid not in self._retried:
            later = [u for u, (s, _) in self._recent.items() if s > seq]
        self._retried.discard(uid)
        with self.cache.without([uid, *later]):
            expl = self._evaluate(pod)
        if expl is None:
            return
        chosen = expl.chosen
        theirs = expl.node(node)
        if chosen is None:
            why = (
                f"{node}: {theirs.plugin}: {theirs.reason}"
                if theirs is not None and theirs.outcome != FEASIBLE
                else f"no node of {expl.num_all_nodes} fits"
            )
            self._record(
                ShadowDecision(
                    pod.key,
                    pod.uid,
                    pod.scheduler_name,
                    KSCHED_UNSCHEDULABLE,
                    node,
                    None,
                    f"ksched finds no feasible node ({expl.feasible_nodes}/"
                    f"{expl.num_all_nodes}); {why}",
                )
            )
            return
        if chosen == node:
            result, detail = SAME_NODE, ""
        else:
            mine = expl.node(chosen)
            assert mine is not None
            if theirs is None:
                result, detail = DIFFERENT, f"ksched does not know node {node}"
            elif theirs.outcome != FEASIBLE:
                result = DIFFERENT
                detail = f"ksched rejects {node}: {theirs.plugin}: {theirs.reason}"
            elif theirs.total == mine.total:
                result, detail = EQUAL_SCORE, ""
            else:
                result = DIFFERENT
                gap = (mine.total or 0) - (theirs.total or 0)
                detail = (
                    f"ksched scores {node} {theirs.total}, {gap} below {chosen} ({mine.total}): "
                    f"{score_difference(mine, theirs)}"
                )
        self._record(
            ShadowDecision(pod.key, pod.uid, pod.scheduler_name, result, node, chosen, detail)
        )

    def _judge_unschedulable(self, pod: Pod, message: str) -> None:
        self._retried.add(pod.uid)
        if pod.uid in self._judged:
            return
        expl = self._evaluate(pod)
        if expl is None or expl.chosen is None:
            return  # neither places it (yet)
        mine = expl.node(expl.chosen)
        total = f" (total {mine.total})" if mine is not None and mine.total is not None else ""
        self._record(
            ShadowDecision(
                pod.key,
                pod.uid,
                pod.scheduler_name,
                KSCHED_ONLY,
                None,
                expl.chosen,
                f"ksched would place it on {expl.chosen}{total}; {pod.scheduler_name} "
                f"reported: {message}",
            )
        )
