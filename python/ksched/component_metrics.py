"""Everything ``/metrics`` serves besides the scheduler's own families: component-base's
metrics, client-go's, the process's, and the metrics flags.

kube-scheduler's ``/metrics`` is component-base's legacy registry: the scheduler families
(:mod:`ksched.metrics`), client-go's ``rest_client_*`` (:mod:`ksched.client.metrics`),
``leader_election_*``, ``kubernetes_build_info``, ``kubernetes_feature_enabled``,
``version_info``, the registry's own ``registered_metrics_total``,
``disabled_metrics_total``, ``hidden_metrics_total`` and
``cardinality_enforcement_unexpected_categorizations_total``,
``apiserver_client_certificate_expiration_seconds`` (the delegated x509 authenticator),
``workqueue_*``, the ``process_*`` families and Go's runtime families. :class:`ComponentMetrics`
gathers the equivalents and renders them with upstream's HELP prefixes (``[STABLE]``,
``[BETA]``, ``[ALPHA]``):

* ``process_*``: prometheus_client's process collector (CPU, memory, file descriptors,
  start time, from ``/proc``) plus ``process_virtual_memory_max_bytes`` and
  ``process_network_{receive,transmit}_bytes_total``, which client_golang adds, read from
  ``/proc/self/limits`` and ``/proc/self/net/dev`` as it does;
* Go's runtime families (``go_*``) have no meaning in a Python process. Their Python
  equivalents are served instead: ``python_info`` (the interpreter) and
  ``python_gc_objects_collected_total``, ``python_gc_objects_uncollectable_total``,
  ``python_gc_collections_total`` (the collector, per generation);
* ``workqueue_*`` are registered with upstream's names and labels but have no series:
  ksched has no client-go work queue (neither does kube-scheduler's own scheduling path;
  its series come from the certificate-reload controllers, which ksched does not run),
  so, like every family without a series, they are not exported;
* ``version_info``: the binary version, the emulated version and the minimum
  compatibility version of the ``kube`` component, as component-base records them.

The metrics flags apply to the whole exposition, as component-base applies them to its
registry: ``--disabled-metrics`` drops families (counted in ``disabled_metrics_total``),
``--allow-metric-labels`` / ``--allow-metric-labels-manifest`` replace label values not
in a label's allow-list by ``unexpected`` (merging the series they fall into; each
replacement counted in ``cardinality_enforcement_unexpected_categorizations_total``),
and ``--show-hidden-metrics-for-version`` must be omitted or the previous minor version
(kube-scheduler v1.36 has no hidden metrics, so it shows nothing more).
``/metrics/resources`` (``kube_pod_resource_request``/``kube_pod_resource_limit``) and
``/metrics/slis`` (the health checks) have registries of their own, as upstream.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from ksched import version
from ksched.api.pod_resources import pod_requests_and_limits
from ksched.api.resources import is_attachable_volume_resource_name, is_hugepage_resource_name
from ksched.client.metrics import REST_METRICS
from ksched.config.features import BINARY_VERSION, FeatureGate
from ksched.metrics import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from ksched.leaderelection import LeaderElector
    from ksched.options import Options

__all__ = ["STABILITY", "AuthMetrics", "ComponentMetrics", "SliMetrics"]

#: Stability levels of the families that have one (upstream's StabilityLevel).
STABILITY: dict[str, str] = {
    **dict.fromkeys(
        (
            "scheduler_schedule_attempts_total",
            "scheduler_scheduling_attempt_duration_seconds",
            "scheduler_preemption_victims",
            "scheduler_preemption_attempts_total",
            "scheduler_pending_pods",
            "scheduler_pod_scheduling_attempts",
            "scheduler_framework_extension_point_duration_seconds",
            "scheduler_queue_incoming_pods_total",
            "kube_pod_resource_request",
            "kube_pod_resource_limit",
            "kubernetes_healthcheck",
            "kubernetes_healthchecks_total",
        ),
        "STABLE",
    ),
    **dict.fromkeys(
        (
            "scheduler_pod_scheduling_sli_duration_seconds",
            "scheduler_goroutines",
            "scheduler_permit_wait_duration_seconds",
            "scheduler_unschedulable_pods",
            "scheduler_plugin_evaluation_total",
            "kubernetes_build_info",
            "kubernetes_feature_enabled",
            "registered_metrics_total",
            "disabled_metrics_total",
            "hidden_metrics_total",
            "workqueue_adds_total",
            "workqueue_depth",
            "workqueue_longest_running_processor_seconds",
            "workqueue_queue_duration_seconds",
            "workqueue_retries_total",
            "workqueue_unfinished_work_seconds",
            "workqueue_work_duration_seconds",
        ),
        "BETA",
    ),
}
#: Families without a stability level (client_golang's, and the Python runtime's).
UNLEVELED_PREFIXES = ("process_", "python_", "ksched_")

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def stability(name: str) -> str | None:
    if name.startswith(UNLEVELED_PREFIXES):
        return None
    return STABILITY.get(name, "ALPHA")


def _with_level(fam: Metric) -> Metric:
    level = stability(fam.name if fam.type != "counter" else fam.name + "_total")
    if level is None:
        level = stability(fam.name)
    if level is not None and not fam.documentation.startswith("["):
        fam.documentation = f"[{level}] {fam.documentation}"
    return fam


# ---- the process ------------------------------------------------------------------------


class _ProcessExtras(Collector):
    """What client_golang's process collector has beyond prometheus_client's."""

    def collect(self) -> Iterator[Metric]:
        limit = _address_space_limit()
        if limit is not None:
            yield GaugeMetricFamily(
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                value=limit,
            )
        rx, tx = _network_bytes()
        if rx is not None and tx is not None:
            yield CounterMetricFamily(
                "process_network_receive_bytes",
                "Number of bytes received by the process over the network.",
                value=rx,
            )
            yield CounterMetricFamily(
                "process_network_transmit_bytes",
                "Number of bytes sent by the process over the network.",
                value=tx,
            )


def _address_space_limit() -> float | None:
    try:
        text = Path("/proc/self/limits").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Max address space"):
            soft = line[26:].split()[0]
            return float(2**64 - 1) if soft == "unlimited" else float(soft)
    return None


def _network_bytes() -> tuple[float | None, float | None]:
    try:
        lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    except OSError:
        return None, None
    rx = tx = 0.0
    for line in lines:
        _, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) >= 9:
            rx += float(fields[0])
            tx += float(fields[8])
    return rx, tx


# ---- authentication -------------------------------------------------------------------

_CERT_BUCKETS = (
    0.0,
    1800.0,
    3600.0,
    7200.0,
    21600.0,
    43200.0,
    86400.0,
    172800.0,
    345600.0,
    604800.0,
    2592000.0,
    7776000.0,
    15552000.0,
    31104000.0,
)


class AuthMetrics:
    """The delegated authenticator's and authorizer's metrics."""

    def __init__(self) -> None:
        self.cert_expiration = Histogram(
            "apiserver_client_certificate_expiration_seconds",
            "Distribution of the remaining lifetime on the certificate used to authenticate a "
            "request.",
            _CERT_BUCKETS,
        )
        self.authn = Counter(
            "apiserver_delegated_authn_request_total",
            "Number of HTTP requests partitioned by status code.",
            ("code",),
        )
        self.authn_duration = Histogram(
            "apiserver_delegated_authn_request_duration_seconds",
            "Request latency in seconds. Broken down by status code.",
            (0.25, 0.5, 0.7, 1.0, 1.5, 3.0, 5.0, 10.0),
            ("code",),
        )
        self.authz = Counter(
            "apiserver_delegated_authz_request_total",
            "Number of HTTP requests partitioned by status code.",
            ("code",),
        )
        self.authz_duration = Histogram(
            "apiserver_delegated_authz_request_duration_seconds",
            "Request latency in seconds. Broken down by status code.",
            (0.25, 0.5, 0.7, 1.0, 1.5, 3.0, 5.0, 10.0),
            ("code",),
        )

        buckets = tuple(0.001 * 2**i for i in range(15))
        self.user_requests = Counter(
            "authenticated_user_requests",
            "Counter of authenticated requests broken out by username.",
            ("username",),
        )
        self.authn_attempts = Counter(
            "authentication_attempts", "Counter of authenticated attempts.", ("result",)
        )
        self.authn_latency = Histogram(
            "authentication_duration_seconds",
            "Authentication duration in seconds broken out by result.",
            buckets,
            ("result",),
        )
        self.authz_attempts = Counter(
            "authorization_attempts_total",
            "Counter of authorization attempts broken down by result. It can be either "
            "'allowed', 'denied', 'no-opinion' or 'error'.",
            ("result",),
        )
        self.authz_latency = Histogram(
            "authorization_duration_seconds",
            "Authorization duration in seconds broken out by result.",
            buckets,
            ("result",),
        )

    def authenticated(self, result: str, username: str, seconds: float) -> None:
        """``recordAuthenticationMetrics``: success, failure or error."""
        if result == "success":
            self.user_requests.inc((_compress_username(username),))
        self.authn_attempts.inc((result,))
        self.authn_latency.observe((result,), seconds)

    def authorized(self, result: str, seconds: float) -> None:
        """``recordAuthorizationMetrics``: allowed, denied or error."""
        self.authz_attempts.inc((result,))
        self.authz_latency.observe((result,), seconds)

    def client_certificate(self, leaf: Any) -> None:
        remaining = leaf.not_valid_after_utc.timestamp() - time.time()
        self.cert_expiration.observe((), remaining)

    def review(self, kind: str, code: int, seconds: float) -> None:
        label = (str(code),)
        if kind == "authn":
            self.authn.inc(label)
            self.authn_duration.observe(label, seconds)
        else:
            self.authz.inc(label)
            self.authz_duration.observe(label, seconds)

    def families(self) -> Iterator[Metric]:
        yield self.cert_expiration.family()
        for m in (
            self.authn,
            self.authn_duration,
            self.authz,
            self.authz_duration,
            self.user_requests,
            self.authn_attempts,
            self.authn_latency,
            self.authz_attempts,
            self.authz_latency,
        ):
            if getattr(m, "values", None) or getattr(m, "series", None):
                yield m.family()


def _compress_username(name: str) -> str:
    """The apiserver filters' ``compressUsername``."""
    if name in (
        "admin",
        "client",
        "kube_proxy",
        "kubelet",
        "system:serviceaccount:kube-system:default",
    ):
        return name
    return "email_id" if "@" in name else "other"


