"""GPUFit's own tests, written the way a plugin author writes them: ksched's pytest
fixtures (installed with ksched) run the real scheduler with the plugin's
configuration, and the plugin is passed as a factory, so it is tested before it is
installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ksched_gpu_memory import RESOURCE, TOTAL_LABEL, GPUFit

from ksched.testing import (
    Cluster,
    assert_pods_per_node,
    assert_unschedulable_count,
    pod,
)

CONFIG = Path(__file__).resolve().parents[1] / "scheduler-config.yaml"
PLUGINS = {"GPUFit": GPUFit}


def gpu_pod(name: str, memory: str) -> dict[str, Any]:
    return pod(name, requests={RESOURCE: memory})


def gpu_cluster(cluster: Cluster) -> None:
    cluster.add_nodes(2, name="a10-{i}", labels={TOTAL_LABEL: "24Gi"})
    cluster.add_nodes(1, name="h100-{i}", labels={TOTAL_LABEL: "80Gi"})
    cluster.add_nodes(1, name="cpu-{i}")


def test_a_large_request_goes_to_the_large_gpu(
    ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    gpu_cluster(ksched_cluster)
    out = ksched_scheduler(CONFIG, plugins=PLUGINS).schedule(gpu_pod("train", "40Gi"))
    assert out["train"] == "h100-0"


def test_most_allocated_packs_small_requests(
    ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    gpu_cluster(ksched_cluster)
    sched = ksched_scheduler(CONFIG, plugins=PLUGINS)
    out = sched.schedule([gpu_pod(f"infer-{i}", "8Gi") for i in range(3)])
    # MostAllocated: the three fill one 24Gi GPU before touching another.
    assert len(set(out.placements.values())) == 1
    assert_unschedulable_count(out, 0)
    assert_pods_per_node(out, max=0, nodes=["cpu-0"])


def test_what_does_not_fit_is_explained(ksched_cluster: Cluster, ksched_scheduler: Any) -> None:
    gpu_cluster(ksched_cluster)
    sched = ksched_scheduler(CONFIG, plugins=PLUGINS)
    out = sched.schedule(gpu_pod("huge", "100Gi"))
    assert_unschedulable_count(out, 1)
    expl = sched.explain(gpu_pod("huge-2", "100Gi"))
    assert expl.chosen is None
    verdicts = {v.node: (v.plugin, v.reason) for v in expl.nodes}
    assert verdicts["h100-0"] == (
        "GPUFit",
        f"Insufficient {RESOURCE}: node has 80Gi free of 80Gi, pod needs 100Gi",
    )
    assert verdicts["cpu-0"][0] == "GPUFit"
    assert expl.failed_scheduling == out.message_of("huge")


def test_gpufit_scores_appear_under_its_name(
    ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    gpu_cluster(ksched_cluster)
    expl = ksched_scheduler(CONFIG, plugins=PLUGINS).explain(gpu_pod("p", "8Gi"))
    scores = {v.node: {s.plugin: s for s in v.scores} for v in expl.nodes if v.scores}
    assert scores["a10-0"]["GPUFit"].raw == 33  # 8 of 24Gi
    assert scores["h100-0"]["GPUFit"].raw == 10  # 8 of 80Gi
    assert scores["a10-0"]["GPUFit"].weight == 2


def test_pods_without_gpu_memory_are_not_slowed_down(ksched_benchmark: Any) -> None:
    result = ksched_benchmark(
        "basic", config=CONFIG, plugins=PLUGINS, nodes=200, pods=400, rounds=1
    )
    assert result.placed == 400
