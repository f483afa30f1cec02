"""Shadow mode on the embedded cluster, beside another ksched acting as the active
scheduler: the judgement of each decision, the metric, the log line of each
``different``, and that the shadow writes nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import generate_latest

from ksched.api.pod import Pod
from ksched.framework.builtins import default_plugins
from ksched.framework.interface import CycleState, NodeInfo, Status
from ksched.framework.profile import Profile, default_profile
from ksched.framework.status import Code
from ksched.plugins.taint_toleration import ERR_REASON_UNTOLERATED
from ksched.readonly import READS, ReadOnlyClusterAPI
from ksched.scheduler import Scheduler
from ksched.shadow import (
    DIFFERENT,
    EQUAL_SCORE,
    KSCHED_ONLY,
    KSCHED_UNSCHEDULABLE,
    SAME_NODE,
    ShadowError,
    ShadowScheduler,
    shadow_targets,
)
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for

PROFILE = "default-scheduler"


class Spy:
    """A ClusterAPI proxy that records every call the shadow makes."""

    def __init__(self, inner: InMemoryCluster) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if callable(attr):

            def call(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                return attr(*args, **kwargs)

            return call
        return attr


class RejectAll:
    name = "RejectAll"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, "node(s) were refused")


def profile(**kw: Any) -> dict[str, Profile]:
    plugins = kw.pop("plugins", None)
    p = default_profile(**kw)
    if plugins is not None:
        p = Profile(p.scheduler_name, p.filters, p.scores, p.plugin_args, 0, plugins=plugins)
    return {PROFILE: p}


MOST = {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated", "resources": [
    {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}  # fmt: skip


class Pair:
    """An active ksched and a shadow on one embedded cluster."""

    def __init__(
        self, cluster: InMemoryCluster, active: dict[str, Profile], shadow: dict[str, Profile]
    ) -> None:
        self.cluster = cluster
        self.spy = Spy(cluster)
        self.active = Scheduler(cluster, active, seed=1)
        self.shadow = ShadowScheduler(self.spy, shadow, seed=2)  # type: ignore[arg-type]

    async def __aenter__(self) -> Pair:
        await self.shadow.start()
        self.tasks = [
            asyncio.get_running_loop().create_task(s.run()) for s in (self.active, self.shadow)
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in (self.active, self.shadow):
            await s.shutdown()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def settle(self, cond: Callable[[], bool]) -> None:
        await wait_for(cond, timeout=30)


def cluster_with(nodes: int, **kw: Any) -> InMemoryCluster:
    c = InMemoryCluster()
    for i in range(nodes):
        c.create("nodes", make_node(f"node-{i}", **kw))
    return c


async def test_same_configuration_agrees_and_writes_nothing() -> None:
    c = cluster_with(20)
    async with Pair(c, profile(), profile()) as pair:
        for i in range(300):
            c.create("pods", make_pod(f"p{i}", namespace="x"))
        await pair.settle(lambda: len(pair.shadow.decisions) == 300)
        counts = pair.shadow.counts()
    assert counts[SAME_NODE] + counts[EQUAL_SCORE] == 300, counts
    assert counts[SAME_NODE] > 0 and counts[EQUAL_SCORE] > 0
    assert set(pair.spy.calls) <= READS, set(pair.spy.calls)
    assert sum(pair.shadow.read_only_api.refused.values()) == 0
    text = generate_latest(pair.shadow.metrics.registry).decode()
    assert f'ksched_shadow_decisions_total{{result="same_node"}} {float(counts[SAME_NODE])}' in text
    assert 'ksched_shadow_decisions_total{result="ksched_only"} 0.0' in text


async def test_a_different_strategy_is_reported_with_the_scores(
    caplog: pytest.LogCaptureFixture,
) -> None:
    c = cluster_with(6)
    async with Pair(c, profile(plugin_args=MOST), profile()) as pair:
        with caplog.at_level(logging.WARNING, logger="ksched.shadow"):
            for i in range(30):
                c.create("pods", make_pod(f"p{i}", namespace="x"))
            await pair.settle(lambda: len(pair.shadow.decisions) == 30)
    different = [d for d in pair.shadow.decisions if d.result == DIFFERENT]
    assert different, pair.shadow.counts()
    for d in different:
        assert d.bound_to != d.ksched_node and "NodeResourcesFit" in d.detail
        assert any(d.pod in r.message and "NodeResourcesFit" in r.message for r in caplog.records)


async def test_ksched_unschedulable_and_ksched_only() -> None:
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    c = cluster_with(3, taints=taint)
    # The active scheduler ignores taints: it binds pods ksched cannot place.
    lenient = profile(filters=("NodeUnschedulable", "NodeName", "NodeResourcesFit"))
    async with Pair(c, lenient, profile()) as pair:
        c.create("pods", make_pod("tainted", namespace="x"))
        await pair.settle(lambda: len(pair.shadow.decisions) == 1)
    (d,) = pair.shadow.decisions
    assert d.result == KSCHED_UNSCHEDULABLE and d.ksched_node is None
    assert f"TaintToleration: {ERR_REASON_UNTOLERATED}" in d.detail

    c = cluster_with(3)
    strict = profile(plugins=(*default_plugins(), RejectAll()))
    async with Pair(c, strict, profile()) as pair:
        c.create("pods", make_pod("refused", namespace="x"))
        await pair.settle(lambda: len(pair.shadow.decisions) == 1)
    (d,) = pair.shadow.decisions
    assert d.result == KSCHED_ONLY and d.bound_to is None and d.ksched_node is not None
    assert "node(s) were refused" in d.detail


def test_targets() -> None:
    profiles = {"a": default_profile("a"), "b": default_profile("b")}
    assert shadow_targets(profiles, []) == {"a": "a", "b": "b"}
    assert shadow_targets(profiles, ["b"]) == {"b": "b"}
    assert shadow_targets({"a": profiles["a"]}, ["kube"]) == {"kube": "a"}
    with pytest.raises(ShadowError, match="--shadow-scheduler-name kube"):
        shadow_targets(profiles, ["kube"])


async def test_every_write_is_refused() -> None:
    api = ReadOnlyClusterAPI(InMemoryCluster(), mode="t")
    calls = [
        api.bind(namespace="x", name="p", uid="u", node_name="n"),
        api.create_event(event={"reason": "Scheduled"}),
        api.patch_pod_status(namespace="x", name="p", patch={}),
        api.delete_pod(namespace="x", name="p", uid="u"),
        api.update_object(kind="pods", obj={}),
        api.patch_object(kind="pods", namespace="x", name="p", patch={}),
        api.create_lease(lease={}),
        api.update_lease(lease={}),
    ]
    for coro in calls:
        with pytest.raises(Exception, match="t is read-only: refused") as info:
            await coro
        assert getattr(info.value, "status", None) == 403
    assert sum(api.refused.values()) == 8
    with pytest.raises(AttributeError, match="read-only"):
        _ = api.create  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "argv", "shadow", "names"),
    [
        ("run", ["run"], False, []),
        ("shadow", ["shadow"], True, []),
        (
            "named",
            ["shadow", "--shadow-scheduler-name", "a", "--shadow-scheduler-name=b,c"],
            True,
            ["a", "b", "c"],
        ),
    ],
)
def test_shadow_command_flags(
    name: str, argv: list[str], shadow: bool, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ksched.run as run
    from ksched import cli
    from ksched.options import Options

    captured: list[Options] = []

    def main(opts: Options) -> int:
        captured.append(opts)
        return 0

    monkeypatch.setattr(run, "main", main)
    assert cli.main(argv) == 0
    (opts,) = captured
    assert (opts.shadow, opts.shadow_scheduler_names) == (shadow, names)


def test_run_keeps_kube_schedulers_flags_and_shadow_has_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ksched import cli

    assert cli.main(["run", "--shadow-scheduler-name=a"]) == 1
    assert capsys.readouterr().err.endswith("Error: unknown flag: --shadow-scheduler-name\n")
    assert cli.main(["shadow", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Shadow mode: decide beside the cluster's active scheduler")
    assert "Usage:\n  ksched shadow [flags]\n" in out
    assert "--shadow-scheduler-name strings" in out and "--feature-gates" in out


@pytest.mark.parametrize(
    ("name", "config", "argv", "error"),
    [
        ("extenders", "extenders:\n- urlPrefix: http://127.0.0.1:1/\n  filterVerb: filter\n",
         [], "shadow mode does not call scheduler extenders"),
        ("ambiguous-name", "profiles:\n- schedulerName: a\n- schedulerName: b\n",
         ["--shadow-scheduler-name", "kube"], "--shadow-scheduler-name kube"),
    ],
)  # fmt: skip
def test_run_refuses_shadow_setups_it_cannot_honour(
    name: str,
    config: str,
    argv: list[str],
    error: str,
    tmp_path: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ksched import cli

    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + config
    )
    with caplog.at_level(logging.ERROR):
        assert cli.main(["shadow", "--config", str(path), *argv]) == 1
    # "command failed" err="...", as kube-scheduler reports a startup error.
    failed = [r for r in caplog.records if r.getMessage() == "command failed"]
    assert any(error in str(r.klog_kv[2]) for r in failed)  # type: ignore[attr-defined]
