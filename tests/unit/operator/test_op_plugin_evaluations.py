"""``scheduler_plugin_evaluation_total`` as upstream's instrumented plugins count it
(``framework/runtime/instrumented_plugins.go``), on the embedded cluster with the
production scheduler (configuration loaded as ``ksched run`` loads it).

A PreFilter or PreScore call that does not return Skip counts one; a Filter or Score call
one per node it is called on: a node's Filters stop at the first that rejects, a plugin
whose PreFilter skipped the pod is not called, Score runs only with two or more feasible
nodes. The expected counts are upstream's for the same attempt (the conformance harness
checks them against kube-scheduler's code on random cases, ``tests/conformance``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from ksched.component_metrics import render
from ksched.config import load_config_bytes
from ksched.metrics import SchedulerMetrics
from ksched.run import new_scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for

Obj = dict[str, Any]


#: What one attempt of a pod with requests on N feasible nodes (N >= 2) of the default
#: profile counts: only NodeResourcesFit's PreFilter does not skip such a pod; PreScore
#: of NodeAffinity (no preferred terms), PodTopologySpread (no soft constraints),
#: InterPodAffinity (no pod with affinity terms) and VolumeBinding (no
#: StorageCapacityScoring) skip; ImageLocality and DynamicResources have no PreScore and
#: score every node.
def _scored(n: int) -> dict[str, float]:
    return {
        "PreFilter/NodeResourcesFit": 1,
        **{f"Filter/{p}": n for p in _FILTERS},
        "PreScore/TaintToleration": 1,
        "PreScore/NodeResourcesFit": 1,
        "PreScore/NodeResourcesBalancedAllocation": 1,
        **{
            f"Score/{p}": n
            for p in (
                "TaintToleration",
                "NodeResourcesFit",
                "NodeResourcesBalancedAllocation",
                "ImageLocality",
                "DynamicResources",
            )
        },
    }


_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit")


CASES = [
    pytest.param(
        [make_node(f"n{i}", cpu="4") for i in range(3)],
        make_pod("p", cpu="1"),
        None,
        _scored(3),
        id="three-feasible-nodes",
    ),
    pytest.param(
        [make_node("n0", cpu="4"), make_node("n1", cpu="4"), make_node("n2", unschedulable=True)],
        make_pod("p", cpu="1"),
        None,
        # n2's Filters stop at NodeUnschedulable.
        {**_scored(2), "Filter/NodeUnschedulable": 3},
        id="a-cordoned-node-stops-at-the-first-filter",
    ),
    pytest.param(
        [make_node("n0", cpu="4"), make_node("n1", cpu="500m")],
        make_pod("p", cpu="1"),
        None,
        # One feasible node: no PreScore, no Score.
        {"PreFilter/NodeResourcesFit": 1, **{f"Filter/{p}": 2 for p in _FILTERS}},
        id="one-feasible-node-is-not-scored",
    ),
    pytest.param(
        [make_node("n0", cpu="4"), make_node("n1", cpu="4")],
        make_pod("p", cpu="1", extra_spec={"nodeSelector": {"a": "b"}}),
        None,
        # NodeAffinity's PreFilter runs for a node selector and rejects both nodes.
        {
            "PreFilter/NodeAffinity": 1,
            "PreFilter/NodeResourcesFit": 1,
            **{f"Filter/{p}": 2 for p in ("NodeUnschedulable", "NodeName", "TaintToleration")},
            "Filter/NodeAffinity": 2,
        },
        id="node-affinity-rejects-before-fit",
    ),
    pytest.param(
        [make_node("n0", cpu="4"), make_node("n1", cpu="4")],
        make_pod("p", cpu="1"),
        {"profiles": [{"plugins": {"score": {"disabled": [{"name": "TaintToleration"}]}}}]},
        # Its PreScore stays enabled (multiPoint) and is called; its Score is not.
        {k: v for k, v in _scored(2).items() if k != "Score/TaintToleration"},
        id="prescore-enabled-without-its-score",
    ),
]


def _config(extra: Obj | None = None) -> Any:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **(extra or {}),
    }
    return load_config_bytes(orjson.dumps(doc), "the test's configuration")


async def _cycle(c: InMemoryCluster, config: Obj | None, pod: Obj) -> dict[str, float]:
    """One cycle of ``pod`` by the production scheduler: what it added to the metric,
    ``"ExtensionPoint/Plugin"`` → count."""
    sched = new_scheduler(_config(config), c, seed=1, identity="test")
    await sched.start()
    try:
        c.create("pods", pod)
        await wait_for(lambda: len(sched.queue) > 0)
        uid = c.get("pods", f"default/{pod['metadata']['name']}")["metadata"]["uid"]
        info = sched.queue.pop_specific(uid)
        assert info is not None
        before = sched.metrics.plugin_evaluation.totals()
        await sched.schedule_popped(info)
        return {
            f"{point}/{plugin}": v - before.get((plugin, point, prof), 0.0)
            for (plugin, point, prof), v in sched.metrics.plugin_evaluation.totals().items()
            if v != before.get((plugin, point, prof), 0.0)
        }
    finally:
        await sched.shutdown()


@pytest.mark.parametrize(("nodes", "pod", "config", "want"), CASES)
async def test_one_attempt_counts_as_upstream(
    nodes: list[Obj], pod: Obj, config: Obj | None, want: dict[str, float]
) -> None:
    c = InMemoryCluster()
    for n in nodes:
        c.create("nodes", n)
    assert await _cycle(c, config, pod) == want


async def test_every_instrumented_plugin_has_a_series_from_the_start() -> None:
    sched = new_scheduler(_config(), InMemoryCluster(), seed=1, identity="test")
    series = sched.metrics.plugin_evaluation.totals()
    assert all(v == 0.0 for v in series.values())
    points: dict[str, set[str]] = {}
    for plugin, point, profile in series:
        assert profile == "default-scheduler"
        points.setdefault(point, set()).add(plugin)
    # v1.36's default plugins at the four instrumented points.
    assert points["Filter"] >= {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    }
    assert "NodeUnschedulable" not in points["PreFilter"]
    assert "ImageLocality" in points["Score"] and "ImageLocality" not in points["PreScore"]
    assert "DynamicResources" in points["Score"] and "DynamicResources" not in points["PreScore"]
    text = render(sched.metrics.registry.collect()).decode()
    assert (
        'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="NodeName",'
        'profile="default-scheduler"} 0\n'
    ) in text


async def test_a_batched_call_counts_each_of_its_pods() -> None:
    """Pods of one signature placed by one batched core call count as the same pods
    placed one by one (the core adds each attempt's counts to the framework's)."""
    c = InMemoryCluster()
    for i in range(3):
        c.create("nodes", make_node(f"n{i}", cpu="4"))
    sched = new_scheduler(_config(), c, seed=1, identity="test")
    await sched.start()
    try:
        for i in range(4):
            c.create("pods", make_pod(f"p{i}", cpu="1"))
        await wait_for(lambda: len(sched.queue) == 4)
        uid = c.get("pods", "default/p0")["metadata"]["uid"]
        info = sched.queue.pop_specific(uid)
        assert info is not None
        evals = sched.metrics.plugin_evaluation
        before = evals.totals()
        await sched.schedule_popped(info)
        assert sched.metrics.batch_attempts.get(("default-scheduler", "hint_used")) == 3
        got = {
            f"{point}/{plugin}": v - before.get((plugin, point, prof), 0.0)
            for (plugin, point, prof), v in evals.totals().items()
            if v != before.get((plugin, point, prof), 0.0)
        }
        assert got == {k: 4 * v for k, v in _scored(3).items()}
    finally:
        await sched.shutdown()


def test_a_reset_drops_the_family_for_good() -> None:
    """Upstream's Reset drops the vector's children; the frameworks keep counting into
    the ones they took at their creation, which are no longer exported."""
    m = SchedulerMetrics()
    kept = m.plugin_evaluation.values
    kept[("NodeName", "Filter", "p")] = 0.0
    m.reset()
    kept[("NodeName", "Filter", "p")] = 5.0
    text = render(m.registry.collect()).decode()
    assert "scheduler_plugin_evaluation_total" not in text


def test_the_core_counts_are_read_at_scrape_time_until_a_reset() -> None:
    """A framework's Rust counts join the family when it is collected; a reset
    detaches them with the rest of the family."""
    m = SchedulerMetrics()
    m.plugin_evaluation.values[("NodeName", "Filter", "p")] = 0.0
    m.plugin_evaluation.add_source("p", _Counts([("NodeName", "Filter", 7)], 0))
    m.plugin_evaluation.add_source("p", _Counts([], 3), ("DynamicResources",))
    text = render(m.registry.collect()).decode()
    assert (
        'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="NodeName",'
        'profile="p"} 7\n'
    ) in text
    assert (
        'scheduler_plugin_evaluation_total{extension_point="Score",plugin="DynamicResources",'
        'profile="p"} 3\n'
    ) in text
    m.reset()
    assert "scheduler_plugin_evaluation_total" not in render(m.registry.collect()).decode()


class _Counts:
    """A stand-in for ``_core.EvaluationCounts`` with fixed totals."""

    def __init__(self, counts: list[tuple[str, str, int]], scored: int) -> None:
        self._counts = counts
        self.scored = scored

    def counts(self) -> list[tuple[str, str, int]]:
        return self._counts


@pytest.mark.parametrize(
    ("feed", "present"),
    [
        pytest.param(lambda m: None, False, id="vector-without-children-is-hidden"),
        pytest.param(
            lambda m: m.resourceclaim_creates.inc(("success",)), True, id="shown-once-it-has-one"
        ),
    ],
)
def test_a_vector_is_printed_once_it_has_a_child(
    feed: Callable[[SchedulerMetrics], None], present: bool
) -> None:
    m = SchedulerMetrics()
    feed(m)
    text = render(m.registry.collect()).decode()
    assert ("scheduler_resourceclaim_creates_total" in text) is present
    # Plain counters and histograms always have their one series, as client_golang's.
    assert "scheduler_preemption_attempts_total 0\n" in text
    assert "scheduler_pod_scheduled_after_flush_total 0\n" in text
    assert "scheduler_preemption_victims_count 0\n" in text
    assert "scheduler_batch_cache_flushed_total" not in text
    assert "scheduler_dra_bindingconditions_wait_duration_seconds" not in text


async def test_preemption_dry_run_counts_its_filters() -> None:
    """DefaultPreemption's SelectVictimsOnNode runs every Filter with all lower-priority
    pods gone, then once more per victim it tries to reprieve."""
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="2"))
    for name in ("low1", "low2"):
        c.create("pods", make_pod(name, cpu="1", node_name="n0"))
    got = await _cycle(c, None, make_pod("high", cpu="1", priority=100))
    # The cycle's Filter on n0 (rejected by NodeResourcesFit), then the dry run's:
    # without both pods (fits), low1 back (fits), low2 back (does not: the victim).
    assert got["Filter/NodeResourcesFit"] == 4
    assert got["Filter/NodeUnschedulable"] == 4
