"""The example out-of-tree plugin, installed with pip and scheduling on the embedded
cluster through a KubeSchedulerConfiguration that enables it by name."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ksched.config import ConfigError, load_config, load_config_bytes
from ksched.framework.profile import Profile
from ksched.framework.registry import Registry
from ksched.profiles import ConfiguredPlugin, build_profiles
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from ksched.testing import Cluster

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gpu-memory-plugin"
CONFIG = EXAMPLE / "scheduler-config.yaml"
LABEL = "nvidia.com/gpu-memory.total"


def gpu_node(name: str, total: str | None) -> dict[str, Any]:
    return make_node(name, labels={LABEL: total} if total is not None else None)


def gpu_pod(name: str, memory: str) -> dict[str, Any]:
    pod = make_pod(name)
    resources = pod["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu-memory"] = memory
    resources["limits"]["nvidia.com/gpu-memory"] = memory
    return pod


def profiles_for(registry: Registry, path: Path = CONFIG) -> dict[str, Profile]:
    cfg = load_config(
        path, extra_plugins=registry.names(), extension_points=registry.extension_points()
    )
    return build_profiles(cfg, registry)


async def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


class Running:
    def __init__(self, cluster: InMemoryCluster, profiles: dict[str, Profile]) -> None:
        self.cluster = cluster
        self.sched = Scheduler(cluster, profiles, seed=1)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def placements(cluster: InMemoryCluster) -> dict[str, str | None]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in cluster.objects("pods")}


def failures(cluster: InMemoryCluster) -> list[str]:
    return [e["note"] for e in cluster.events if e["reason"] == "FailedScheduling"]


def test_installed_entry_point_is_registered(installed_registry: Registry) -> None:
    entry = installed_registry.get("GPUFit")
    assert entry is not None
    assert entry.extension_points == {"preFilter", "filter", "preScore", "score"}
    assert "ksched-gpu-memory-plugin" in entry.source


def test_profile_enables_it_by_name_with_its_weight(installed_registry: Registry) -> None:
    prof = profiles_for(installed_registry)["default-scheduler"]
    assert prof.plugins is not None
    gpu = next(p for p in prof.plugins if p.name == "GPUFit")
    assert isinstance(gpu, ConfiguredPlugin)
    assert gpu.weight == 2
    assert gpu.points == {"preFilter", "filter", "preScore", "score"}
    names = {p.name for p in prof.plugins}
    assert {"PrioritySort", "SchedulingGates", "DefaultBinder"} <= names


def test_without_the_package_the_name_is_unknown() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(CONFIG)
    assert '"GPUFit": plugin does not exist; known plugins: ' in str(info.value)


def test_schedules_by_free_gpu_memory(
    installed_registry: Registry, ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    ksched_cluster.add("nodes", gpu_node("big", "24Gi"))
    ksched_cluster.add("nodes", gpu_node("small", "16Gi"))
    ksched_cluster.add("nodes", gpu_node("cpu-only", None))
    # The installed plugin: the factory its entry point names.
    sched = ksched_scheduler(CONFIG, plugins=installed(installed_registry))
    # MostAllocated packs: both 8Gi pods fill "small" (50%, then 100%) before "big".
    got = [sched.schedule(gpu_pod(name, "8Gi"))[name] for name in ("g0", "g1", "g2")]
    assert got == ["small", "small", "big"]
    assert sched.schedule(make_pod("plain")).node_of("plain") is not None  # no GPU memory
    out = sched.schedule(gpu_pod("too-big", "20Gi"))
    # (DefaultPreemption, when present, appends why preemption cannot help.)
    assert out.message_of("too-big").startswith(
        "0/3 nodes are available: "
        "1 Insufficient nvidia.com/gpu-memory: node has 0 free of 16Gi, pod needs 20Gi, "
        "1 Insufficient nvidia.com/gpu-memory: node has 16Gi free of 24Gi, pod needs 20Gi, "
        "1 node(s) didn't have the nvidia.com/gpu-memory.total label."
    )


def installed(registry: Registry) -> dict[str, Any]:
    entry = registry.get("GPUFit")
    assert entry is not None
    return {"GPUFit": entry.factory}


async def test_rejected_pod_is_retried_when_a_node_gets_the_label(
    installed_registry: Registry,
) -> None:
    c = InMemoryCluster()
    c.create("nodes", gpu_node("n1", None))
    async with Running(c, profiles_for(installed_registry)):
        c.create("pods", gpu_pod("p", "4Gi"))
        await wait_for(lambda: len(failures(c)) == 1)
        assert failures(c)[0].startswith(
            "0/1 nodes are available: 1 node(s) didn't have the nvidia.com/gpu-memory.total label."
        )
        node = copy.deepcopy(c.get("nodes", "n1"))
        assert node is not None
        node["metadata"]["labels"][LABEL] = "8Gi"
        c.update("nodes", node)
        await wait_for(lambda: placements(c)["p"] == "n1")


def test_least_allocated_spreads(
    installed_registry: Registry, tmp_path: Path, ksched_cluster: Cluster, ksched_scheduler: Any
) -> None:
    text = CONFIG.read_text().replace("scoringStrategy: MostAllocated", "scoringStrategy: Least")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    from ksched.profiles import ProfileError

    with pytest.raises(ProfileError, match="scoringStrategy must be one of MostAllocated"):
        profiles_for(installed_registry, bad)

    good = tmp_path / "spread.yaml"
    good.write_text(text.replace("Least", "LeastAllocated"))
    ksched_cluster.add("nodes", gpu_node("big", "24Gi"))
    ksched_cluster.add("nodes", gpu_node("small", "16Gi"))
    out = ksched_scheduler(good, plugins=installed(installed_registry)).schedule(
        gpu_pod("g0", "8Gi")
    )
    assert out.placements == {"default/g0": "big"}


def test_validate_config_accepts_the_installed_plugin(installed_registry: Registry) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ksched", "validate-config", str(CONFIG)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    cfg = load_config_bytes(proc.stdout.encode(), extra_plugins=installed_registry.names())
    assert [p.name for p in cfg.profiles[0].plugin_config] == ["DefaultPreemption",
        "DynamicResources", "GPUFit", "InterPodAffinity", "NodeAffinity",
        "NodeResourcesBalancedAllocation", "NodeResourcesFit", "PodTopologySpread",
        "VolumeBinding"]  # fmt: skip


def test_the_example_plugins_own_suite_passes(installed_registry: Registry) -> None:
    """examples/gpu-memory-plugin/tests: the plugin author's tests, on ksched's fixtures."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=EXAMPLE,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout
