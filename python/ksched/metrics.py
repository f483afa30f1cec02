"""Scheduler metrics with kube-scheduler's names, labels and bucket boundaries.

Every metric lives in a per-:class:`~ksched.scheduler.Scheduler` ``CollectorRegistry``
(tests and benchmarks create many schedulers in one process), exposed with
``prometheus_client.generate_latest(metrics.registry)``.

The scheduling loop records several observations per pod, so the hot path does not go
through ``prometheus_client``'s metric objects (a label lookup and a lock per call).
Counters and histograms here are plain Python numbers and lists, updated in a few
hundred nanoseconds from the single event-loop thread, and turned into metric families
only when the registry is scraped. Gauges that mirror a size (pending pods per queue,
scheduler cache size) are not maintained at all: they are read from their owner at
scrape time through callbacks. Plugin execution durations are sampled (10% of
scheduling cycles), as upstream does.

Metric names and labels (upstream ``pkg/scheduler/metrics``):

* ``scheduler_schedule_attempts_total{result,profile}`` (result: scheduled,
  unschedulable, error)
* ``scheduler_scheduling_attempt_duration_seconds{result,profile}``
* ``scheduler_pending_pods{queue}`` (active, backoff, unschedulable, gated)
* ``scheduler_queue_incoming_pods_total{queue,event}``
* ``scheduler_pod_scheduling_attempts``
* ``scheduler_pod_scheduling_sli_duration_seconds{attempts}``
* ``scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}``
* ``scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}``
* ``scheduler_unschedulable_pods{plugin,profile}``
* ``scheduler_plugin_evaluation_total{plugin,extension_point,profile}`` (PreFilter,
  Filter, PreScore, Score): upstream's instrumented plugins count a PreFilter or PreScore
  call that did not return Skip, and a Filter or Score call per node. The Rust core
  keeps the running totals of the attempts the scheduling loop runs without Python
  plugins (``_core.EvaluationCounts``, one per framework, added to inside the scheduling
  call), read here at scrape time (:class:`EvaluationCounter`), so an attempt costs the
  metric no Python work; the Python plugins and the attempts that run them add their
  counts to :attr:`EvaluationCounter.values`. Every plugin enabled at those points has a
  series from the start, at 0, as upstream creates them with the framework
* ``scheduler_permit_wait_duration_seconds{result}``
* ``scheduler_cache_size{type}`` (nodes, pods, assumed_pods)
* ``scheduler_preemption_attempts_total``, ``scheduler_preemption_victims``
* ``scheduler_scheduling_algorithm_duration_seconds`` (placement: PreFilter to Score)
* ``scheduler_event_handling_duration_seconds{event}`` (informer handlers, by event label)
* ``scheduler_inflight_events{event}`` (events recorded for pods in flight, and
  ``PodPopped``: the pods in flight), read from the queue at scrape time
* ``scheduler_goroutines{operation}`` (``binding``: binding cycles in flight; ``Filter``
  and ``InterPodAffinity``: the parallel node work of a cycle, which never overlaps a
  scrape on the event loop, so 0 at scrape time; ``prioritizing_extender`` with extenders)
* ``scheduler_queueing_hint_execution_duration_seconds{plugin,event,hint}``
* ``scheduler_preemption_goroutines_duration_seconds{result}`` and
  ``scheduler_preemption_goroutines_execution_total{result}`` (the background victim
  deletions of a preemption)
* ``scheduler_pod_scheduled_after_flush_total`` (pods bound after the unschedulable-pods
  timeout moved them)
* ``scheduler_dra_bindingconditions_allocations_total{profile,driver,status}``,
  ``scheduler_dra_bindingconditions_wait_duration_seconds{profile,driver,status}``
* with the GenericWorkload gate: ``scheduler_podgroup_schedule_attempts_total{result,
  profile}``, ``scheduler_podgroup_scheduling_attempt_duration_seconds{result,profile}``,
  ``scheduler_podgroup_scheduling_algorithm_duration_seconds``
* ``scheduler_batch_attempts_total{profile,result}`` — ksched's opportunistic batching
  places a whole batch with one Rust call: the first pod of a call counts ``no_hint``, the
  others ``hint_used`` (placed from the batch's result, as upstream's hinted pods are).
  ``scheduler_batch_cache_flushed_total{profile,reason}``,
  ``scheduler_get_node_hint_duration_seconds{hinted,profile}`` and
  ``scheduler_store_schedule_results_duration_seconds{profile}`` are registered with
  upstream's labels and buckets but get no series: ksched keeps no cache of scored nodes
  between cycles, so there is nothing to flush, look up or store. Like every vector
  without a series, they are not exported (client_golang's ``Gather`` leaves such a
  family out; :func:`ksched.component_metrics.render` does the same), while a metric
  without labels always has its one series (0 until observed).

``reset`` clears the counters and histograms (``DELETE /metrics``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

__all__ = [
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "Counter",
    "EvaluationCounter",
    "Histogram",
    "HistogramSeries",
    "SchedulerMetrics",
    "exponential_buckets",
]

#: Percentage of scheduling cycles whose plugin durations are recorded (upstream 10).
PLUGIN_METRICS_SAMPLE_PERCENT = 10

Labels = tuple[str, ...]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream's ``metrics.ExponentialBuckets``: ``count`` upper bounds from ``start``."""
    return tuple(start * factor**i for i in range(count))