# ---- /metrics/slis ----------------------------------------------------------------------


class SliMetrics:
    """``/metrics/slis``: the result of the health checks as they run."""

    def __init__(self, start_time: float) -> None:
        self.start_time = start_time
        self.last = Gauge(
            "kubernetes_healthcheck",
            "This metric records the result of a single healthcheck.",
            ("name", "type"),
        )
        self.total = Counter(
            "kubernetes_healthchecks_total",
            "This metric records the results of all healthcheck.",
            ("name", "status", "type"),
        )

    def record(self, group: str, check: str, passed: bool) -> None:
        self.last.set((check, group), 1.0 if passed else 0.0)
        self.total.inc((check, "success" if passed else "error", group))

    def exposition(self) -> bytes:
        fams = [_with_level(self.last.family()), _with_level(self.total.family())]
        fams.append(
            GaugeMetricFamily(
                "process_start_time_seconds",
                "[ALPHA] Start time of the process since unix epoch in seconds.",
                value=self.start_time,
            )
        )
        return render(fams)


# ---- the component ------------------------------------------------------------------------


def _empty(kind: str, name: str, doc: str, labels: Sequence[str]) -> Metric:
    if kind == "counter":
        return CounterMetricFamily(name, doc, labels=list(labels))
    if kind == "histogram":
        return HistogramMetricFamily(name, doc, labels=list(labels))
    return GaugeMetricFamily(name, doc, labels=list(labels))


