"""ksched's pytest plugin and ``ksched.testing``: the fixtures as a user's suite uses
them, the assertions' failure messages, and the plugin staying inert until used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ksched.plugins.inter_pod_affinity import ERR_REASON_ANTI_AFFINITY
from ksched.plugins.node_affinity import ERR_REASON_POD
from ksched.testing import (
    Cluster,
    EmbeddedScheduler,
    Placement,
    assert_no_affinity_violations,
    assert_pods_per_node,
    assert_spread_skew,
    assert_unschedulable_count,
    assert_utilization,
    pod,
)

ZONE = "topology.kubernetes.io/zone"
ANTI = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
}


def test_the_plugin_is_inert_until_a_fixture_is_used() -> None:
    code = (
        "import sys, ksched.testing.pytest_plugin, ksched.testing\n"
        "heavy = [m for m in ('ksched.scheduler', 'ksched._core', 'ksched.testing.controlplane') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cluster_builders(ksched_cluster: Cluster, tmp_path: Path) -> None:
    nodes = ksched_cluster.add_nodes(6, zones=["a", "b", "c"], labels={"pool": "x"}, cpu="2")
    assert nodes == [f"node-{i}" for i in range(6)]
    ksched_cluster.add_node(
        "gpu",
        allocatable={"nvidia.com/gpu": "2"},
        taints=[{"key": "gpu", "value": "y", "effect": "NoSchedule"}],
    )
    keys = ksched_cluster.add_pods(4, on=nodes[:2], namespace="prod", labels={"app": "db"})
    assert keys == [f"prod/existing-{i}" for i in range(4)]
    ksched_cluster.add_namespace("prod", {"team": "a"})
    ksched_cluster.add_yaml(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: prod}\n"
        "spec: {maxUnavailable: 1, selector: {matchLabels: {app: db}}}\n"
        "---\napiVersion: v1\nkind: PersistentVolumeClaim\n"
        "metadata: {name: data, namespace: prod}\n"
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
    )
    assert [n["metadata"]["labels"][ZONE] for n in ksched_cluster.nodes()[:6]] == [
        "a",
        "b",
        "c",
    ] * 2
    gpu = next(n for n in ksched_cluster.nodes() if n["metadata"]["name"] == "gpu")
    assert gpu["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert ksched_cluster.bound() == {
        "prod/existing-0": "node-0",
        "prod/existing-1": "node-1",
        "prod/existing-2": "node-0",
        "prod/existing-3": "node-1",
    }
    assert len(ksched_cluster.objects("PodDisruptionBudget")) == 1
    assert len(ksched_cluster.objects("persistentvolumeclaims")) == 1
    with pytest.raises(ValueError, match="unknown kind 'Secret'"):
        ksched_cluster.add("Secret", {"metadata": {"name": "s"}})


@pytest.mark.parametrize(
    ("name", "kw", "nodes", "existing", "pending"),
    [
        ("simulate-workload", {"nodes": 30}, 30, 0, 60),
        ("simulate-anti-affinity", {"nodes": 20}, 20, 4, 8),
        ("workload-file", {"scale": 0.01}, 50, 10, 100),
        ("scheduler-perf-name", {"scale": 0.01}, 50, 10, 100),
    ],
)
def test_named_workloads(
    name: str, kw: dict[str, Any], nodes: int, existing: int, pending: int
) -> None:
    workload = {
        "simulate-workload": "basic",
        "simulate-anti-affinity": "pod-anti-affinity",
        "workload-file": "scheduling-basic",
        "scheduler-perf-name": "SchedulingBasic",
    }[name]
    c = Cluster.from_workload(workload, **kw)
    assert (len(c.nodes()), len(c.bound()), len(c.workload_pods)) == (nodes, existing, pending)


def test_schedule_and_explain(ksched_cluster: Cluster, ksched_scheduler: Any) -> None:
    ksched_cluster.add_nodes(3, cpu="2")
    sched: EmbeddedScheduler = ksched_scheduler()
    out = sched.schedule([pod(f"w{i}", cpu="900m") for i in range(6)] + [pod("huge", cpu="3")])
    assert len(out.placements) == 6 and set(out.placements.values()) == {
        "node-0",
        "node-1",
        "node-2",
    }
    assert list(out.unschedulable) == ["default/huge"]
    assert out.message_of("huge").startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert_unschedulable_count(out, 1)
    assert_pods_per_node(out, max=2, min=2)
    expl = sched.explain(pod("probe", cpu="200m"))
    assert expl.chosen in ("node-0", "node-1", "node-2") and expl.feasible_nodes == 3
    again = sched.explain("default/huge")
    assert again.failed_scheduling == out.message_of("huge")
    # Each node has 200m left of 2 cpu: the verified bound.
    (bound,) = [s for s in again.suggestions if s.kind == "resource"]
    assert bound.details["bound"] == 200 and len(bound.nodes) == 3
    assert "scheduler_schedule_attempts_total" in sched.metrics()


async def test_an_async_test_can_use_it(ksched_cluster: Cluster, ksched_scheduler: Any) -> None:
    ksched_cluster.add_nodes(2)
    out = ksched_scheduler().schedule(pod("p"))
    assert out["p"] in ("node-0", "node-1")


class OnlyEven:
    """An out-of-tree Filter plugin under test, given as a factory (not installed)."""

    name = "OnlyEven"

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args or {}

    def filter(self, state: Any, p: Any, node: Any) -> Any:
        from ksched.framework.interface import Code, Status

        if int(node.name.rsplit("-", 1)[1]) % 2:
            return Status(Code.UNSCHEDULABLE, "node(s) were odd")
        return None


@pytest.mark.parametrize(
    "config",
    [
        {
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"multiPoint": {"enabled": [{"name": "OnlyEven"}]}},
                }
            ]
        },
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins: {multiPoint: {enabled: [{name: OnlyEven}]}}\n",
    ],
    ids=["dict", "yaml-text"],
)
def test_out_of_tree_plugins_and_config_forms(
    config: Any, ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    ksched_cluster.add_nodes(4)
    out = ksched_scheduler(config, plugins={"OnlyEven": OnlyEven}).schedule(
        [pod(f"p{i}") for i in range(8)]
    )
    assert set(out.placements.values()) == {"node-0", "node-2"}
    expl = ksched_scheduler(
        config, plugins={"OnlyEven": OnlyEven}, cluster=Cluster.from_workload("basic", nodes=4)
    ).explain(pod("x"))
    assert {v.node for v in expl.nodes if v.plugin == "OnlyEven"} == {"node-1", "node-3"}


def test_config_from_a_path(tmp_path: Path, ksched_cluster: Cluster, ksched_scheduler: Any) -> None:
    cfg = tmp_path / "most.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: MostAllocated}}\n"
    )
    ksched_cluster.add_nodes(5)
    out = ksched_scheduler(cfg).schedule([pod(f"p{i}") for i in range(10)])
    assert len(set(out.placements.values())) == 1  # packed


def test_a_bad_config_names_the_field(ksched_cluster: Cluster, ksched_scheduler: Any) -> None:
    from ksched.config import ConfigError

    with pytest.raises(ConfigError, match="percentageOfNodesToScore"):
        ksched_scheduler({"percentageOfNodesToScore": 300})


# ---- assertions and their messages -------------------------------------------------------------


def placement(*pods: dict[str, Any], zones: int = 3, nodes: int = 3) -> Placement:
    c = Cluster()
    c.add_nodes(nodes, zones=[f"z{i}" for i in range(zones)], cpu="2")
    for p in pods:
        c.add("pods", p)
    return c.state()


def web(name: str, node: str, **kw: Any) -> dict[str, Any]:
    return pod(name, labels={"app": "web"}, node_name=node, **kw)


@pytest.mark.parametrize(
    ("name", "check", "message"),
    [
        (
            "skew-above-max",
            lambda: assert_spread_skew(
                placement(web("a", "node-0"), web("b", "node-0"), web("c", "node-0")),
                ZONE,
                1,
                selector={"app": "web"},
            ),
            "spread skew over topology.kubernetes.io/zone is 3 > 1: "
            "topology.kubernetes.io/zone=z0 has 3 pods "
            "(default/a, default/b, default/c), topology.kubernetes.io/zone=z1 has 0",
        ),
        (
            "too-many-pods-on-a-node",
            lambda: assert_pods_per_node(placement(web("a", "node-1"), web("b", "node-1")), max=1),
            "pods per node should be ≤ 1: node-1 has 2 (default/a, default/b)",
        ),
        (
            "too-few-pods",
            lambda: assert_pods_per_node(
                placement(web("a", "node-1")), min=1, nodes=["node-0", "node-1"]
            ),
            "pods per node should be ≥ 1: node-0 has 0",
        ),
        (
            "utilization-above-max",
            lambda: assert_utilization(placement(web("a", "node-2", cpu="1800m")), "cpu", max=0.8),
            "cpu utilization should be ≤ 80%: node-2 at 90.0% (1800 of 2000; pods: default/a)",
        ),
        (
            "anti-affinity-broken",
            lambda: assert_no_affinity_violations(
                placement(
                    pod("db-0", labels={"app": "db"}, node_name="node-0", spec=ANTI),
                    pod("db-1", labels={"app": "db"}, node_name="node-0", spec=ANTI),
                )
            ),
            "2 affinity violation(s): default/db-0 on node-0: "
            f"{ERR_REASON_ANTI_AFFINITY} (with default/db-1); "
            f"default/db-1 on node-0: {ERR_REASON_ANTI_AFFINITY} "
            "(with default/db-0)",
        ),
        (
            "node-selector-broken",
            lambda: assert_no_affinity_violations(
                placement(pod("ssd", node_name="node-1", spec={"nodeSelector": {"disk": "ssd"}}))
            ),
            f"1 affinity violation(s): default/ssd on node-1: {ERR_REASON_POD}",
        ),
    ],
)
def test_assertion_messages_name_nodes_and_pods(name: str, check: Any, message: str) -> None:
    with pytest.raises(AssertionError) as info:
        check()
    assert str(info.value).startswith(message), str(info.value)


def test_assertions_pass_on_a_good_placement(
    ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    ksched_cluster.add_nodes(6, zones=["z0", "z1", "z2"])
    sched = ksched_scheduler()
    out = sched.schedule(
        [pod(f"web-{i}", labels={"app": "web"}, spec=SPREAD) for i in range(9)]
        + [pod(f"db-{i}", labels={"app": "db"}, spec=ANTI) for i in range(6)]
    )
    assert_unschedulable_count(out, 0)
    assert_spread_skew(out, ZONE, 1, selector={"matchLabels": {"app": "web"}})
    assert_no_affinity_violations(out)
    assert_pods_per_node(out, selector={"app": "db"}, max=1)
    assert_utilization(out, "cpu", max=0.5)
    more = sched.schedule(pod("db-extra", labels={"app": "db"}, spec=ANTI))
    with pytest.raises(
        AssertionError, match=r"1 pods unschedulable, expected 0: default/db-extra: 0/6 nodes"
    ):
        assert_unschedulable_count(more, 0)


def test_ksched_benchmark_records_extra_info(
    ksched_benchmark: Any, request: pytest.FixtureRequest
) -> None:
    result = ksched_benchmark("basic", nodes=100, pods=200, rounds=2)
    # --benchmark-disable runs a benchmark once.
    rounds = 1 if request.config.getoption("benchmark_disable", False) else 2
    assert len(result.rounds) == rounds and result.placed == 200
    info = request.getfixturevalue("benchmark").extra_info
    assert {"pods_per_second", "attempt_p50_us", "attempt_p99_us", "peak_rss_mib"} <= set(info)
    assert info["pods_per_second"] == result.pods_per_second > 0


def test_the_readme_example_is_the_example_file() -> None:
    root = Path(__file__).resolve().parents[3]
    example = (root / "examples" / "user-suite" / "test_quickstart.py").read_text()
    assert f"```python\n{example}```" in (root / "README.md").read_text()


BENCH_TEST = """
def test_basic(ksched_benchmark):
    ksched_benchmark("basic", nodes=50, pods=100, rounds=2)
"""


def test_pytest_benchmark_options_work_as_usual(tmp_path: Path) -> None:
    """``--benchmark-json`` carries the fixture's extra_info; ``--benchmark-autosave``
    then ``--benchmark-compare`` compares two runs, as with any pytest-benchmark test."""
    import json

    (tmp_path / "test_user_bench.py").write_text(BENCH_TEST)
    storage = f"file://{tmp_path / 'storage'}"
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user_bench.py",
            f"--benchmark-storage={storage}"]  # fmt: skip
    for extra in (["--benchmark-autosave", "--benchmark-json=run.json"], ["--benchmark-compare"]):
        proc = subprocess.run(
            [*base, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    info = json.loads((tmp_path / "run.json").read_text())["benchmarks"][0]["extra_info"]
    assert info["workload"] == "basic" and info["placed"] == 100
    assert len(info["pods_per_second_rounds"]) == 2
    assert "0001_" in proc.stdout  # the saved run it compared against