class Counter:
    """A counter vector: label values → value."""

    __slots__ = ("doc", "labelnames", "name", "values")

    def __init__(self, name: str, doc: str, labelnames: Labels = ()) -> None:
        self.name = name
        self.doc = doc
        self.labelnames = labelnames
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        values = self.values
        values[labels] = values.get(labels, 0.0) + amount

    def get(self, labels: Labels = ()) -> float:
        return self.values.get(labels, 0.0)

    def family(self) -> Metric:
        fam = CounterMetricFamily(self.name, self.doc, labels=list(self.labelnames))
        for labels, value in list(self.values.items()):
            fam.add_metric(list(labels), value)
        if not self.labelnames and not self.values:
            fam.add_metric([], 0.0)  # a plain counter is 0 from its registration on
        return fam


class _EvaluationSource(Protocol):
    """What :class:`EvaluationCounter` reads at scrape time (``_core.EvaluationCounts``)."""

    def counts(self) -> list[tuple[str, str, int]]: ...
    @property
    def scored(self) -> int: ...


class EvaluationCounter(Counter):
    """``scheduler_plugin_evaluation_total``: :attr:`values` (the Python plugins'
    counts, and every instrumented plugin's series at 0) plus the running totals each
    framework's Rust counts hold, added up when read (:meth:`totals`)."""

    __slots__ = ("sources",)

    def __init__(self, name: str, doc: str, labelnames: Labels = ()) -> None:
        super().__init__(name, doc, labelnames)
        #: ``(profile, counts, score plugins)``: the Rust totals of one framework; the
        #: score plugins (those a framework view leaves out for the pods it places,
        #: which upstream calls all the same) count one Score per node scored.
        self.sources: list[tuple[str, _EvaluationSource, tuple[str, ...]]] = []

    def add_source(
        self, profile: str, counts: _EvaluationSource, scored_plugins: tuple[str, ...] = ()
    ) -> None:
        self.sources.append((profile, counts, scored_plugins))

    def totals(self) -> dict[Labels, float]:
        """Every series' value: :attr:`values` plus the Rust totals."""
        out = dict(self.values)
        for profile, counts, scored_plugins in self.sources:
            for plugin, point, n in counts.counts():
                key = (plugin, point, profile)
                out[key] = out.get(key, 0.0) + n
            if scored_plugins:
                nodes = counts.scored
                if nodes:
                    for plugin in scored_plugins:
                        key = (plugin, "Score", profile)
                        out[key] = out.get(key, 0.0) + nodes
        return out

    def get(self, labels: Labels = ()) -> float:
        return self.totals().get(labels, 0.0)

    def family(self) -> Metric:
        fam = CounterMetricFamily(self.name, self.doc, labels=list(self.labelnames))
        for labels, value in self.totals().items():
            fam.add_metric(list(labels), value)
        return fam


class Gauge(Counter):
    """A gauge vector kept up to date by its owner (``inc``/``dec``/``set``)."""

    __slots__ = ()

    def dec(self, labels: Labels = (), amount: float = 1.0) -> None:
        self.inc(labels, -amount)

    def set(self, labels: Labels, value: float) -> None:
        self.values[labels] = value

    def family(self) -> Metric:
        fam = GaugeMetricFamily(self.name, self.doc, labels=list(self.labelnames))
        for labels, value in list(self.values.items()):
            fam.add_metric(list(labels), value)
        if not self.labelnames and not self.values:
            fam.add_metric([], 0.0)
        return fam


