"""Smoke test of the benchmark harness (``ksched.bench``) on tiny embedded workloads.

Every workload file of ``benches/workloads`` parses, scales and builds its objects; the
embedded driver runs two of them to completion with the placement check; the report
renders as a table, a JSON document and a PNG; ``ksched bench`` runs end to end. The
histogram and placement helpers are checked on hand-made inputs. The real-apiserver
side of the harness runs in ``benches/`` (``make bench``), not here.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from ksched import cli
from ksched.bench import embedded, placement, procstat, report, workload

WORKLOADS = workload.load_all()


def test_every_workload_file_parses_and_names_its_scheduler_perf_case() -> None:
    assert {
        "scheduling-basic",
        "node-affinity",
        "pod-anti-affinity",
        "pod-affinity",
        "topology-spreading",
        "preferred-topology-spreading",
        "unschedulable",
        "mixed-churn",
        "preemption",
        "csi-pvs",
        "in-tree-pvs",
    } <= set(WORKLOADS)
    for spec in WORKLOADS.values():
        assert spec.upstream, spec.key
        assert spec.measured().count == spec.params["measurePods"]


def test_scheduling_basic_is_5000_nodes_1000_existing_10000_new() -> None:
    spec = workload.find("SchedulingBasic", WORKLOADS)
    assert dict(spec.params) == {"initNodes": 5000, "initPods": 1000, "measurePods": 10000}


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("basic", "scheduling-basic"),
        ("SchedulingPodAntiAffinity", "pod-anti-affinity"),
        ("mixedchurn", "mixed-churn"),
        ("PreemptionBasic", "preemption"),
    ],
)
def test_find_by_key_or_scheduler_perf_name(name: str, key: str) -> None:
    assert workload.find(name, WORKLOADS).key == key


def test_unknown_workload_names_the_known_ones() -> None:
    with pytest.raises(workload.WorkloadError, match="scheduling-basic"):
        workload.find("nope", WORKLOADS)


def test_scale_and_overrides() -> None:
    spec = workload.find("basic", WORKLOADS).scaled(0.01, pods=7)
    assert dict(spec.params) == {"initNodes": 50, "initPods": 10, "measurePods": 7}
    assert spec.label == "SchedulingBasic/50Nodes_7Pods"


def test_objects_are_deterministic_and_round_robin() -> None:
    spec = workload.find("topology-spreading", WORKLOADS).scaled(nodes=4, existing_pods=6, pods=2)
    nodes = spec.node_objects()
    assert [n["metadata"]["name"] for n in nodes] == [f"scheduler-perf-{i}" for i in range(4)]
    zones = [n["metadata"]["labels"][workload.ZONE_LABEL] for n in nodes]
    assert zones == ["moon-1", "moon-2", "moon-3", "moon-1"]
    assert nodes[0]["status"]["allocatable"]["cpu"] == "4"
    assert nodes[0]["metadata"]["labels"][workload.HOSTNAME_LABEL] == "scheduler-perf-0"
    init = next(o for o in spec.ops() if isinstance(o, workload.CreatePods) and o.bound)
    pods = list(spec.pod_objects(init, [n["metadata"]["name"] for n in nodes]))
    assert [p["spec"]["nodeName"] for p in pods] == [f"scheduler-perf-{i % 4}" for i in range(6)]
    assert pods[0]["metadata"]["namespace"] == "sched-0"


def test_volume_workloads_build_prebound_claims_and_csinodes_as_scheduler_perf() -> None:
    spec = workload.find("SchedulingCSIPVs", WORKLOADS).scaled(nodes=2, existing_pods=3, pods=2)
    nodes = spec.node_objects()
    assert nodes[0]["status"]["allocatable"]["attachable-volumes-csi-ebs.csi.aws.com"] == "39"
    assert "attachable-volumes-csi-ebs.csi.aws.com" not in nodes[0]["status"]["capacity"]
    csinodes = spec.csinode_objects()
    assert [c["metadata"]["name"] for c in csinodes] == [n["metadata"]["name"] for n in nodes]
    assert csinodes[0]["spec"]["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": "scheduler-perf-0", "allocatable": {"count": 39}}
    ]
    measured = spec.measured()
    pods = list(spec.pod_objects(measured, []))
    assert pods[1]["spec"]["volumes"] == [
        {"name": "vol", "persistentVolumeClaim": {"claimName": "pvc-1"}}
    ]
    pvc, pv = list(spec.volume_objects(measured))[1]
    assert pvc["metadata"] == {
        "name": "pvc-1",
        "namespace": "sched-1",
        "annotations": {"pv.kubernetes.io/bind-completed": "true"},
    }
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] == "sched-1-vol-1"
    assert pv["spec"]["csi"] == {"driver": "ebs.csi.aws.com", "volumeHandle": "sched-1-vol-1"}
    assert pv["spec"]["claimRef"]["name"] == "pvc-1"
    assert pv["status"] == pvc["status"] == {"phase": "Bound"}
    in_tree = workload.find("SchedulingInTreePVs", WORKLOADS).scaled(nodes=1, pods=1)
    assert in_tree.csinode_objects() == []
    _, ebs = next(in_tree.volume_objects(in_tree.measured()))
    assert ebs["spec"]["awsElasticBlockStore"] == {"volumeID": "sched-1-vol-0"}


def test_priority_class_is_resolved_for_the_embedded_cluster() -> None:
    spec = workload.find("preemption", WORKLOADS)
    pod = next(spec.pod_objects(spec.measured(), []))
    assert workload.resolve_priority(pod, spec.priority_classes)["spec"]["priority"] == 10


def test_a_bad_count_param_is_reported_with_the_file(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "pod-default.yaml").write_text("kind: Pod\nmetadata: {}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: Bad\nparams: {a: 1}\nops:\n"
        "- {opcode: createPods, countParam: $b, collectMetrics: true}\n"
    )
    with pytest.raises(workload.WorkloadError, match=r"bad.yaml: ops\[0\].countParam"):
        workload.load_workload(bad)


# ---------------------------------------------------------------- histogram quantiles

METRICS = """\
# TYPE attempt_seconds histogram
attempt_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 10
attempt_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.002"} 90
attempt_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.004"} 100
attempt_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 100
attempt_seconds_sum{profile="default-scheduler",result="scheduled"} 0.15
attempt_seconds_count{profile="default-scheduler",result="scheduled"} 100
attempt_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.001"} 5
attempt_seconds_bucket{profile="default-scheduler",result="unschedulable",le="+Inf"} 5
"""


def test_histogram_quantile_interpolates_like_promql() -> None:
    buckets, total, count = procstat.histogram(METRICS, "attempt_seconds", {"result": "scheduled"})
    assert count == 100 and total == pytest.approx(0.15)
    assert procstat.histogram_quantile(0.5, buckets) == pytest.approx(0.0015)
    assert procstat.histogram_quantile(0.99, buckets) == pytest.approx(0.0038)
    assert math.isnan(procstat.histogram_quantile(0.5, []))
    before = [(0.001, 10.0), (0.002, 10.0), (0.004, 10.0), (math.inf, 10.0)]
    # Observed between the two scrapes: 0 below 1ms, 80 in (1ms, 2ms], 10 in (2ms, 4ms].
    since = procstat.subtract(buckets, before)
    assert since == [(0.001, 0.0), (0.002, 80.0), (0.004, 90.0), (math.inf, 90.0)]
    assert procstat.histogram_quantile(0.5, since) == pytest.approx(0.001 + 0.001 * 45 / 80)


def test_proc_figures_of_this_process() -> None:
    import os

    assert procstat.peak_rss_mib(os.getpid()) > 1
    assert procstat.cpu_seconds(os.getpid()) > 0


# ------------------------------------------------------------------------ placement


def _node(name: str, zone: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {workload.ZONE_LABEL: zone}},
        "status": {"allocatable": {"cpu": "4"}},
    }


def _pod(name: str, node: str, ns: str = "m", color: str = "green") -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {"color": color}},
        "spec": {
            "nodeName": node,
            "containers": [{"resources": {"requests": {"cpu": "100m"}}}],
        },
    }


ANTI = {
    "spec": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "zone"}
                ]
            }
        }
    }
}
SPREAD = {
    "spec": {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": workload.ZONE_LABEL,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "green"}},
            }
        ]
    }
}


def test_placement_counts_spread_skew_and_anti_affinity_violations() -> None:
    nodes = [_node("a", "z1"), _node("b", "z2"), _node("c", "z2")]
    for n in nodes:
        n["metadata"]["labels"]["zone"] = n["metadata"]["name"]  # type: ignore[index]
    pods = [_pod("p1", "a"), _pod("p2", "a"), _pod("p3", "b"), _pod("x", "b", ns="other")]
    anti = placement.summarize(nodes, pods, measured_namespace="m", template=ANTI)
    assert anti.measured_bound == 3 and anti.pods_bound == 4
    assert anti.measured_per_zone == {"z1": 2, "z2": 1}
    assert anti.pods_per_node["max"] == 2 and anti.pods_per_node["min"] == 0
    assert anti.constraints == [{"kind": "podAntiAffinity", "topologyKey": "zone", "violations": 2}]
    spread = placement.summarize(nodes, pods, measured_namespace="m", template=SPREAD)
    assert spread.constraints[0]["skew"] == 1  # z1: p1 p2; z2: p3 (x is in another namespace)
    assert spread.violations == 0


def test_compare_flags_more_violations_and_worse_skew() -> None:
    nodes = [_node("a", "z1"), _node("b", "z2")]
    even = placement.summarize(
        nodes, [_pod("p1", "a"), _pod("p2", "b")], measured_namespace="m", template=SPREAD
    )
    piled = placement.summarize(
        nodes,
        [_pod("p1", "a"), _pod("p2", "a"), _pod("p3", "a")],
        measured_namespace="m",
        template=SPREAD,
    )
    assert placement.compare(even, even)["ok"]
    worse = placement.compare(piled, even)
    assert not worse["ok"]
    assert any("violations" in w for w in worse["worse"])


# ------------------------------------------------------------------ embedded + report


@pytest.fixture(scope="module")
def tiny_results() -> list[report.Comparison]:
    out = []
    for key in ("scheduling-basic", "topology-spreading", "csi-pvs"):
        spec = WORKLOADS[key].scaled(nodes=12, existing_pods=6, pods=40)
        c = report.Comparison(spec.key, spec.label, "embedded")
        c.add(embedded.run(spec, seed=1, timeout=60))
        out.append(c)
    return out


def test_embedded_run_binds_every_pod_and_checks_placement(
    tiny_results: list[report.Comparison],
) -> None:
    for c in tiny_results:
        r = c.runs[report.KSCHED][0]
        assert r.completed and r.bound == 40, r.notes
        assert r.pods_per_second > 0 and len(r.bind_times) == 40
        assert r.placement is not None and r.placement.measured_bound == 40
        assert r.placement.violations == 0
        assert r.cycle_p50_us > 0 and r.attempt_p50_ms > 0
        assert r.peak_rss_mib > 0
    spread = tiny_results[1].runs[report.KSCHED][0].placement
    assert spread is not None and sum(spread.measured_per_zone.values()) == 40


def test_report_renders_table_json_and_plot(
    tiny_results: list[report.Comparison], tmp_path: Path
) -> None:
    text = report.table(tiny_results)
    assert "SchedulingBasic/12Nodes_40Pods [embedded]" in text and "40/40" in text
    out = tmp_path / "r.json"
    report.write_json(out, tiny_results, meta={"scale": 1})
    doc = json.loads(out.read_bytes())
    assert doc["meta"]["scale"] == 1
    assert doc["workloads"][0]["medians"]["ksched"]["pods_per_second"] > 0
    pytest.importorskip("matplotlib")
    png = tmp_path / "r.png"
    report.plot(png, tiny_results)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_ratios_and_quality_of_a_side_by_side_comparison(
    tiny_results: list[report.Comparison],
) -> None:
    k = tiny_results[0].runs[report.KSCHED][0]
    upstream = dataclasses.replace(k, scheduler=report.UPSTREAM)
    upstream.pods_per_second = k.pods_per_second / 2
    c = report.Comparison("x", "X", "apiserver")
    c.add(k)
    c.add(upstream)
    assert c.ratios()["throughput"] == pytest.approx(2.0)
    quality = c.quality()
    assert quality is not None and quality["ok"]
    assert "ksched/upstream" in report.table([c])


def test_ksched_bench_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    rc = cli.main(
        [
            "bench",
            "--workload",
            "basic",
            "--nodes",
            "10",
            "--existing-pods",
            "5",
            "--pods",
            "30",
            "--json",
            str(out),
            "--plot",
            "",
            "--no-progress",
        ]
    )
    assert rc == 0
    assert "SchedulingBasic/10Nodes_30Pods" in capsys.readouterr().out
    assert json.loads(out.read_bytes())["workloads"][0]["runs"]["ksched"][0]["bound"] == 30
    assert not png.exists()


def test_ksched_bench_rejects_an_unknown_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--workload", "nope", "--no-progress"]) == 2
    assert "unknown workload" in capsys.readouterr().err


def test_a_larger_skew_within_a_hard_max_skew_differs_but_is_not_worse() -> None:
    constraint = {**SPREAD["spec"]["topologySpreadConstraints"][0], "maxSkew": 5}
    loose = {"spec": {"topologySpreadConstraints": [constraint]}}
    nodes = [_node("a", "z1"), _node("b", "z2"), _node("c", "z1")]
    even = placement.summarize(
        nodes, [_pod("p1", "a"), _pod("p2", "b")], measured_namespace="m", template=loose
    )
    piled = placement.summarize(
        nodes, [_pod("p1", "a"), _pod("p2", "c")], measured_namespace="m", template=loose
    )
    result = placement.compare(piled, even)
    assert result["ok"], result
    assert result["differs"] == ["topology.kubernetes.io/zone skew 2 > 0 (within maxSkew 5)"]
