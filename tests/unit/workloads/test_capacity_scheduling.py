"""scheduler-plugins CapacityScheduling on the embedded cluster: ElasticQuota min/max,
borrowing unused min, PreFilter rejections, and preemption that reclaims borrowed room."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.api.workloads import ElasticQuota
from ksched.config import DEFAULT_FEATURE_GATES
from ksched.plugins.capacity_scheduling import (
    ElasticQuotaInfo,
    aggregated_used_over_min_with,
    pod_request,
)
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for
from tests.unit.workloads.helpers import Running, bound, events_of, profiles

GATES = DEFAULT_FEATURE_GATES
KIND = "elasticquotas.scheduling.x-k8s.io"

CAPACITY = """\
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter:
      enabled:
      - name: CapacityScheduling
    postFilter:
      enabled:
      - name: CapacityScheduling
      disabled:
      - name: "*"
    reserve:
      enabled:
      - name: CapacityScheduling
"""


def quota(ns: str, low: dict[str, str] | None, high: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if low is not None:
        spec["min"] = low
    if high is not None:
        spec["max"] = high
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": ns},
        "spec": spec,
    }


def _pod(name: str, ns: str, **kwargs: Any) -> dict[str, Any]:
    return make_pod(name, namespace=ns, memory=None, **kwargs)


# ---- the quota arithmetic (elasticquota_test.go) -------------------------------------------


def _info(
    low: dict[str, str] | None, high: dict[str, str] | None, used: dict[str, int]
) -> ElasticQuotaInfo:
    info = ElasticQuotaInfo.of(ElasticQuota.from_dict(quota("ns", low, high)))
    info.used = dict(used)
    return info


@pytest.mark.parametrize(
    ("case", "low", "high", "used", "asked", "over_min", "over_max"),
    [
        ("within-both", {"cpu": "2"}, {"cpu": "4"}, {"cpu": 1000}, {"cpu": 1000}, False, False),
        (
            "over-min-within-max",
            {"cpu": "2"},
            {"cpu": "4"},
            {"cpu": 2000},
            {"cpu": 1000},
            True,
            False,
        ),
        ("over-max", {"cpu": "2"}, {"cpu": "4"}, {"cpu": 3500}, {"cpu": 1000}, True, True),
        # A max without cpu allows no cpu at all (framework.NewResource leaves it 0).
        ("max-without-cpu", None, {"memory": "1Gi"}, {}, {"cpu": 100}, True, True),
        # No min means min 0 for cpu, memory and ephemeral-storage.
        ("no-min", None, None, {}, {"cpu": 1}, True, False),
        # Scalar resources absent from min count as 0, absent from max as unbounded.
        ("scalar", {"cpu": "1"}, {"cpu": "1"}, {}, {"nvidia.com/gpu": 1}, True, False),
    ],
)
def test_quota_bounds(
    case: str,
    low: dict[str, str] | None,
    high: dict[str, str] | None,
    used: dict[str, int],
    asked: dict[str, int],
    over_min: bool,
    over_max: bool,
) -> None:
    info = _info(low, high, used)
    assert info.used_over_min_with(asked) is over_min
    assert info.used_over_max_with(asked) is over_max


def test_aggregated_min_is_the_sum_of_every_quota() -> None:
    a = _info({"cpu": "2"}, None, {"cpu": 3000})
    b = _info({"cpu": "2"}, None, {"cpu": 0})
    assert not aggregated_used_over_min_with({"a": a, "b": b}, {"cpu": 1000})
    assert aggregated_used_over_min_with({"a": a, "b": b}, {"cpu": 1001})


def test_pod_request_sums_containers_and_takes_the_largest_init_container() -> None:
    obj = make_pod("p", cpu="1", memory="1Gi")
    obj["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "500m"}}})
    obj["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}
    ]
    obj["spec"]["overhead"] = {"cpu": "100m"}
    obj["metadata"]["uid"] = "u"
    assert pod_request(Pod.from_dict(obj)) == {"cpu": 2100, "memory": 1024**3}


# ---- the plugin on the embedded cluster --------------------------------------------------


async def test_pre_filter_rejects_a_pod_over_its_max() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create(KIND, quota("a", {"cpu": "1"}, {"cpu": "2"}))
    async with Running(c, profiles(CAPACITY, GATES), gates=GATES):
        c.create("pods", _pod("big", "a", cpu="3"))
        await wait_for(lambda: bool(events_of(c, "big")))
        assert events_of(c, "big")[0].startswith(
            "0/1 nodes are available: Pod a/big is rejected in PreFilter because "
            "ElasticQuota a is more than Max."
        )


async def test_borrowing_unused_min_up_to_the_aggregate_min() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create(KIND, quota("a", {"cpu": "2"}, {"cpu": "6"}))
    c.create(KIND, quota("b", {"cpu": "2"}, {"cpu": "4"}))
    async with Running(c, profiles(CAPACITY, GATES), gates=GATES):
        for i in range(3):
            c.create("pods", _pod(f"a{i}", "a", cpu="1"))
        await wait_for(lambda: len(bound(c, "a")) == 3)  # borrows 1 of b's min
        c.create("pods", _pod("a3", "a", cpu="1500m"))
        await wait_for(lambda: bool(events_of(c, "a3")))
        # 3 used + 1.5 asked > 2 + 2 of min: over the aggregate min.
        assert events_of(c, "a3")[0].startswith(
            "0/1 nodes are available: Pod a/a3 is rejected in PreFilter because total "
            "ElasticQuota used is more than min."
        )
        assert "a3" not in bound(c)


async def test_reclaiming_borrowed_room_preempts_the_borrower() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="4"))
    c.create(KIND, quota("a", {"cpu": "2"}, {"cpu": "4"}))
    c.create(KIND, quota("b", {"cpu": "2"}, {"cpu": "4"}))
    async with Running(c, profiles(CAPACITY, GATES), gates=GATES):
        for i in range(3):
            c.create("pods", _pod(f"a{i}", "a", cpu="1", priority=100))
        await wait_for(lambda: len(bound(c, "a")) == 3)
        # b is within its min: it takes its room back from a, which borrowed it, even
        # from pods of a higher priority than its own.
        c.create("pods", _pod("b0", "b", cpu="2", priority=1))
        await wait_for(lambda: "b0" in bound(c), timeout=15)
        assert len(bound(c, "a")) == 2
        # Events go out through the recorder's queue, after the deletion: wait for it.
        await wait_for(lambda: c.event_counts.get("Scheduled") == 4)
        assert c.event_counts.get("Preempted") == 1


async def test_over_min_preemptor_evicts_only_its_own_lower_priority_pods() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="4"))
    c.create(KIND, quota("a", {"cpu": "1"}, {"cpu": "4"}))
    c.create(KIND, quota("b", {"cpu": "3"}, {"cpu": "4"}))
    async with Running(c, profiles(CAPACITY, GATES), gates=GATES):
        c.create("pods", _pod("b0", "b", cpu="3", priority=0))
        c.create("pods", _pod("a-low", "a", cpu="1", priority=0))
        await wait_for(lambda: len(bound(c)) == 2)
        # a's request takes it over its min: only a's lower-priority pods are victims.
        c.create("pods", _pod("a-high", "a", cpu="1", priority=10))
        await wait_for(lambda: "a-high" in bound(c), timeout=15)
        assert "b0" in bound(c) and "a-low" not in bound(c)
