"""/metrics beyond the scheduler's families: client_golang's text format, the metrics
flags, the registry's own families, /metrics/resources and /metrics/slis."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from ksched.api.pod_resources import pod_requests_and_limits
from ksched.component_metrics import ComponentMetrics, go_float, render
from ksched.config.features import FeatureGate
from ksched.metrics import Counter, SchedulerMetrics
from ksched.options import parse


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1664403009.0, "1.664403009e+09"),
        (20000.0, "20000"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.7085e-05, "1.7085e-05"),
        (60.0, "60"),
        (18446744073709551615.0, "1.8446744073709552e+19"),
        (float("inf"), "+Inf"),
        (0.0, "0"),
        (-2.5, "-2.5"),
    ],
)
def test_numbers_print_as_client_golangs(value: float, text: str) -> None:
    assert go_float(value) == text


def test_render_names_counters_as_registered_and_formats_buckets_as_go() -> None:
    bare = Counter("authentication_attempts", "Counter of authenticated attempts.", ("result",))
    bare.inc(("success",))
    hist = HistogramMetricFamily("x_seconds", "X.", labels=["verb"])
    hist.add_metric(["GET"], [("0.005", 1.0), ("60.0", 2.0), ("+Inf", 2.0)], 0.5)
    total = CounterMetricFamily("requests_total", "Requests.", value=3.0)
    assert render([total, bare.family(), hist]).decode() == (
        "# HELP authentication_attempts Counter of authenticated attempts.\n"
        "# TYPE authentication_attempts counter\n"
        'authentication_attempts{result="success"} 1\n'
        "# HELP requests_total Requests.\n# TYPE requests_total counter\nrequests_total 3\n"
        "# HELP x_seconds X.\n# TYPE x_seconds histogram\n"
        'x_seconds_bucket{le="0.005",verb="GET"} 1\nx_seconds_bucket{le="60",verb="GET"} 2\n'
        'x_seconds_bucket{le="+Inf",verb="GET"} 2\nx_seconds_sum{verb="GET"} 0.5\n'
        'x_seconds_count{verb="GET"} 2\n'
    )


def _with_scheduler(cm: ComponentMetrics) -> SchedulerMetrics:
    metrics = SchedulerMetrics()
    cm.watch(SimpleNamespace(sched=SimpleNamespace(metrics=metrics)), None)
    return metrics


def test_disabled_metrics_and_label_allow_lists(tmp_path: Path) -> None:
    manifest = tmp_path / "allow.yaml"
    manifest.write_text('allowListMapping:\n  "scheduler_schedule_attempts_total,profile": "a"\n')
    opts = parse(
        [
            "--disabled-metrics=scheduler_preemption_attempts_total",
            f"--allow-metric-labels-manifest={manifest}",
            "--allow-metric-labels=scheduler_schedule_attempts_total,result='scheduled'",
        ]
    )
    cm = ComponentMetrics.from_options(opts, git_version="v1.36.5")
    metrics = _with_scheduler(cm)
    for profile in ("a", "b", "c"):
        metrics.attempt("scheduled", profile, 0.01)
    metrics.attempt("error", "a", 0.01)
    text = cm.exposition().decode()
    assert "scheduler_preemption_attempts_total" not in text
    assert 'scheduler_schedule_attempts_total{profile="a",result="scheduled"} 1\n' in text
    assert 'scheduler_schedule_attempts_total{profile="unexpected",result="scheduled"} 2\n' in text
    assert 'scheduler_schedule_attempts_total{profile="a",result="unexpected"} 1\n' in text
    assert "disabled_metrics_total 1\n" in text
    assert "cardinality_enforcement_unexpected_categorizations_total 3\n" in text
    assert "# HELP scheduler_schedule_attempts_total [STABLE] Number of attempts" in text


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        pytest.param(
            ["--show-hidden-metrics-for-version=1.34"],
            "must be omitted or have the value '1.35'",
            id="hidden-version",
        ),
        pytest.param(
            ["--disabled-metrics=bad name"],
            "must be fully qualified metric names",
            id="disabled-name",
        ),
        pytest.param(
            ["--allow-metric-labels=nolabel=a"], "must have keys with format", id="allow-key"
        ),
    ],
)
def test_metrics_flags_are_validated(argv: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ComponentMetrics.from_options(parse(argv), git_version="v1.36.5")


def test_component_families() -> None:
    cm = ComponentMetrics(FeatureGate(), git_version="v1.36.5+ksched.0.1.0")
    text = cm.exposition().decode()
    assert 'git_version="v1.36.5+ksched.0.1.0"' in text and 'major="1",minor="36"' in text
    assert 'kubernetes_feature_enabled{name="SchedulerQueueingHints",stage=""} 1\n' in text
    assert 'kubernetes_feature_enabled{name="StorageCapacityScoring",stage="ALPHA"} 0\n' in text
    assert "# TYPE process_cpu_seconds_total counter" in text
    assert "# TYPE python_gc_collections_total counter" in text
    # A vector without series is not printed (client_golang's Gather leaves it out).
    assert "workqueue_depth" not in text
    assert (
        'version_info{binary="1.36.5",component="kube",emulation="1.36",min_compat="1.35"} 1\n'
        in (text)
    )
    assert 'registered_metrics_total{deprecated_version="",stability_level="BETA"}' in text


def test_delete_resets_counters_and_histograms_but_not_gauges() -> None:
    cm = ComponentMetrics(FeatureGate())
    metrics = _with_scheduler(cm)
    metrics.attempt("scheduled", "p", 0.01)
    metrics.add_cache_size_source(lambda: {"nodes": 3})
    cm.reset()
    text = cm.exposition().decode()
    assert "scheduler_schedule_attempts_total{" not in text
    assert 'scheduler_cache_size{type="nodes"} 3\n' in text


def _pod(spec: dict) -> dict:
    return {"metadata": {"name": "p", "namespace": "d"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "requests", "limits"),
    [
        pytest.param(
            {
                "containers": [
                    {
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "1Gi"},
                            "limits": {"cpu": "1"},
                        }
                    }
                ]
            },
            {"cpu": 0.1, "memory": 1073741824.0},
            {"cpu": 1.0},
            id="one-container",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [
                    {"resources": {"requests": {"cpu": "3"}}},
                    {"restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                ],
            },
            {"cpu": 3.0},
            {},
            id="init-and-sidecar",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}],
                "overhead": {"cpu": "250m", "memory": "10Mi"},
            },
            {"cpu": 1.25, "memory": 10485760.0},
            {"cpu": 2.25},
            id="overhead",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "1"}}}],
                "resources": {"requests": {"cpu": "4"}, "limits": {"memory": "1Gi"}},
            },
            {"cpu": 4.0},
            {"memory": 1073741824.0},
            id="pod-level",
        ),
    ],
)
def test_pod_requests_and_limits(spec: dict, requests: dict, limits: dict) -> None:
    assert pod_requests_and_limits(_pod(spec)) == (requests, limits)


def test_resource_metrics_skip_finished_pods_and_label_units() -> None:
    store = {
        "d/a": {
            "metadata": {"name": "a", "namespace": "d"},
            "spec": {
                "nodeName": "n1",
                "schedulerName": "s",
                "priority": 7,
                "containers": [{"resources": {"requests": {"cpu": "1", "hugepages-2Mi": "2Mi"}}}],
            },
            "status": {"phase": "Running"},
        },
        "d/b": {
            "metadata": {"name": "b", "namespace": "d"},
            "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Succeeded"},
        },
    }
    cm = ComponentMetrics(FeatureGate())
    status = SimpleNamespace(sched=SimpleNamespace(pod_informer=SimpleNamespace(store=store)))
    text = cm.resource_metrics(status).decode()
    assert (
        'kube_pod_resource_request{namespace="d",node="n1",pod="a",priority="7",'
        'resource="cpu",scheduler="s",unit="cores"} 1\n'
    ) in text
    assert 'resource="hugepages-2Mi",scheduler="s",unit="bytes"} 2.097152e+06' in text
    assert 'pod="b"' not in text
    # No pod has limits: the family has no sample and is left out, as client_golang does.
    assert "kube_pod_resource_limit" not in text


def test_health_check_slis() -> None:
    cm = ComponentMetrics(FeatureGate(), start_time=1.0)
    cm.sli.record("readyz", "shutdown", True)
    cm.sli.record("readyz", "shutdown", False)
    text = cm.sli.exposition().decode()
    assert 'kubernetes_healthcheck{name="shutdown",type="readyz"} 0\n' in text
    assert 'kubernetes_healthchecks_total{name="shutdown",status="error",type="readyz"} 1\n' in text
    assert "process_start_time_seconds 1\n" in text