#: Families ksched registers with upstream's names and labels but has no series for.
_EMPTY: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("counter", "workqueue_adds", "Total number of adds handled by workqueue", ("name",)),
    ("gauge", "workqueue_depth", "Current depth of workqueue", ("name",)),
    (
        "gauge",
        "workqueue_longest_running_processor_seconds",
        "How many seconds has the longest running processor for workqueue been running.",
        ("name",),
    ),
    (
        "histogram",
        "workqueue_queue_duration_seconds",
        "How long in seconds an item stays in workqueue before being requested.",
        ("name",),
    ),
    ("counter", "workqueue_retries", "Total number of retries handled by workqueue", ("name",)),
    (
        "gauge",
        "workqueue_unfinished_work_seconds",
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of "
        "stuck threads by observing the rate at which this increases.",
        ("name",),
    ),
    (
        "histogram",
        "workqueue_work_duration_seconds",
        "How long in seconds processing an item from workqueue takes.",
        ("name",),
    ),
)


class ComponentMetrics:
    """The process-wide metrics of ``ksched run`` and the metrics flags."""

    def __init__(
        self,
        gate: FeatureGate,
        *,
        git_version: str = version.GIT_VERSION,
        disabled: Iterable[str] = (),
        allow_labels: Mapping[str, Sequence[str]] | None = None,
        start_time: float | None = None,
    ) -> None:
        self.gate = gate
        self.git_version = git_version
        self.disabled = frozenset(disabled)
        #: (metric, label) → allowed values.
        self.allow: dict[tuple[str, str], frozenset[str]] = {}
        for key, values in (allow_labels or {}).items():
            metric, _, label = key.partition(",")
            self.allow[(metric, label)] = frozenset(values)
        self.unexpected = 0
        self.start_time = start_time if start_time is not None else _process_start()
        self.auth = AuthMetrics()
        self.sli = SliMetrics(self.start_time)
        self._process = [ProcessCollector(registry=None), _ProcessExtras()]
        self._python = [PlatformCollector(registry=None), GCCollector(registry=CollectorRegistry())]
        self._status: Any = None
        self._elector: LeaderElector | None = None

    @classmethod
    def from_options(cls, opts: Options, *, git_version: str) -> ComponentMetrics:
        """Validate the metrics flags as ``metrics.Options.Validate`` does; raises
        ``ValueError`` with upstream's message."""
        get = opts.get
        hidden = str(get("show-hidden-metrics-for-version"))
        previous = f"{BINARY_VERSION[0]}.{BINARY_VERSION[1] - 1}"
        if hidden and hidden != previous:
            raise ValueError(
                f'metrics.showHiddenMetricsForVersion: Invalid value: "{hidden}": must be '
                f"omitted or have the value '{previous}'; only the previous minor version is "
                "allowed"
            )
        disabled = list(get("disabled-metrics"))
        for name in disabled:
            if not _METRIC_NAME.match(name):
                raise ValueError(
                    f"metrics.disabledMetrics: Invalid value: {disabled}: must be fully "
                    f'qualified metric names matching "{_METRIC_NAME.pattern}", got "{name}"'
                )
        mapping: dict[str, str] = dict(get("allow-metric-labels"))
        manifest = str(get("allow-metric-labels-manifest"))
        if manifest:
            try:
                loaded = yaml.safe_load(Path(manifest).read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ValueError(
                    f'metrics.allowListMappingManifest: Invalid value: "{manifest}": failed to '
                    f"read allow list manifest: {exc}"
                ) from exc
            table = loaded.get("allowListMapping", loaded) if isinstance(loaded, dict) else {}
            from_file = {str(k): str(v) for k, v in (table or {}).items()}
            mapping = {**from_file, **mapping}
        for key in mapping:
            metric, _, label = key.partition(",")
            if not _METRIC_NAME.match(metric) or not _LABEL_NAME.match(label):
                raise ValueError(
                    "metrics.allowListMapping: Invalid value: must have keys with format "
                    "`metricName,labelName`"
                )
        allow = {
            k: [v.strip() for v in val.strip().strip("'\"").split(",") if v.strip()]
            for k, val in mapping.items()
        }
        return cls(opts.gate, git_version=git_version, disabled=disabled, allow_labels=allow)

    def watch(self, status: Any, elector: LeaderElector | None) -> None:
        """Read the running scheduler (``status.sched``) and the leader elector."""
        self._status = status
        self._elector = elector

    def scheduler_registry(self, status: Any) -> CollectorRegistry | None:
        """The registry ``serve`` adds its collectors to (unclaimed pods, leader
        election): None, the scheduler's own, which :meth:`exposition` includes."""
        return None

    # ---- families ---------------------------------------------------------------------

    def _component_families(self) -> Iterator[Metric]:
        info = version.info(self.git_version)
        build = GaugeMetricFamily(
            "kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, git "
            "commit, git tree state, build date, Go version, and compiler from which "
            "Kubernetes was built, and platform on which it is running.",
            labels=[
                "build_date",
                "compiler",
                "git_commit",
                "git_tree_state",
                "git_version",
                "go_version",
                "major",
                "minor",
                "platform",
            ],
        )
        build.add_metric(
            [
                info["buildDate"],
                info["compiler"],
                info["gitCommit"],
                info["gitTreeState"],
                info["gitVersion"],
                info["goVersion"],
                info["major"],
                info["minor"],
                info["platform"],
            ],
            1.0,
        )
        yield build
        feature = GaugeMetricFamily(
            "kubernetes_feature_enabled",
            "This metric records the data about the stage and enablement of a k8s feature.",
            labels=["name", "stage"],
        )
        for name, spec in sorted(self.gate.all().items()):
            stage = "" if spec.stage == "GA" else spec.stage
            feature.add_metric([name, stage], 1.0 if self.gate.enabled(name) else 0.0)
        yield feature
        compat = GaugeMetricFamily(
            "version_info",
            "Provides the compatibility version info of the component. The component label is "
            "the name of the component, usually kube, but is relevant for "
            "aggregated-apiservers.",
            labels=["component", "binary", "emulation", "min_compat"],
        )
        binary = info["gitVersion"].lstrip("v").split("+")[0].split("-")[0]
        compat.add_metric(
            ["kube", binary, _dotted(self.gate.emulation), _dotted(self.gate.min_compat)], 1.0
        )
        yield compat
        for kind, name, doc, labels in _EMPTY:
            yield _empty(kind, name, doc, labels)
        yield from REST_METRICS.families()
        yield from self.auth.families()

    def _families(self) -> list[Metric]:
        fams: list[Metric] = []
        sched = getattr(self._status, "sched", None)
        if sched is not None:
            fams.extend(sched.metrics.registry.collect())
        fams.extend(self._component_families())
        for c in (*self._process, *self._python):
            fams.extend(c.collect())
        return fams

    def _registry_families(self, registered: list[Metric]) -> list[Metric]:
        counts: dict[str, int] = {}
        for fam in registered:
            level = stability(fam.name + ("_total" if fam.type == "counter" else ""))
            if level is None:
                level = stability(fam.name)
            if level is not None:
                counts[level] = counts.get(level, 0) + 1
        reg = CounterMetricFamily(
            "registered_metrics",
            "The count of registered metrics broken by stability level and deprecation version.",
            labels=["deprecated_version", "stability_level"],
        )
        for level in sorted(counts):
            reg.add_metric(["", level], float(counts[level]))
        disabled = sum(1 for f in registered if self._full_name(f) in self.disabled)
        return [
            reg,
            CounterMetricFamily(
                "disabled_metrics", "The count of disabled metrics.", value=float(disabled)
            ),
            CounterMetricFamily("hidden_metrics", "The count of hidden metrics.", value=0.0),
            CounterMetricFamily(
                "cardinality_enforcement_unexpected_categorizations",
                "The count of unexpected categorizations during cardinality enforcement.",
                value=float(self.unexpected),
            ),
        ]

    @staticmethod
    def _full_name(fam: Metric) -> str:
        return fam.name + "_total" if fam.type == "counter" else fam.name

    def _allow_list(self, fam: Metric) -> Metric:
        name = self._full_name(fam)
        rules = {
            label: allowed for (metric, label), allowed in self.allow.items() if metric == name
        }
        if not rules or not fam.samples:
            return fam
        merged: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
        for s in fam.samples:
            labels = dict(s.labels)
            for label, allowed in rules.items():
                if label in labels and labels[label] not in allowed:
                    labels[label] = "unexpected"
                    self.unexpected += 1
            key = (s.name, tuple(sorted(labels.items())))
            prev = merged.get(key)
            if prev is None or fam.type == "gauge":
                merged[key] = s._replace(labels=labels)
            else:
                merged[key] = prev._replace(value=prev.value + s.value)
        fam.samples = list(merged.values())
        return fam

    def exposition(self, status: Any = None) -> bytes:
        """The ``/metrics`` text."""
        if status is not None:
            self._status = status
        fams = self._families()
        kept = [f for f in fams if self._full_name(f) not in self.disabled]
        kept = [_with_level(self._allow_list(f)) for f in kept]
        kept.extend(_with_level(f) for f in self._registry_families(fams))
        return render(kept)

    def reset(self, status: Any = None) -> None:
        """``DELETE /metrics``: reset the resettable series (counters and histograms)."""
        sched = getattr(status or self._status, "sched", None)
        if sched is not None:
            sched.metrics.reset()
        REST_METRICS.reset()

    # ---- /metrics/resources -----------------------------------------------------------

    def resource_metrics(self, status: Any = None) -> bytes:
        sched = getattr(status or self._status, "sched", None)
        req = GaugeMetricFamily(
            "kube_pod_resource_request",
            "[STABLE] Resources requested by workloads on the cluster, broken down by pod. "
            "This shows the resource usage the scheduler and kubelet expect per pod for "
            "resources along with the unit for the resource if any.",
            labels=["namespace", "pod", "node", "scheduler", "priority", "resource", "unit"],
        )
        lim = GaugeMetricFamily(
            "kube_pod_resource_limit",
            "[STABLE] Resources limit for workloads on the cluster, broken down by pod. This "
            "shows the resource usage the scheduler and kubelet expect per pod for resources "
            "along with the unit for the resource if any.",
            labels=["namespace", "pod", "node", "scheduler", "priority", "resource", "unit"],
        )
        if sched is not None:
            for pod in list(sched.pod_informer.store.values()):
                _pod_resource_samples(pod, req, lim)
        return render([req, lim])


def _dotted(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _unit(resource: str) -> str:
    if resource == "cpu":
        return "cores"
    if resource in ("memory", "storage", "ephemeral-storage") or is_hugepage_resource_name(
        resource
    ):
        return "bytes"
    if is_attachable_volume_resource_name(resource):
        return "integer"
    return ""


def _pod_resource_samples(
    pod: dict[str, Any], req: GaugeMetricFamily, lim: GaugeMetricFamily
) -> None:
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    node = str(spec.get("nodeName") or "")
    if node and phase in ("Succeeded", "Failed"):
        return
    meta = pod.get("metadata") or {}
    try:
        requests, limits = pod_requests_and_limits(pod)
    except ValueError:
        return  # an invalid pod is reported by the informer, not here
    priority = spec.get("priority")
    prio = str(priority) if isinstance(priority, int) else ""
    base = [
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        node,
        str(spec.get("schedulerName") or ""),
        prio,
    ]
    for fam, values in ((req, requests), (lim, limits)):
        for resource in sorted(values):
            fam.add_metric([*base, resource, _unit(resource)], values[resource])


#: Counters whose samples have no ``_total`` suffix upstream (client_golang writes a
#: counter's name as registered).
BARE_COUNTERS = frozenset({"authenticated_user_requests", "authentication_attempts"})


def go_float(v: float) -> str:
    """client_golang's sample values: ``strconv.FormatFloat(v, 'g', -1, 64)`` (the
    shortest digits that round-trip, in %e form when the exponent is below -4 or at
    least 6)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    r = repr(abs(v))
    if "e" in r:
        m, _, e = r.partition("e")
        whole, _, frac = m.partition(".")
        digs = (whole + frac).rstrip("0")
        exp = int(e) + len(whole) - 1
    else:
        whole, _, frac = r.partition(".")
        if whole != "0":
            exp = len(whole) - 1
            digs = (whole + frac).rstrip("0")
        else:
            stripped = frac.lstrip("0")
            exp = -(len(frac) - len(stripped)) - 1
            digs = stripped.rstrip("0")
    digs = digs or "0"
    if exp < -4 or exp >= 6:
        body = digs[0] + ("." + digs[1:] if len(digs) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digs}"
    if len(digs) <= exp + 1:
        return f"{sign}{digs}{'0' * (exp + 1 - len(digs))}"
    return f"{sign}{digs[: exp + 1]}.{digs[exp + 1 :]}"


def _escape_help(doc: str) -> str:
    return doc.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render(fams: Iterable[Metric]) -> bytes:
    """The Prometheus text format (0.0.4) as client_golang writes it: families sorted by
    name, label pairs sorted, Go's number format (for ``le`` too), counters named as
    registered. A family without samples is left out, as client_golang's ``Gather``
    leaves out a vector without children (a metric without labels always has its one
    sample, see :mod:`ksched.metrics`)."""
    out: list[str] = []
    for fam in sorted(fams, key=_header_name):
        if not fam.samples:
            continue
        name = _header_name(fam)
        kind = {"unknown": "untyped", "info": "gauge", "stateset": "gauge"}.get(fam.type, fam.type)
        out.append(f"# HELP {name} {_escape_help(fam.documentation)}\n# TYPE {name} {kind}\n")
        for sample in _go_order(fam):
            sname = sample.name
            if fam.name in BARE_COUNTERS and sname.endswith("_total"):
                sname = sname[: -len("_total")]
            if sname.endswith("_created"):
                continue
            labels = dict(sample.labels)
            if "le" in labels and labels["le"] != "+Inf":
                labels["le"] = go_float(float(labels["le"]))
            text = ",".join(f'{k}="{_escape_value(labels[k])}"' for k in sorted(labels))
            out.append(f"{sname}{{{text}}} " if text else f"{sname} ")
            out.append(go_float(float(sample.value)) + "\n")
    return "".join(out).encode()


def _go_order(fam: Metric) -> list[Any]:
    """A histogram series as client_golang writes it: buckets, ``_sum``, ``_count``
    (prometheus_client keeps ``_count`` before ``_sum``)."""
    if fam.type not in ("histogram", "summary"):
        return list(fam.samples)
    out: list[Any] = []
    held: dict[tuple[tuple[str, str], ...], Any] = {}
    for sample in fam.samples:
        key = tuple(sorted(sample.labels.items()))
        if sample.name.endswith("_count"):
            held[key] = sample
            continue
        out.append(sample)
        if sample.name.endswith("_sum") and key in held:
            out.append(held.pop(key))
    out.extend(held.values())
    return out


def _header_name(fam: Metric) -> str:
    if fam.type == "counter" and fam.name not in BARE_COUNTERS:
        return fam.name + "_total"
    return fam.name


def _process_start() -> float:
    """The process start time (``/proc/self/stat``), else now."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = float(stat.rpartition(")")[2].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
        return boot + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return time.time()
