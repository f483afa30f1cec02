"""The framework runtime: one per profile, it runs the Python plugins of every extension
point with upstream's rules and records their metrics.

The built-in PreFilter/Filter/PreScore/Score/NormalizeScore plugins run inside one Rust
call per pod (:mod:`ksched.schedule_one`); this runtime runs everything else: the
Python plugins around that call (PreFilter before it, Filter/Score on the nodes that
survived it), PostFilter when no node fits, then Reserve, Permit, and in the binding
cycle WaitOnPermit, PreBind, Bind and PostBind.

Rules carried over from upstream ``framework.go``:

* Reserve stops at the first failure; the caller then runs Unreserve of *every* reserve
  plugin in reverse order (Unreserve must be idempotent).
* Permit: a rejection stops at once; ``Wait`` from one or more plugins parks the pod in
  the waiting-pods map with one timer per waiting plugin (capped at 15 minutes). The pod
  proceeds when every waiting plugin allowed it; a rejection or a timeout
  ("rejected due to timeout after waiting 10s at plugin X") fails it as Unschedulable.
* Bind: bind plugins run in order until one does not return ``Skip``.
* A plugin that raises gets an ``Error`` status naming it; a non-rejection failure is
  wrapped as upstream words it (``running Reserve plugin "X": ...``).
* ``scheduler_framework_extension_point_duration_seconds`` is recorded for every
  extension point run; per-plugin durations only in sampled cycles.
* ``scheduler_plugin_evaluation_total`` (upstream ``instrumented_plugins.go``): every
  plugin enabled at PreFilter, Filter, PreScore or Score has its series from the
  framework's creation on; a PreFilter or PreScore call that does not return Skip counts
  one, a Filter or Score call one per node. An attempt without Python placement plugins
  hands the Rust call the framework's ``eval_counts``, which the core adds the attempt's
  counts to (read at scrape time; no Python work per attempt); an attempt that runs
  Python plugins takes the core's counts from its result
  (:meth:`Framework.record_evaluations`, which applies where the Python plugins stopped
  the attempt), and the Python plugins' are counted as they are called.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from ksched import _core
from ksched._core import CompiledPod
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from ksched.backend.queue.queue import SortKey, priority_sort_key
from ksched.framework.builtin_events import ALL_EVENTS, events_for
from ksched.framework.builtins import default_plugins
from ksched.framework.cycle_state import CycleState
from ksched.framework.extender import EXTENDER_NAME, Extender
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Handle,
    NodeInfo,
    NodeScore,
    PluginSet,
    PostFilterResult,
)
from ksched.framework.profile import Profile
from ksched.framework.status import Code, Status
from ksched.metrics import HistogramSeries, SchedulerMetrics

log = logging.getLogger(__name__)

__all__ = [
    "MAX_PERMIT_TIMEOUT",
    "Framework",
    "WaitingPodHandle",
    "WaitingPods",
    "applies_to_pod",
    "go_duration",
]

#: Upstream ``maxTimeout`` of a Permit wait.
MAX_PERMIT_TIMEOUT = 15 * 60.0

#: ``call_later(delay, fn, *args)`` returning something with ``cancel()``.
CallLater = Callable[..., Any]

_EXTENSION_POINTS = (
    ("pre_enqueue", "pre_enqueue"),
    ("queue_sort", "less"),
    ("kernel_pre_filter", "kernel_pre_filter"),
    ("pre_filter", "pre_filter"),
    ("filter", "filter"),
    ("post_filter", "post_filter"),
    ("pre_score", "pre_score"),
    ("score", "score"),
    ("reserve", "reserve"),
    ("permit", "permit"),
    ("pre_bind", "pre_bind"),
    ("bind", "bind"),
    ("post_bind", "post_bind"),
)
_NODE_TAINT_EVENT: Final = ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT))
#: ``run_bind``'s answer when every Bind plugin skipped (the binding cycle turns it into
#: its error; nothing changes a Status it is handed), one object for every binding.
_BIND_SKIPPED: Final = Status(Code.SKIP)


def _with_node_taint_registrations(
    regs: list[tuple[str, ClusterEventWithHint]],
) -> list[tuple[str, ClusterEventWithHint]]:
    """Upstream ``buildQueueingHintMap``: a plugin that registers ``Node/Add`` but no
    ``UpdateNodeTaint`` also gets ``Node/UpdateNodeTaint`` with the default hint (always
    Queue), upstream's mitigation of kubernetes#109437 that it keeps with queueing hints
    on; so a node whose taints change requeues, e.g., a pod NodeAffinity rejected."""
    adds: list[str] = []
    taints: set[str] = set()
    for plugin, reg in regs:
        if reg.event.resource != NODE:
            continue
        if reg.event.action & ActionType.ADD and plugin not in adds:
            adds.append(plugin)
        if reg.event.action & ActionType.UPDATE_NODE_TAINT:
            taints.add(plugin)
    return regs + [(plugin, _NODE_TAINT_EVENT) for plugin in adds if plugin not in taints]


#: Kinds of plugins whose rejections the queue must be able to undo.
_REJECTING_POINTS = (
    "pre_enqueue",
    "kernel_pre_filter",
    "pre_filter",
    "filter",
    "reserve",
    "permit",
)


#: ``scheduler_plugin_evaluation_total``'s extension points, as upstream labels them,
#: by the profile's point names.
EVALUATED_POINTS = (
    ("preFilter", "PreFilter"),
    ("filter", "Filter"),
    ("preScore", "PreScore"),
    ("score", "Score"),
)


def evaluated_plugins(profile: Profile, points: PluginSet) -> list[tuple[str, str]]:
    """``(plugin, extension point)`` of every plugin upstream's framework instruments:
    the profile's plugins enabled at PreFilter, Filter, PreScore and Score
    (``Profile.evaluated``), or, for a profile built in code, its kernels' and Python
    plugins'."""
    if profile.evaluated is not None:
        return list(profile.evaluated)
    k = profile.kernels
    out: list[tuple[str, str]] = []
    filters = list(k.filters)
    if profile.dynamic_resources_at is not None or any(
        p.name == "DynamicResources" for p in points.filter
    ):
        at = profile.dynamic_resources_at
        filters.insert(len(filters) if at is None else at, "DynamicResources")
    pre = [f for f in filters if f in _core.PRE_FILTER_PLUGINS]
    pre += [p.name for p in points.pre_filter if p.name not in pre]
    out += [(p, "PreFilter") for p in pre]
    out += [(f, "Filter") for f in filters]
    out += [(p.name, "Filter") for p in points.filter if p.name not in filters]
    scores = [name for name, _ in k.scores]
    out += [(s, "PreScore") for s in scores if s in _core.PRE_SCORE_PLUGINS]
    out += [(p.name, "PreScore") for p in points.pre_score if p.name not in scores]
    out += [(s, "Score") for s in scores]
    out += [(p.name, "Score") for p in points.score if p.name not in scores]
    return list(dict.fromkeys(out))