class HistogramSeries:
    """One label combination of a histogram: per-bucket counts and the sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        #: Non-cumulative counts; the last slot is the +Inf bucket.
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)


class Histogram:
    """A histogram vector with fixed bucket upper bounds."""

    __slots__ = ("bounds", "doc", "labelnames", "name", "series")

    def __init__(
        self, name: str, doc: str, bounds: tuple[float, ...], labelnames: Labels = ()
    ) -> None:
        self.name = name
        self.doc = doc
        self.bounds = bounds
        self.labelnames = labelnames
        self.series: dict[Labels, HistogramSeries] = {}

    def child(self, labels: Labels = ()) -> HistogramSeries:
        """The series for ``labels`` (keep it to observe without a lookup)."""
        s = self.series.get(labels)
        if s is None:
            s = self.series[labels] = HistogramSeries(self.bounds)
        return s

    def observe(self, labels: Labels, value: float) -> None:
        s = self.series.get(labels)
        if s is None:
            s = self.series[labels] = HistogramSeries(self.bounds)
        s.counts[bisect_left(self.bounds, value)] += 1
        s.sum += value

    def family(self) -> Metric:
        fam = HistogramMetricFamily(self.name, self.doc, labels=list(self.labelnames))
        les = [repr(float(b)) for b in self.bounds] + ["+Inf"]
        series = list(self.series.items())
        if not self.labelnames and not series:
            series = [((), HistogramSeries(self.bounds))]  # a plain histogram: all zeros
        for labels, s in series:
            cumulative = []
            total = 0
            for le, c in zip(les, list(s.counts), strict=True):
                total += c
                cumulative.append((le, float(total)))
            fam.add_metric(list(labels), cumulative, s.sum)
        return fam


GaugeCallback = Callable[[], Mapping[Labels, float]]


class _CallbackGauge:
    __slots__ = ("callbacks", "doc", "labelnames", "name")

    def __init__(self, name: str, doc: str, labelnames: Labels) -> None:
        self.name = name
        self.doc = doc
        self.labelnames = labelnames
        self.callbacks: list[GaugeCallback] = []

    def family(self) -> Metric:
        fam = GaugeMetricFamily(self.name, self.doc, labels=list(self.labelnames))
        totals: dict[Labels, float] = {}
        for cb in self.callbacks:
            for labels, value in cb().items():
                totals[labels] = totals.get(labels, 0.0) + value
        for labels, value in totals.items():
            fam.add_metric(list(labels), value)
        return fam


class _Collector(Collector):
    def __init__(self, metrics: Iterable[Any]) -> None:
        self._metrics = list(metrics)

    def collect(self) -> Iterator[Metric]:
        for m in self._metrics:
            yield m.family()

    def describe(self) -> Iterator[Metric]:
        return iter(())


class SchedulerMetrics:
    """All metrics of one scheduler, registered in :attr:`registry`."""

    def __init__(self) -> None:
        s = "scheduler_"
        self.schedule_attempts = Counter(
            s + "schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
        )
        self.scheduling_attempt_duration = Histogram(
            s + "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            exponential_buckets(0.001, 2, 15),
            ("result", "profile"),
        )
        self.pending_pods = _CallbackGauge(
            s + "pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods that the scheduler attempted to schedule "
            "and failed; 'gated' is the number of unschedulable pods that the scheduler "
            "never attempted to schedule because they are gated.",
            ("queue",),
        )
        self.queue_incoming_pods = Counter(
            s + "queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
        )
        self.pod_scheduling_attempts = Histogram(
            s + "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            exponential_buckets(1, 2, 5),
        )
        self.pod_scheduling_sli_duration = Histogram(
            s + "pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            exponential_buckets(0.01, 2, 20),
            ("attempts",),
        )
        self.framework_extension_point_duration = Histogram(
            s + "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            exponential_buckets(0.0001, 2, 12),
            ("extension_point", "status", "profile"),
        )
        self.plugin_execution_duration = Histogram(
            s + "plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            exponential_buckets(0.00001, 1.5, 20),
            ("plugin", "extension_point", "status"),
        )
        self.unschedulable_pods = Gauge(
            s + "unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            ("plugin", "profile"),
        )
        self.plugin_evaluation = EvaluationCounter(
            s + "plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            ("plugin", "extension_point", "profile"),
        )
        self.permit_wait_duration = Histogram(
            s + "permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            exponential_buckets(0.001, 2, 15),
            ("result",),
        )
        self.cache_size = _CallbackGauge(
            s + "cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
        )
        self.preemption_attempts = Counter(
            s + "preemption_attempts_total", "Total preemption attempts in the cluster till now"
        )
        self.preemption_victims = Histogram(
            s + "preemption_victims",
            "Number of selected preemption victims",
            exponential_buckets(1, 2, 7),
        )
        # DynamicResources (DRADeviceBindingConditions, beta and on in v1.36).
        self.dra_binding_conditions_allocations = Counter(
            s + "dra_bindingconditions_allocations_total",
            "Number of allocations using devices with BindingConditions, counted per driver "
            "per scheduling attempt",
            ("profile", "driver", "status"),
        )
        # DynamicResources' claims for extended resources (DRAExtendedResource).
        self.resourceclaim_creates = Counter(
            s + "resourceclaim_creates_total",
            "Number of ResourceClaims creation requests within scheduler",
            ("status",),
        )
        self.dra_binding_conditions_wait_duration = Histogram(
            s + "dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            exponential_buckets(0.1, 2, 14),
            ("profile", "driver", "status"),
        )
        # Registered only with the GenericWorkload gate (enable_pod_group_metrics).
        self.pod_group_schedule_attempts = Counter(
            s + "podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means "
            "a pod group could not be scheduled, while 'error' means an internal scheduler "
            "problem.",
            ("result", "profile"),
        )
        self.pod_group_scheduling_attempt_duration = Histogram(
            s + "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
            exponential_buckets(0.001, 2, 15),
            ("result", "profile"),
        )
        self.pod_group_scheduling_algorithm_duration = Histogram(
            s + "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            exponential_buckets(0.001, 2, 15),
        )
        self._pod_group_metrics = False
        self.scheduling_algorithm_duration = Histogram(
            s + "scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            exponential_buckets(0.001, 2, 15),
        )
        self.event_handling_duration = Histogram(
            s + "event_handling_duration_seconds",
            "Event handling latency in seconds.",
            exponential_buckets(0.0001, 2, 12),
            ("event",),
        )
        self.inflight_events = _CallbackGauge(
            s + "inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            ("event",),
        )
        self.goroutines = _CallbackGauge(
            s + "goroutines",
            "Number of running goroutines split by the work they do such as binding.",
            ("operation",),
        )
        self.queueing_hint_duration = Histogram(
            s + "queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            exponential_buckets(0.00001, 1.5, 20),
            ("plugin", "event", "hint"),
        )
        self.preemption_goroutines_duration = Histogram(
            s + "preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            exponential_buckets(0.01, 2, 20),
            ("result",),
        )
        self.preemption_goroutines_total = Counter(
            s + "preemption_goroutines_execution_total",
            "Number of preemption goroutines executed.",
            ("result",),
        )
        self.pod_scheduled_after_flush = Counter(
            s + "pod_scheduled_after_flush_total",
            "Number of pods that were successfully scheduled after being flushed from "
            "unschedulablePods due to timeout. This metric helps detect potential queueing "
            "hint misconfigurations or event handling issues.",
        )
        self.batch_attempts = Counter(
            s + "batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ("profile", "result"),
        )
        self.batch_cache_flushed = Counter(
            s + "batch_cache_flushed_total",
            "Counts of cache flushes by reason.",
            ("profile", "reason"),
        )
        self.get_node_hint_duration = Histogram(
            s + "get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            exponential_buckets(0.00001, 2, 12),
            ("hinted", "profile"),
        )
        self.store_schedule_results_duration = Histogram(
            s + "store_schedule_results_duration_seconds",
            "Latency for getting a no.",
            exponential_buckets(0.00001, 2, 12),
            ("profile",),
        )
        #: Series without labels, kept at hand for the hot path.
        self.attempts_series = self.pod_scheduling_attempts.child(())
        self.algorithm_series = self.scheduling_algorithm_duration.child(())
        self._sli: list[HistogramSeries | None] = [None] * 16
        self.registry = CollectorRegistry(auto_describe=False)
        self.all_metrics: list[Any] = [
            self.schedule_attempts,
            self.scheduling_attempt_duration,
            self.pending_pods,
            self.queue_incoming_pods,
            self.pod_scheduling_attempts,
            self.pod_scheduling_sli_duration,
            self.framework_extension_point_duration,
            self.plugin_execution_duration,
            self.unschedulable_pods,
            self.plugin_evaluation,
            self.permit_wait_duration,
            self.cache_size,
            self.preemption_attempts,
            self.preemption_victims,
            self.scheduling_algorithm_duration,
            self.event_handling_duration,
            self.inflight_events,
            self.goroutines,
            self.queueing_hint_duration,
            self.preemption_goroutines_duration,
            self.preemption_goroutines_total,
            self.pod_scheduled_after_flush,
            self.batch_attempts,
            self.batch_cache_flushed,
            self.get_node_hint_duration,
            self.store_schedule_results_duration,
            self.dra_binding_conditions_allocations,
            self.dra_binding_conditions_wait_duration,
            self.resourceclaim_creates,
        ]
        self.registry.register(_Collector(self.all_metrics))

    def reset(self) -> None:
        """Clear every counter and histogram (``DELETE /metrics``); gauges mirror state."""
        for m in self.all_metrics:
            if isinstance(m, (Gauge, _CallbackGauge)):
                continue
            if isinstance(m, Histogram):
                for series in m.series.values():
                    series.counts = [0] * len(series.counts)
                    series.sum = 0.0
            elif m is self.plugin_evaluation:
                # Upstream's Reset drops the vector's children while each framework
                # keeps counting into the ones it took at its creation: the family is
                # gone for good. Frameworks keep the old dict and their Rust counts
                # likewise, no longer read.
                m.values = {}
                m.sources = []
            else:
                m.values.clear()

    def enable_pod_group_metrics(self) -> None:
        """Register the ``scheduler_podgroup_*`` metrics (upstream registers them with
        the GenericWorkload gate on)."""
        if self._pod_group_metrics:
            return
        self._pod_group_metrics = True
        group = [
            self.pod_group_schedule_attempts,
            self.pod_group_scheduling_attempt_duration,
            self.pod_group_scheduling_algorithm_duration,
        ]
        self.all_metrics.extend(group)
        self.registry.register(_Collector(group))

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One pod group cycle ended with ``result`` (scheduled, unschedulable,
        waiting_on_preemption, error)."""
        self.pod_group_schedule_attempts.inc((result, profile))
        self.pod_group_scheduling_attempt_duration.observe((result, profile), seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        self.pod_group_scheduling_algorithm_duration.observe((), seconds)

    # ---- recording helpers used on the hot path ----------------------------------------

    def incoming(self, queue: str, event: str) -> None:
        """A pod entered ``queue`` ("active", "backoff", "unschedulable") because of ``event``."""
        values = self.queue_incoming_pods.values
        key = (queue, event)
        values[key] = values.get(key, 0.0) + 1.0

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.framework_extension_point_duration.observe((point, status, profile), seconds)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt finished with ``result`` (scheduled/unschedulable/error)."""
        key = (result, profile)
        values = self.schedule_attempts.values
        values[key] = values.get(key, 0.0) + 1.0
        self.scheduling_attempt_duration.observe(key, seconds)

    def attempt_series(self, result: str, profile: str) -> HistogramSeries:
        """The duration series of one (result, profile), to keep on the hot path."""
        return self.scheduling_attempt_duration.child((result, profile))

    def sli_series(self, attempts: int) -> HistogramSeries:
        """The SLI duration series for a pod scheduled after ``attempts`` attempts."""
        cache = self._sli
        i = attempts if attempts < 15 else 15
        series = cache[i]
        if series is None:
            series = cache[i] = self.pod_scheduling_sli_duration.child((attempts_label(i),))
        return series

    def add_pending_pods_source(self, cb: Callable[[], Mapping[str, int]]) -> None:
        """``cb()`` returns counts by queue name (active, backoff, unschedulable, gated)."""
        self.pending_pods.callbacks.append(lambda: {(k,): float(v) for k, v in cb().items()})

    def add_inflight_events_source(self, cb: Callable[[], Mapping[str, int]]) -> None:
        """``cb()`` returns in-flight event counts by event label (and ``PodPopped``)."""
        self.inflight_events.callbacks.append(lambda: {(k,): float(v) for k, v in cb().items()})

    def add_goroutines_source(self, cb: Callable[[], Mapping[str, int]]) -> None:
        """``cb()`` returns the concurrent work by operation."""
        self.goroutines.callbacks.append(lambda: {(k,): float(v) for k, v in cb().items()})

    def add_cache_size_source(self, cb: Callable[[], Mapping[str, int]]) -> None:
        """``cb()`` returns counts by type (nodes, pods, assumed_pods)."""
        self.cache_size.callbacks.append(lambda: {(k,): float(v) for k, v in cb().items()})


def attempts_label(attempts: int) -> str:
    """Upstream caps the ``attempts`` label of the SLI histogram at ``15+``."""
    return "15+" if attempts >= 15 else str(attempts)
