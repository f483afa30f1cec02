"""From a KubeSchedulerConfiguration to the scheduler's profile map
(:func:`ksched.profiles.build_profiles`), with out-of-tree plugins from a registry."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Mapping
from typing import Any

import pytest

from ksched import _core
from ksched.config import load_config_bytes
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework
from ksched.framework.status import Status
from ksched.profiles import ConfiguredPlugin, ProfileError, build_profiles
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class Zone:
    """Filter + Score plugin that remembers its args and handle."""

    name = "Zone"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Any, node: Any) -> int:
        return 0


class Binder:
    name = "Binder"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        pass

    async def bind(self, state: CycleState, pod: Any, node: str) -> Status | None:
        return None


class Eager:
    """A factory that uses the handle too early."""

    name = "Eager"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.api = handle.api

    def filter(self, state: CycleState, pod: Any, node: Any) -> Status | None:
        return None


def registry() -> Registry:
    reg = Registry()
    for factory in (Zone, Binder, Eager):
        reg.register(factory.name, factory)
    return reg


def profiles(body: str, reg: Registry | None = None) -> dict[str, Any]:
    reg = reg if reg is not None else registry()
    cfg = load_config_bytes(
        (HEAD + textwrap.dedent(body)).encode(),
        extra_plugins=reg.names(),
        extension_points=reg.extension_points(),
    )
    return build_profiles(cfg, reg)  # type: ignore[return-value]


def test_default_profile_uses_the_kernels_and_the_python_defaults() -> None:
    prof = profiles("")["default-scheduler"]
    assert list(prof.filters) == [f for f in _core.FILTER_PLUGINS]
    assert dict(prof.scores)["TaintToleration"] == 3
    assert prof.plugins is None  # the framework makes PrioritySort, SchedulingGates...
    assert prof.percentage_of_nodes_to_score == 0


async def test_profiles_share_one_scheduler_and_percentage_overrides_global() -> None:
    got = profiles(
        """\
        percentageOfNodesToScore: 40
        profiles:
        - schedulerName: default-scheduler
        - schedulerName: batch
          percentageOfNodesToScore: 70
        """
    )
    assert {n: p.percentage_of_nodes_to_score for n, p in got.items()} == {
        "default-scheduler": 40,
        "batch": 70,
    }
    sched = Scheduler(InMemoryCluster(), got)
    assert sched.handles("batch") and sched.handles("default-scheduler")
    assert not sched.handles("other-scheduler")
    assert len(sched.frameworks) == 2  # one framework per profile, one queue and cache
    assert sched.queue is not None and sched.cache is not None


def test_out_of_tree_plugin_gets_args_weight_and_only_its_enabled_points() -> None:
    prof = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            multiPoint:
              enabled:
              - name: Zone
                weight: 4
            score:
              disabled:
              - name: Zone
          pluginConfig:
          - name: Zone
            args: {zones: [a, b]}
        """
    )["default-scheduler"]
    zone = next(p for p in prof.plugins if p.name == "Zone")
    assert isinstance(zone, ConfiguredPlugin)
    assert zone.plugin.args == {"zones": ["a", "b"]}
    assert zone.points == {"filter"}
    assert hasattr(zone, "filter") and not hasattr(zone, "score")
    fw = Framework(prof)
    # DynamicResources (v1.36's default set) scores in Python (its Filter is in the core).
    assert [p.name for p in fw.points.filter] == ["Zone"]
    assert [p.name for p in fw.points.score] == ["DynamicResources"]


def test_score_weight_comes_from_the_profile() -> None:
    prof = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            multiPoint:
              enabled: [{name: Zone, weight: 4}]
            score:
              enabled: [{name: Zone, weight: 9}]
        """
    )["default-scheduler"]
    fw = Framework(prof)
    assert fw.score_weights == {"DynamicResources": 2, "Zone": 9}


def test_custom_binder_replaces_default_binder() -> None:
    prof = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            bind:
              enabled: [{name: Binder}]
              disabled: [{name: DefaultBinder}]
        """
    )["default-scheduler"]
    names = [p.name for p in prof.plugins]
    assert "Binder" in names and "DefaultBinder" not in names
    assert [p.name for p in Framework(prof).points.bind] == ["Binder"]


def test_disabled_python_default_is_left_out() -> None:
    prof = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            multiPoint:
              disabled: [{name: SchedulingGates}]
        """
    )["default-scheduler"]
    assert prof.plugins is not None
    assert "SchedulingGates" not in [p.name for p in prof.plugins]


def test_factory_must_not_use_the_handle_before_the_scheduler_exists() -> None:
    body = """\
    profiles:
    - schedulerName: default-scheduler
      plugins:
        filter:
          enabled: [{name: Eager}]
    """
    with pytest.raises(ProfileError, match=r"initializing plugin 'Eager': RuntimeError: .*setup"):
        profiles(body)


async def test_handle_given_to_the_factory_works_once_the_scheduler_is_built() -> None:
    got = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            filter:
              enabled: [{name: Zone}]
        """
    )
    cluster = InMemoryCluster()
    Scheduler(cluster, got)
    zone = next(p for p in got["default-scheduler"].plugins if p.name == "Zone")
    assert zone.plugin.handle.api is cluster
    with pytest.raises(RuntimeError, match="already belong to a scheduler"):
        Scheduler(InMemoryCluster(), got)


async def test_python_filter_restricted_by_config_schedules_on_the_embedded_cluster() -> None:
    from ksched.sim.workloads import make_node, make_pod

    class OnlyB:
        name = "OnlyB"

        def __init__(self, args: Any, handle: Handle) -> None:
            pass

        def filter(self, state: CycleState, pod: Any, node: Any) -> Status | None:
            from ksched.framework.status import Code

            return None if node.name == "b" else Status(Code.UNSCHEDULABLE, "not b")

    reg = Registry()
    reg.register("OnlyB", OnlyB)
    got = profiles(
        """\
        profiles:
        - schedulerName: default-scheduler
          plugins:
            multiPoint:
              enabled: [{name: OnlyB}]
        """,
        reg,
    )
    c = InMemoryCluster()
    for n in ("a", "b", "c"):
        c.create("nodes", make_node(n))
    sched = Scheduler(c, got, seed=1)
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        for i in range(5):
            c.create("pods", make_pod(f"p{i}"))
        for _ in range(500):
            if all(p["spec"].get("nodeName") for p in c.objects("pods")):
                break
            await asyncio.sleep(0.01)
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert {p["spec"].get("nodeName") for p in c.objects("pods")} == {"b"}