def applies_to_pod(plugin: Any, pod: Pod) -> bool:
    """Whether ``plugin`` has work for ``pod`` (plugins without ``applies_to`` always do)."""
    applies = getattr(plugin, "applies_to", None)
    return applies is None or bool(applies(pod))


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` for a duration in seconds (``1m30s``, ``500ms``)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trim(ns / 1e3)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_trim(ns / 1e6)}ms"
    hours, rest = divmod(ns, 3_600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{_trim(rest / 1e9)}s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"


class WaitingPodHandle:
    """A pod parked at Permit (upstream ``waitingPod``)."""

    __slots__ = ("_future", "_pending", "pod")

    def __init__(
        self,
        pod: Pod,
        timeouts: Mapping[str, float],
        call_later: CallLater,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.pod = pod
        self._future: asyncio.Future[Status | None] = loop.create_future()
        self._pending: dict[str, Any] = {}
        for plugin, timeout in timeouts.items():
            self._pending[plugin] = call_later(timeout, self._time_out, plugin, timeout)

    def _time_out(self, plugin: str, timeout: float) -> None:
        self.reject(
            plugin,
            f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}",
        )

    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` allows the pod; the last pending plugin to allow releases it."""
        timer = self._pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._pending and not self._future.done():
            self._future.set_result(None)

    def reject(self, plugin: str, message: str) -> None:
        """Fail the pod as Unschedulable with ``message``."""
        for timer in self._pending.values():
            timer.cancel()
        if not self._future.done():
            self._future.set_result(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    @property
    def done(self) -> bool:
        return self._future.done()

    async def wait(self) -> Status | None:
        return await self._future


class WaitingPods:
    """uid → waiting pod, shared by the profiles of a scheduler."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodHandle] = {}

    def add(self, wp: WaitingPodHandle) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodHandle | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPodHandle]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)


def _wrap(point: str, plugin: str, status: Status) -> Status:
    """Upstream's ``running <Point> plugin "<name>": <err>`` for non-rejections."""
    return Status(
        Code.ERROR,
        f'running {point} plugin "{plugin}": {status.message}',
        plugin=plugin,
        error=status.error,
    )


class _PostFilterFold:
    """PostFilter plugins' outcomes folded as upstream ``RunPostFilterPlugins``: the first
    success or UnschedulableAndUnresolvable (or error) decides; otherwise the rejection
    reasons add up, and the last result of a rejecting plugin that asks for a change is
    kept (a preemption that found no candidate clears the pod's nomination)."""

    __slots__ = ("_outcome", "reasons", "rejector", "result")

    def __init__(self) -> None:
        self._outcome: tuple[PostFilterResult | None, Status] | None = None
        self.result: PostFilterResult | None = None
        self.reasons: list[str] = []
        self.rejector = ""

    def add(self, plugin: str, res: PostFilterResult | None, s: Status | None) -> bool:
        """Fold one plugin's answer; True when it decides (stop there)."""
        if s is None or s.is_success():
            self._outcome = (res, s or Status())
        elif s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self._outcome = (res, s.with_plugin(plugin))
        elif not s.is_rejected():
            # Upstream returns AsStatus(s.AsError()).WithPlugin(name): the plugin's own
            # message, not wrapped as the other points' errors are.
            self._outcome = (None, Status(Code.ERROR, s.message, plugin=plugin, error=s.error))
        else:
            if res is not None:
                self.result = res
            self.reasons.extend(s.reasons)
            self.rejector = self.rejector or plugin
            return False
        return True

    def outcome(self) -> tuple[PostFilterResult | None, Status]:
        if self._outcome is not None:
            return self._outcome
        return self.result, Status(Code.UNSCHEDULABLE, *self.reasons, plugin=self.rejector)


