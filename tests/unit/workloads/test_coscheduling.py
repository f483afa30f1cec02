"""scheduler-plugins Coscheduling on the embedded cluster: the PodGroup CRD, the
pod-group label, CoschedulingArgs, QueueSort, PreFilter, PostFilter and Permit."""

from __future__ import annotations

import pytest

from ksched.config import DEFAULT_FEATURE_GATES, ConfigError
from ksched.profiles import ProfileError
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for
from tests.unit.workloads.helpers import (
    Running,
    bound,
    cosched_group,
    cosched_member,
    events_of,
    profiles,
)

GATES = DEFAULT_FEATURE_GATES
KIND = "podgroups.scheduling.x-k8s.io"

COSCHEDULING = """\
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
"""


def _with_args(args: str) -> str:
    return COSCHEDULING + "  pluginConfig:\n  - name: Coscheduling\n    args:\n" + args


async def test_group_that_fits_binds_completely() -> None:
    c = InMemoryCluster()
    for i in range(3):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    c.create(KIND, cosched_group("job", 3))
    async with Running(c, profiles(COSCHEDULING, GATES), gates=GATES):
        for i in range(3):
            c.create("pods", cosched_member(f"w{i}", "job", cpu="1500m"))
        await wait_for(lambda: len(bound(c)) == 3)
        assert len(set(bound(c).values())) == 3


async def test_group_one_node_short_binds_nothing_then_completely_when_a_node_comes() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    c.create(KIND, cosched_group("job", 3))
    async with Running(c, profiles(COSCHEDULING, GATES), gates=GATES):
        for i in range(3):
            c.create("pods", cosched_member(f"w{i}", "job", cpu="1500m"))
        await wait_for(lambda: sum(len(events_of(c, f"w{i}")) for i in range(3)) >= 3)
        assert bound(c) == {}
        notes = {f"w{i}": events_of(c, f"w{i}")[0] for i in range(3)}
        failing = [p for p, n in notes.items() if n.startswith("0/2 nodes")]
        assert len(failing) == 1
        assert notes[failing[0]].endswith(
            f"PodGroup default/job gets rejected due to Pod {failing[0]} is unschedulable "
            "even after PostFilter"
        )
        assert all(
            n == "0/1 nodes are available: 1 optimistic rejection in PostFilter."
            for p, n in notes.items()
            if p not in failing
        )
        c.create("nodes", make_node("n2", cpu="2"))
        await wait_for(lambda: len(bound(c)) == 3)


async def test_group_with_fewer_pods_than_min_member_is_rejected_in_pre_filter() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create(KIND, cosched_group("job", 3))
    async with Running(c, profiles(COSCHEDULING, GATES), gates=GATES):
        c.create("pods", cosched_member("w0", "job"))
        c.create("pods", cosched_member("w1", "job"))
        await wait_for(lambda: bool(events_of(c, "w0")))
        assert events_of(c, "w0")[0].startswith(
            "0/1 nodes are available: pre-filter pod w0 cannot find enough sibling pods, "
            "current pods number: 2, minMember of group: 3."
        )
        assert bound(c) == {}
        c.create("pods", cosched_member("w2", "job"))
        await wait_for(lambda: len(bound(c)) == 3)


async def test_min_resources_the_cluster_cannot_hold_report_the_gap() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="2"))
    c.create(KIND, cosched_group("job", 1, minResources={"cpu": "3"}))
    async with Running(c, profiles(COSCHEDULING, GATES), gates=GATES):
        c.create("pods", cosched_member("w0", "job", cpu="100m"))
        await wait_for(lambda: bool(events_of(c, "w0")))
        assert events_of(c, "w0")[0].startswith(
            "0/1 nodes are available: resource gap: map[cpu:{{1000 -3} {<nil>}  DecimalSI}]."
        )


async def test_pods_without_the_label_are_scheduled_as_usual() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="2"))
    async with Running(c, profiles(COSCHEDULING, GATES), gates=GATES):
        c.create("pods", make_pod("solo", cpu="1"))
        await wait_for(lambda: len(bound(c)) == 1)


def test_args_decode_strictly_and_default() -> None:
    from ksched.config import load_config_bytes

    head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    cfg = load_config_bytes((head + _with_args("      permitWaitingTimeSeconds: 10\n")).encode())
    (pc,) = [p for p in cfg.profiles[0].plugin_config if p.name == "Coscheduling"]
    assert pc.args is not None
    assert (
        pc.args.permit_waiting_time_seconds,  # type: ignore[union-attr]
        pc.args.pod_group_backoff_seconds,  # type: ignore[union-attr]
        pc.args.pod_group_reject_percentage,  # type: ignore[union-attr]
    ) == (10, 0, 10)
    with pytest.raises(
        ConfigError,
        match=r'unknown field "profiles\[0\]\.pluginConfig\[0\]\.args\.permitWaitingTime"',
    ):
        load_config_bytes((head + _with_args("      permitWaitingTime: 10\n")).encode())
    with pytest.raises(ConfigError, match="were not of type CoschedulingArgs"):
        load_config_bytes((head + _with_args("      kind: NodeResourcesFitArgs\n")).encode())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "      permitWaitingTimeSeconds: -1\n",
            "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0",
        ),
        (
            "      podGroupRejectPercentage: 101\n",
            "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100",
        ),
    ],
)
def test_invalid_args_refuse_the_profile(args: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        profiles(_with_args(args), GATES)