class Framework:
    """The plugins of one profile and the rules to run them."""

    def __init__(
        self,
        profile: Profile,
        *,
        plugins: Iterable[Any] | None = None,
        handle: Handle | None = None,
        metrics: SchedulerMetrics | None = None,
        waiting_pods: WaitingPods | None = None,
        score_weights: Mapping[str, int] | None = None,
        call_later: CallLater | None = None,
        clock: Callable[[], float] = time.perf_counter,
        extenders: Sequence[Extender] = (),
    ) -> None:
        self.profile = profile
        #: The scheduler's extenders (the same for every profile, as upstream).
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self.name = profile.scheduler_name
        self.metrics = metrics or SchedulerMetrics()
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self._call_later = call_later
        self._clock = clock
        if plugins is None:
            configured = getattr(profile, "plugins", None)
            plugins = (
                default_plugins(filters=profile.filters) if configured is None else list(configured)
            )
        self.plugins: list[Any] = list(plugins)
        if handle is not None:
            for p in self.plugins:
                setup = getattr(p, "setup", None)
                if callable(setup):
                    setup(handle)
        self.points = PluginSet()
        for p in self.plugins:
            for point, method in _EXTENSION_POINTS:
                if callable(getattr(p, method, None)):
                    getattr(self.points, point).append(p)
        weights = dict(score_weights or {})
        self.score_weights = {
            p.name: int(weights.get(p.name, getattr(p, "weight", 1)) or 1)
            for p in self.points.score
        }
        self._success_series: dict[str, HistogramSeries] = {}
        #: For :meth:`skip_pre_bind`: the PreBind plugin list it was worked out for, their
        #: names and the ``PreBindPreFlight``/``Skip`` series.
        self._skipped_pre_bind: tuple[list[Any], frozenset[str], HistogramSeries] | None = None
        #: ``scheduler_plugin_evaluation_total``'s values, as this framework took them
        #: (a reset of the metrics leaves it counting into this dict, as upstream's
        #: framework keeps its children after a Reset of the vector).
        self._evals = self.metrics.plugin_evaluation.values
        evaluated = evaluated_plugins(profile, self.points)
        for plugin, point in evaluated:
            self._evals.setdefault((plugin, point, self.name), 0.0)
        #: The Rust totals of the attempts this framework's scheduling calls count
        #: (``counts=``), read by the metric at scrape time.
        self.eval_counts = _core.EvaluationCounts()
        self.metrics.plugin_evaluation.add_source(self.name, self.eval_counts)
        #: The PreFilter plugins' places in the profile's PreFilter order.
        self._pre_filter_rank = {
            plugin: i
            for i, plugin in enumerate(p for p, point in evaluated if point == "PreFilter")
        }
        #: Score plugins of ``_ignoring`` this view left out: upstream calls them on
        #: every scored node all the same (DynamicResources' Score has no PreScore).
        self._ignored_scores: tuple[str, ...] = ()
        #: Python PreFilter/Filter/PreScore/Score plugins run around the Rust call.
        self.python_placement = self.has_python_placement
        #: The Python PreFilter plugins in order (a for_pod view keeps the full list).
        self._pre_filter_order = tuple(p.name for p in self.points.pre_filter)
        #: Reserve/Permit plugins that run for every pod (no ``applies_to``).
        self._always_reserve = self._has_unconditional_reserve()
        # Series kept at hand for the per-pod hot path.
        self.ok_filter = self._success("Filter")
        self.ok_reserve = self._success("Reserve")
        self.ok_permit = self._success("Permit")
        self.ok_bind = self._success("Bind")
        self.scheduled_series = self.metrics.attempt_series("scheduled", self.name)
        self._attempts_key = ("scheduled", self.name)
        #: Plugins with ``ignores_pod(pod)``: for a pod they all ignore, the cycle runs
        #: :attr:`_without_ignoring` (the same plugins minus those, at every point but
        #: PreEnqueue, QueueSort and PostFilter), e.g. DynamicResources for a pod that
        #: names no ResourceClaim, so such pods keep the fast paths.
        self._ignoring = [p for p in self.plugins if callable(getattr(p, "ignores_pod", None))]
        self._without_ignoring: Framework | None = None
        if self._ignoring:
            view = copy.copy(self)
            view._ignoring = []
            gone = {id(p) for p in self._ignoring}
            kept = {"pre_enqueue", "queue_sort", "post_filter"}
            view.points = PluginSet(
                **{
                    point: [
                        p for p in getattr(self.points, point) if point in kept or id(p) not in gone
                    ]
                    for point, _ in _EXTENSION_POINTS
                }
            )
            view.python_placement = view.has_python_placement
            view._ignored_scores = tuple(p.name for p in self.points.score if id(p) in gone)
            # The view's attempts also count the Score of the plugins it leaves out.
            view.eval_counts = _core.EvaluationCounts()
            self.metrics.plugin_evaluation.add_source(
                self.name, view.eval_counts, view._ignored_scores
            )
            view._always_reserve = view._has_unconditional_reserve()
            self._without_ignoring = view

    def _has_unconditional_reserve(self) -> bool:
        """A Reserve or Permit plugin runs for every pod (it has no ``applies_to``)."""
        return any(
            getattr(p, "applies_to", None) is None
            for p in (*self.points.reserve, *self.points.permit)
        )

    def for_pod(self, pod: Pod) -> Framework:
        """The framework a scheduling cycle of ``pod`` runs: this one, or the view
        without the plugins that ignore the pod (see ``_ignoring``)."""
        view = self._without_ignoring
        if view is None:
            return self
        for p in self._ignoring:
            if not p.ignores_pod(pod):
                return self
        return view

    def _success(self, point: str) -> HistogramSeries:
        series = self._success_series.get(point)
        if series is None:
            series = self._success_series[point] = (
                self.metrics.framework_extension_point_duration.child((point, "Success", self.name))
            )
        return series

    def record_scheduled(self, seconds: float) -> None:
        """``scheduler_schedule_attempts_total{result="scheduled"}`` and its duration."""
        values = self.metrics.schedule_attempts.values
        key = self._attempts_key
        values[key] = values.get(key, 0.0) + 1.0
        self.scheduled_series.observe(seconds)

    # ---- introspection -------------------------------------------------------------

    @property
    def pre_enqueue_plugins(self) -> list[Any]:
        return self.points.pre_enqueue

    @property
    def sort_key(self) -> SortKey:
        """The QueueSort order as a heap key."""
        if not self.points.queue_sort:
            return priority_sort_key
        plugin = self.points.queue_sort[0]
        key = getattr(plugin, "sort_key", None)
        if callable(key):
            return key  # type: ignore[no-any-return]
        import functools

        cmp = functools.cmp_to_key(
            lambda a, b: -1 if plugin.less(a, b) else (1 if plugin.less(b, a) else 0)
        )
        return lambda info: cmp(info)

    @property
    def has_python_placement(self) -> bool:
        """Python PreFilter/Filter/PreScore/Score plugins run around the Rust call."""
        p = self.points
        return bool(p.pre_filter or p.filter or p.pre_score or p.score)

    @property
    def has_post_filter(self) -> bool:
        return bool(self.points.post_filter)

    def enqueue_registrations(self) -> list[tuple[str, ClusterEventWithHint]]:
        """``(plugin, registration)`` for the queue: built-in (Rust) filters from the
        event table, Python plugins from their ``events_to_register``."""
        out: list[tuple[str, ClusterEventWithHint]] = []
        kernels = set(self.profile.filters)
        # A kernel plugin's Python half may hold hints that read the scheduler's state.
        halves = {
            p.name: p
            for p in self.plugins
            if p.name in kernels and callable(getattr(p, "events_to_register", None))
        }
        for name in self.profile.filters:
            half = halves.get(name)
            regs = half.events_to_register() if half is not None else events_for(name)
            out.extend((name, reg) for reg in regs)
        seen: set[int] = set()
        for point in _REJECTING_POINTS:
            for p in getattr(self.points, point):
                if id(p) in seen or p.name in kernels:
                    # The Python half of a plugin with Rust kernels: registered above.
                    continue
                seen.add(id(p))
                fn = getattr(p, "events_to_register", None)
                regs = list(fn()) if callable(fn) else list(ALL_EVENTS)
                out.extend((p.name, reg) for reg in regs)
        if self.extenders:
            # Extenders register no events: a pod they rejected is retried on any.
            out.extend((EXTENDER_NAME, reg) for reg in ALL_EVENTS)
        return _with_node_taint_registrations(out)

    # ---- metrics -------------------------------------------------------------------

    def record_evaluations(
        self,
        result: Any,
        *,
        state: CycleState | None = None,
        pre_filter_only: bool = False,
        scored: bool = True,
    ) -> None:
        """Add a core result's plugin evaluations (``ScheduleResult`` or
        ``PreemptionDryRun``) to ``scheduler_plugin_evaluation_total``.
        ``pre_filter_only``: a Python PreFilter stopped the attempt
        (``state.pre_filter_rejector``), so the core's Filter and Score did not happen,
        nor its PreFilters after that one. A built-in PreFilter that rejected the pod
        takes back the Python PreFilters after it that ``state`` counted. ``scored``
        False: a Filter error ended the attempt before PreScore and Score."""
        values = self._evals
        name = self.name
        rank = self._pre_filter_rank
        stop = len(rank)
        if pre_filter_only and state is not None and state.pre_filter_rejector in rank:
            stop = rank[state.pre_filter_rejector]
        for plugin, point, n in result.plugin_evaluations:
            if pre_filter_only and (point != "PreFilter" or rank.get(plugin, 0) > stop):
                continue
            if not scored and point in ("PreScore", "Score"):
                continue
            key = (plugin, point, name)
            values[key] = values.get(key, 0.0) + n
        if state is not None and state.pre_filter_counted and result.pre_filter_msg is not None:
            plugins = result.unschedulable_plugins()
            rejector = rank.get(plugins[-1], stop) if plugins else stop
            if not pre_filter_only or rejector < stop:
                for plugin in state.pre_filter_counted:
                    if rank.get(plugin, 0) > rejector:
                        key = (plugin, "PreFilter", name)
                        values[key] = values.get(key, 0.0) - 1
                state.pre_filter_counted = []
        if self._ignored_scores and scored and not pre_filter_only:
            nodes = getattr(result, "scored_nodes", 0)
            if nodes:
                for plugin in self._ignored_scores:
                    key = (plugin, "Score", name)
                    values[key] = values.get(key, 0.0) + nodes

    def _evaluated(self, plugin: str, point: str, n: int = 1) -> None:
        key = (plugin, point, self.name)
        values = self._evals
        values[key] = values.get(key, 0.0) + n

    def observe(self, point: str, code: Code, seconds: float) -> None:
        if code is Code.SUCCESS:
            self._success(point).observe(seconds)
        else:
            self.metrics.extension_point(point, code.value, self.name, seconds)

    def _observe_plugin(
        self, state: CycleState, plugin: str, point: str, status: Status | None, start: float
    ) -> None:
        if state.record_plugin_metrics:
            code = "Success" if status is None else status.code.value
            self.metrics.plugin_execution_duration.observe(
                (plugin, point, code), self._clock() - start
            )

    # ---- scheduling cycle: around the Rust call --------------------------------------

    def needs_kernel_pre_filter(self, pod: Pod) -> bool:
        """Whether a Kernel PreFilter plugin has work for ``pod``."""
        return any(applies_to_pod(p, pod) for p in self.points.kernel_pre_filter)

    def needs_pre_bind(self, pod: Pod) -> bool:
        """Whether a PreBind plugin may have work for ``pod`` (its binding cycle may then
        wait on the API for a while, e.g. for its volumes)."""
        return any(applies_to_pod(p, pod) for p in self.points.pre_bind)

    def needs_reserve_or_permit(self, pod: Pod) -> bool:
        """Whether a Reserve or Permit plugin has work for ``pod``."""
        if self._always_reserve:
            return True
        return any(applies_to_pod(p, pod) for p in self.points.reserve) or any(
            applies_to_pod(p, pod) for p in self.points.permit
        )

    def run_kernel_pre_filter(
        self, state: CycleState, pod: Pod, compiled: CompiledPod
    ) -> tuple[CompiledPod, Status | None]:
        """The Kernel PreFilter plugins that apply to ``pod``: ``compiled`` with their
        requests attached, or the error status of a plugin that raised."""
        requests: list[object] = []
        for p in self.points.kernel_pre_filter:
            if not applies_to_pod(p, pod):
                continue
            t = self._clock()
            try:
                req = p.kernel_pre_filter(state, pod)
            except Exception as exc:
                s = Status.from_error(exc, p.name)
                self._observe_plugin(state, p.name, "PreFilter", s, t)
                return compiled, _wrap("PreFilter", p.name, s)
            self._observe_plugin(state, p.name, "PreFilter", None, t)
            if req is not None:
                requests.append(req)
        if not requests:
            return compiled, None
        return compiled.with_requests(requests), None

    def run_pre_filter(
        self, state: CycleState, pod: Pod, *, count: bool = True
    ) -> tuple[frozenset[str] | None, Status | None]:
        """Python PreFilter plugins: the node names they restrict the attempt to (None:
        all) and the status (None: success). ``count``: add their evaluations to
        ``scheduler_plugin_evaluation_total``."""
        start = self._clock()
        skip: set[str] = set()
        nodes: frozenset[str] | None = None
        with_nodes: list[str] = []
        result: Status | None = None
        state.pre_filter_order = self._pre_filter_order
        for p in self.points.pre_filter:
            t = self._clock()
            try:
                res, s = p.pre_filter(state, pod)
            except Exception as exc:
                res, s = None, Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "PreFilter", s, t)
            if s is not None and s.code is Code.SKIP:
                skip.add(p.name)
                continue
            if count:
                self._evaluated(p.name, "PreFilter")
                state.pre_filter_counted.append(p.name)
            if s is not None and not s.is_success():
                s.plugin = p.name
                if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    result = s
                    state.pre_filter_rejector = p.name
                    break
                if s.code is Code.UNSCHEDULABLE:
                    result = s
                    continue
                result = _wrap("PreFilter", p.name, s)
                break
            if res is not None and res.node_names is not None:
                with_nodes.append(p.name)
                nodes = res.node_names if nodes is None else nodes & res.node_names
                if not nodes:
                    names = sorted(with_nodes)
                    msg = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    result = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg, plugin=p.name)
                    state.pre_filter_rejector = p.name
                    break
        state.skip_filter_plugins = frozenset(skip)
        state.pre_filter_node_plugins = tuple(sorted(with_nodes))
        self.observe(
            "PreFilter", Code.SUCCESS if result is None else result.code, self._clock() - start
        )
        return nodes, result

    def run_filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        """Python Filter plugins on one node that passed the built-in filters."""
        for p in self.points.filter:
            if p.name in state.skip_filter_plugins:
                continue
            self._evaluated(p.name, "Filter")
            t = self._clock()
            try:
                s: Status | None = p.filter(state, pod, node)
            except Exception as exc:
                s = Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "Filter", s, t)
            if s is not None and not s.is_success():
                s.plugin = p.name
                if not s.is_rejected():
                    # Upstream RunFilterPlugins' wording differs from the other points.
                    return Status(
                        Code.ERROR,
                        f'running "{p.name}" filter plugin: {s.message}',
                        plugin=p.name,
                        error=s.error,
                    )
                return s
        return None

    def run_post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        start = self._clock()
        fold = _PostFilterFold()
        for p in self.points.post_filter:
            t = self._clock()
            try:
                out = p.post_filter(state, pod, statuses)
                if inspect.isawaitable(out):
                    # Only the asynchronous cycle (a pod some extender is interested
                    # in) may await a PostFilter: see run_post_filter_async.
                    if inspect.iscoroutine(out):
                        out.close()
                    raise TypeError("post_filter returned an awaitable in a synchronous cycle")
                res, s = out
            except Exception as exc:
                res, s = None, Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "PostFilter", s, t)
            if fold.add(p.name, res, s):
                break
        outcome = fold.outcome()
        self.observe("PostFilter", outcome[1].code, self._clock() - start)
        return outcome

    async def run_post_filter_async(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """:meth:`run_post_filter` in the asynchronous cycle of a pod some extender is
        interested in: a plugin's ``post_filter`` may return an awaitable of its
        ``(result, status)`` there (DefaultPreemption awaiting the extenders'
        ``process_preemption``). Pods no extender is interested in never come here."""
        start = self._clock()
        fold = _PostFilterFold()
        for p in self.points.post_filter:
            t = self._clock()
            try:
                out = p.post_filter(state, pod, statuses)
                res, s = (await out) if inspect.isawaitable(out) else out
            except Exception as exc:
                res, s = None, Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "PostFilter", s, t)
            if fold.add(p.name, res, s):
                break
        outcome = fold.outcome()
        self.observe("PostFilter", outcome[1].code, self._clock() - start)
        return outcome

    def run_pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        start = self._clock()
        skip: set[str] = set()
        result: Status | None = None
        for p in self.points.pre_score:
            t = self._clock()
            try:
                s = p.pre_score(state, pod, nodes)
            except Exception as exc:
                s = Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "PreScore", s, t)
            if s is not None and s.code is Code.SKIP:
                skip.add(p.name)
                continue
            self._evaluated(p.name, "PreScore")
            if s is not None and not s.is_success():
                result = _wrap("PreScore", p.name, s)
                break
        state.skip_score_plugins = frozenset(skip)
        self.observe(
            "PreScore", Code.SUCCESS if result is None else result.code, self._clock() - start
        )
        return result

    def run_score(
        self,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        breakdown: dict[str, dict[str, tuple[int, int]]] | None = None,
    ) -> tuple[dict[str, int], Status | None]:
        """Weighted Python scores per node (normalized to 0-100 per plugin). With
        ``breakdown``, each plugin's ``(raw, normalized)`` score per node is written
        there too (``ksched explain``)."""
        start = self._clock()
        totals = dict.fromkeys((n.name for n in nodes), 0)
        status: Status | None = None
        for p in self.points.score:
            if p.name in state.skip_score_plugins:
                continue
            self._evaluated(p.name, "Score", len(nodes))
            t = self._clock()
            try:
                scores = [NodeScore(n.name, int(p.score(state, pod, n))) for n in nodes]
                raw = [x.score for x in scores] if breakdown is not None else None
                normalize = getattr(p, "normalize_score", None)
                s = normalize(state, pod, scores) if callable(normalize) else None
            except Exception as exc:
                scores, s = [], Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "Score", s, t)
            if s is not None and not s.is_success():
                status = _wrap("Score", p.name, s)
                break
            weight = self.score_weights.get(p.name, 1)
            bad = next((x for x in scores if not MIN_NODE_SCORE <= x.score <= MAX_NODE_SCORE), None)
            if bad is not None:
                status = Status(
                    Code.ERROR,
                    f'plugin "{p.name}" returns an invalid score {bad.score}, it should in the '
                    f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    plugin=p.name,
                )
                break
            for x in scores:
                totals[x.name] += x.score * weight
            if breakdown is not None and raw is not None:
                breakdown[p.name] = {x.name: (r, x.score) for x, r in zip(scores, raw, strict=True)}
        self.observe(
            "Score", Code.SUCCESS if status is None else status.code, self._clock() - start
        )
        return totals, status

    # ---- Reserve and Permit ------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        start = self._clock()
        result: Status | None = None
        for p in self.points.reserve:
            if not applies_to_pod(p, pod):
                continue
            t = self._clock()
            try:
                s = p.reserve(state, pod, node)
            except Exception as exc:
                s = Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "Reserve", s, t)
            if s is not None and not s.is_success():
                result = s.with_plugin(p.name) if s.is_rejected() else _wrap("Reserve", p.name, s)
                break
        self.observe(
            "Reserve", Code.SUCCESS if result is None else result.code, self._clock() - start
        )
        return result

    def run_unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        """Unreserve of every reserve plugin, in reverse order; errors are logged."""
        start = self._clock()
        for p in reversed(self.points.reserve):
            if not applies_to_pod(p, pod):
                continue
            t = self._clock()
            try:
                p.unreserve(state, pod, node)
            except Exception:
                log.exception("Unreserve of plugin %s failed for pod %s", p.name, pod.key)
            self._observe_plugin(state, p.name, "Unreserve", None, t)
        self.observe("Unreserve", Code.SUCCESS, self._clock() - start)

    def run_permit(
        self, state: CycleState, pod: Pod, node: str, *, park: bool = True
    ) -> Status | None:
        """None: allowed; ``Wait``: parked (see :meth:`wait_on_permit`); otherwise the
        rejection or error. ``park=False`` only reports the Wait (a pod group cycle
        asks whether the member would wait): its reasons are then upstream's, the last
        waiting plugin's followed by "one or more plugins asked to wait and no plugin
        rejected pod"."""
        start = self._clock()
        timeouts: dict[str, float] = {}
        wait_messages: list[str] = []
        result: Status | None = None
        for p in self.points.permit:
            if not applies_to_pod(p, pod):
                continue
            t = self._clock()
            try:
                s, timeout = p.permit(state, pod, node)
            except Exception as exc:
                s, timeout = Status.from_error(exc, p.name), 0.0
            self._observe_plugin(state, p.name, "Permit", s, t)
            if s is None or s.is_success():
                continue
            if s.is_rejected():
                result = s.with_plugin(p.name)
                break
            if s.code is Code.WAIT:
                timeouts[p.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                wait_messages = [*s.reasons]  # the last waiting plugin's status
                continue
            result = _wrap("Permit", p.name, s)
            break
        if result is None and timeouts and not park:
            result = Status(
                Code.WAIT,
                *wait_messages,
                "one or more plugins asked to wait and no plugin rejected pod",
            )
        elif result is None and timeouts:
            loop = asyncio.get_running_loop()
            wp = WaitingPodHandle(pod, timeouts, self._call_later or loop.call_later, loop)
            self.waiting_pods.add(wp)
            result = Status(
                Code.WAIT,
                f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"',
            )
        self.observe(
            "Permit", Code.SUCCESS if result is None else result.code, self._clock() - start
        )
        return result

    def will_wait_on_permit(self, pod: Pod) -> bool:
        return self.waiting_pods.get(pod.uid) is not None

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        """Block until a waiting pod is allowed (None) or rejected."""
        wp = self.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        start = self._clock()
        try:
            s = await wp.wait()
        finally:
            self.waiting_pods.remove(pod.uid)
        code = "Success" if s is None else s.code.value
        self.metrics.permit_wait_duration.observe((code,), self._clock() - start)
        if s is None or s.is_success():
            return None
        if s.is_rejected():
            return s
        return Status(Code.ERROR, f"waiting on permit for pod: {s.message}", plugin=s.plugin)

    # ---- binding cycle ---------------------------------------------------------------

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        """Upstream ``RunPreBindPreFlights``: None when some PreBind plugin has work for
        the pod, ``Skip`` when none has, else the error. A plugin without
        ``pre_bind_pre_flight`` always has work; one whose ``applies_to`` rejects the pod
        never has. The plugins that said Skip do not run at PreBind."""
        start = self._clock()
        result: Status | None = Status(Code.SKIP)
        skip: set[str] = set()
        parallel: set[str] = set()
        for p in self.points.pre_bind:
            if not applies_to_pod(p, pod):
                skip.add(p.name)
                continue
            if getattr(p, "pre_bind_parallel", False):
                parallel.add(p.name)
            fn = getattr(p, "pre_bind_pre_flight", None)
            t = self._clock()
            try:
                s = fn(state, pod, node) if callable(fn) else None
            except Exception as exc:
                s = Status.from_error(exc, p.name)
            self._observe_plugin(state, p.name, "PreBindPreFlight", s, t)
            if s is None or s.is_success():
                result = None
            elif s.code is Code.SKIP:
                skip.add(p.name)
            elif s.code is Code.ERROR:
                result = Status(
                    Code.ERROR,
                    f'running PreBindPreFlight "{p.name}": {s.message}',
                    plugin=p.name,
                    error=s.error,
                )
                break
            else:
                result = Status(
                    Code.ERROR,
                    f'PreBindPreFlight {p.name} returned "{s.code.value}", which is '
                    "unsupported. It is supposed to return Success, Skip, or Error status",
                    plugin=p.name,
                )
                break
        state.skip_pre_bind_plugins = frozenset(skip)
        state.parallel_pre_bind_plugins = frozenset(parallel)
        code = Code.SUCCESS if result is None else result.code
        self.observe("PreBindPreFlight", code, self._clock() - start)
        return result

    def skip_pre_bind(self, state: CycleState) -> None:
        """PreBindPreFlight and PreBind of a pod no PreBind plugin applies to
        (:meth:`needs_pre_bind` is False): what :meth:`run_pre_bind_pre_flights` (Skip,
        every plugin skipped) and :meth:`run_pre_bind` (nothing to run) would do, without
        asking each plugin again."""
        clock = self._clock
        start = clock()
        kept = self._skipped_pre_bind
        if kept is None or kept[0] is not self.points.pre_bind:
            names = frozenset(p.name for p in self.points.pre_bind)
            series = self.metrics.framework_extension_point_duration.child(
                ("PreBindPreFlight", Code.SKIP.value, self.name)
            )
            kept = self._skipped_pre_bind = (self.points.pre_bind, names, series)
        state.skip_pre_bind_plugins = kept[1]
        state.parallel_pre_bind_plugins = frozenset()
        took = clock() - start
        kept[2].observe(took)
        self._success("PreBind").observe(took)

    def _pre_bind_groups(self, state: CycleState, pod: Pod) -> list[list[Any]]:
        """upstream ``getPreBindPluginGroups``: the PreBind plugins to run, in order,
        consecutive ones that allow it (PreBindPreFlight's ``AllowParallel``, here
        ``pre_bind_parallel``) grouped to run concurrently."""
        groups: list[list[Any]] = []
        group: list[Any] = []
        for p in self.points.pre_bind:
            runs = p.name not in state.skip_pre_bind_plugins and applies_to_pod(p, pod)
            if p.name in state.parallel_pre_bind_plugins:
                if runs:
                    group.append(p)
                continue
            if group:
                groups.append(group)
                group = []
            if runs:
                groups.append([p])
        if group:
            groups.append(group)
        return groups

    async def _run_one_pre_bind(
        self, p: Any, state: CycleState, pod: Pod, node: str
    ) -> Status | None:
        t = self._clock()
        try:
            s = await p.pre_bind(state, pod, node)
        except Exception as exc:
            s = Status.from_error(exc, p.name)
        self._observe_plugin(state, p.name, "PreBind", s, t)
        if s is not None and not s.is_success():
            return s.with_plugin(p.name) if s.is_rejected() else _wrap("PreBind", p.name, s)
        return None

    async def _run_pre_bind_group(
        self, group: list[Any], state: CycleState, pod: Pod, node: str
    ) -> Status | None:
        """The plugins of one group concurrently; the first failure cancels the others
        and is the answer (upstream: ``some other PreBind operation failed``)."""
        tasks = [asyncio.ensure_future(self._run_one_pre_bind(p, state, pod, node)) for p in group]
        try:
            for next_done in asyncio.as_completed(tasks):
                s = await next_done
                if s is not None:
                    return s
            return None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run_pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        start = self._clock()
        result: Status | None = None
        for group in self._pre_bind_groups(state, pod):
            if len(group) == 1:
                result = await self._run_one_pre_bind(group[0], state, pod, node)
            else:
                result = await self._run_pre_bind_group(group, state, pod, node)
            if result is not None:
                break
        self.observe(
            "PreBind", Code.SUCCESS if result is None else result.code, self._clock() - start
        )
        return result

    async def run_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        """The first bind plugin that does not return Skip decides."""
        clock = self._clock
        start = clock()
        result: Status | None = _BIND_SKIPPED
        for p in self.points.bind:
            t = clock()
            try:
                s = await p.bind(state, pod, node)
            except Exception as exc:
                s = Status.from_error(exc, p.name)
            if state.record_plugin_metrics:
                self._observe_plugin(state, p.name, "Bind", s, t)
            if s is not None and s.code is Code.SKIP:
                continue
            if s is not None and not s.is_success():
                result = s.with_plugin(p.name) if s.is_rejected() else _wrap("Bind", p.name, s)
            else:
                result = None
            break
        if result is None:
            self.ok_bind.observe(clock() - start)
        else:
            self.observe("Bind", result.code, clock() - start)
        return result

    def run_post_bind(self, state: CycleState, pod: Pod, node: str) -> None:
        start = self._clock()
        for p in self.points.post_bind:
            t = self._clock()
            try:
                p.post_bind(state, pod, node)
            except Exception:
                log.exception("PostBind of plugin %s failed for pod %s", p.name, pod.key)
            self._observe_plugin(state, p.name, "PostBind", None, t)
        self.observe("PostBind", Code.SUCCESS, self._clock() - start)


def sort_key_of(frameworks: Iterable[Framework]) -> SortKey:
    """The queue's order: the (single, validated) QueueSort of the profiles."""
    for fw in frameworks:
        return fw.sort_key
    return priority_sort_key
