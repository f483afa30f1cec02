"""``ksched explain``'s engine against the scheduler itself.

* On random clusters (nodes with zones, taints, cordons, existing pods with labels;
  pods with requests, selectors, tolerations, spreading and anti-affinity), explain's
  verdicts, scores and chosen node equal what the scheduler's attempt
  (``Snapshot.schedule`` with the same state) decides, its FailedScheduling text equals
  the event the running scheduler writes for the pod, and explaining changes nothing
  the next attempts decide.
* Table cases: sampling and ``all_nodes``, a nominated node, a PreFilter rejection, a
  Python Filter/Score plugin reported under its own name, the suggestions (request
  bound, toleration, host port, preemption victims) and the "why not X" paragraph.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.explain import Explanation, explain_pod, render
from ksched.framework.interface import CycleState, NodeInfo, Status
from ksched.framework.profile import Profile, default_profile
from ksched.framework.status import Code
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for

PROFILE = "default-scheduler"
ZONE = "topology.kubernetes.io/zone"


# ---- random clusters -------------------------------------------------------------------


def random_cluster(rng: random.Random, n_nodes: int) -> InMemoryCluster:
    c = InMemoryCluster()
    for i in range(n_nodes):
        taints = []
        if rng.random() < 0.15:
            taints.append(
                {"key": "dedicated", "value": rng.choice(["gpu", "db"]), "effect": "NoSchedule"}
            )
        if rng.random() < 0.1:
            taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
        c.create(
            "nodes",
            make_node(
                f"node-{i}",
                cpu=rng.choice(["1", "2", "4"]),
                memory=rng.choice(["2Gi", "8Gi"]),
                labels={ZONE: f"zone-{i % 3}", "disk": rng.choice(["ssd", "hdd"])},
                taints=taints or None,
                unschedulable=rng.random() < 0.05,
            ),
        )
    for j in range(rng.randrange(0, n_nodes * 3)):
        c.create(
            "pods",
            make_pod(
                f"existing-{j}",
                namespace="load",
                cpu=f"{rng.choice([100, 300, 700])}m",
                memory=rng.choice(["100Mi", "1Gi"]),
                labels={"app": rng.choice(["web", "db", "batch"])},
                node_name=f"node-{rng.randrange(n_nodes)}",
            ),
        )
    return c


def random_pod(rng: random.Random, name: str) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        extra["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ]
    if rng.random() < 0.25:
        extra["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.25:
        extra["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    if rng.random() < 0.2:
        extra["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    return make_pod(
        name,
        namespace="load",
        cpu=f"{rng.choice([100, 500, 1500, 3000])}m",
        memory=rng.choice(["100Mi", "4Gi"]),
        labels={"app": "web"},
        extra_spec=extra,
    )


class Started:
    """A scheduler whose informers have synced (its loop not running)."""

    def __init__(
        self, cluster: InMemoryCluster, profiles: dict[str, Profile] | None = None
    ) -> None:
        self.sched = Scheduler(cluster, profiles or {PROFILE: default_profile()}, seed=7)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()


def pod_of(sched: Scheduler, key: str) -> Pod:
    return Pod.from_dict(sched.pod_informer.store[key])


def check_against_attempt(sched: Scheduler, pod: Pod, expl: Explanation) -> None:
    """The explanation equals what the scheduler's own attempt decides, now."""
    kernels = sched.frameworks[PROFILE].profile.kernels
    result = sched.cache.snapshot.schedule(sched.compile(pod), kernels, explain=True)
    assert expl.chosen == result.node, (expl.chosen, result.node)
    assert expl.evaluated_nodes == result.evaluated_nodes
    if result.node is None:
        want = {n: (u, p, list(r)) for n, u, p, r in result.statuses}
        got = {
            v.node: (v.code == "UnschedulableAndUnresolvable", v.plugin, list(v.reasons))
            for v in expl.nodes
        }
        assert got == want
    elif result.scores:
        assert {v.node: v.total for v in expl.nodes if v.outcome == "feasible"} == dict(
            result.scores
        )
        for v in expl.nodes:
            if v.outcome == "feasible":
                assert v.total == sum(s.weighted for s in v.scores)


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"random-cluster-{s}")
async def test_explain_equals_the_attempt_and_the_event(seed: int) -> None:
    rng = random.Random(seed)
    cluster = random_cluster(rng, rng.choice([4, 12, 30, 150]))
    cluster.create("pods", random_pod(rng, "probe"))
    async with Started(cluster) as sched:
        pod = pod_of(sched, "load/probe")
        expl = await explain_pod(sched, pod)
        again = await explain_pod(sched, pod)
        assert again.as_dict() == expl.as_dict(), "explaining twice gives the same answer"
        check_against_attempt(sched, pod, expl)  # consumes the attempt's randomness
        if expl.failed_scheduling is None:
            return
        # The running scheduler writes exactly that message.
        task = asyncio.get_running_loop().create_task(sched.run())
        try:
            await wait_for(lambda: any(e["reason"] == "FailedScheduling" for e in cluster.events))
        finally:
            sched.stop()
            task.cancel()
        notes = {e["note"] for e in cluster.events if e["reason"] == "FailedScheduling"}
        assert notes == {expl.failed_scheduling}


async def test_explaining_does_not_change_later_decisions() -> None:
    placements = []
    for explain_first in (False, True):
        rng = random.Random(3)
        cluster = random_cluster(rng, 40)
        probes = [random_pod(rng, f"p{i}") for i in range(12)]
        async with Started(cluster) as sched:
            kernels = sched.frameworks[PROFILE].profile.kernels
            got = []
            for obj in probes:
                obj["metadata"]["uid"] = obj["metadata"]["name"]
                pod = Pod.from_dict(obj)
                if explain_first:
                    await explain_pod(sched, pod)
                got.append(sched.cache.snapshot.schedule(sched.compile(pod), kernels).node)
            placements.append(got)
    assert placements[0] == placements[1]


# ---- table cases -------------------------------------------------------------------------


def nodes(n: int, **kw: Any) -> list[dict[str, Any]]:
    return [make_node(f"node-{i}", **kw) for i in range(n)]


@pytest.fixture
async def gpu_cluster() -> AsyncIterator[tuple[InMemoryCluster, Scheduler]]:
    c = InMemoryCluster()
    for obj in nodes(3, cpu="2"):
        c.create("nodes", obj)
    c.create(
        "nodes",
        make_node(
            "gpu-0", cpu="8", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        ),
    )
    c.create("nodes", make_node("cordoned", cpu="8", unschedulable=True))
    c.create("pods", make_pod("busy", namespace="x", cpu="1500m", node_name="node-0"))
    async with Started(c) as sched:
        yield c, sched


def new_pod(name: str = "p", **kw: Any) -> Pod:
    obj = make_pod(name, namespace="x", **kw)
    obj["metadata"]["uid"] = f"uid-{name}"
    return Pod.from_dict(obj)


async def test_a_fitting_pod_shows_scores_and_the_chosen_node(gpu_cluster: Any) -> None:
    _, sched = gpu_cluster
    expl = await explain_pod(sched, new_pod(cpu="400m"))
    assert expl.chosen in ("node-1", "node-2")
    assert expl.nodes[0].node == expl.chosen and expl.nodes[0].chosen
    assert {v.node: v.plugin for v in expl.nodes if v.outcome == "rejected"} == {
        "gpu-0": "TaintToleration",
        "cordoned": "NodeUnschedulable",
    }
    fit = next(s for s in expl.nodes[0].scores if s.plugin == "NodeResourcesFit")
    assert (fit.raw, fit.normalized, fit.weight) == (fit.normalized, fit.normalized, 1)
    assert expl.failed_scheduling is None and expl.suggestions == []
    why = render.node_paragraph(expl, "node-0")
    assert why.startswith("node-0 is feasible but scores") and "NodeResourcesFit" in why


async def test_unschedulable_pod_gets_verified_suggestions(gpu_cluster: Any) -> None:
    _, sched = gpu_cluster
    expl = await explain_pod(sched, new_pod(cpu="6"))
    assert expl.chosen is None and expl.failed_scheduling is not None
    assert expl.failed_scheduling.startswith("0/5 nodes are available:")
    # Only the tainted 8-cpu node and the cordoned one can hold 6 cpu: one toleration each.
    tol = {tuple(s.nodes): s.text for s in expl.suggestions if s.kind == "toleration"}
    assert tol == {
        ("gpu-0",): "fits on gpu-0 if it tolerated `dedicated=gpu:NoSchedule`",
        (
            "cordoned",
        ): "fits on cordoned if it tolerated `node.kubernetes.io/unschedulable:NoSchedule`",
    }
    (res,) = [s for s in expl.suggestions if s.kind == "resource"]
    assert res.details == {"resource": "cpu", "request": 6000, "bound": 2000}
    assert res.nodes == ["node-1", "node-2"]


async def test_why_not_a_rejected_node_says_what_would_make_it_fit(gpu_cluster: Any) -> None:
    _, sched = gpu_cluster
    expl = await explain_pod(sched, new_pod(cpu="1"), suggest_nodes=("gpu-0",))
    conditions = [s.condition for s in expl.node_suggestions["gpu-0"]]
    text = render.node_paragraph(expl, "gpu-0", fits_if=conditions)
    assert text.startswith("gpu-0 was rejected by TaintToleration:")
    assert "would fit there if it tolerated `dedicated=gpu:NoSchedule`" in text


async def test_host_port_suggestion() -> None:
    c = InMemoryCluster()
    for obj in nodes(2):
        c.create("nodes", obj)
    ports = {
        "containers": [
            {"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}
        ]
    }
    for i in range(2):
        c.create("pods", make_pod(f"h{i}", namespace="x", node_name=f"node-{i}", extra_spec=ports))
    async with Started(c) as sched:
        expl = await explain_pod(sched, new_pod(extra_spec=ports))
    (s,) = [s for s in expl.suggestions if s.kind == "host-port"]
    assert s.nodes == ["node-0", "node-1"] and "8080/TCP" in s.text


async def test_preemption_victims_match_the_scheduler() -> None:
    c = InMemoryCluster()
    for obj in nodes(3, cpu="1"):
        c.create("nodes", obj)
    for i in range(3):
        low = make_pod(f"low-{i}", namespace="x", cpu="900m", node_name=f"node-{i}")
        low["status"]["startTime"] = f"2026-01-01T00:00:0{i}Z"
        c.create("pods", low)
    c.create("pods", make_pod("high", namespace="x", cpu="800m", priority=100))
    async with Started(c) as sched:
        expl = await explain_pod(sched, pod_of(sched, "x/high"))
        (s,) = [s for s in expl.suggestions if s.kind == "preemption"]
        assert expl.nominated_node == s.nodes[0]
        victim = s.details["victims"]
        assert len(victim) == 1 and victim[0].startswith("x/low-")
        assert c.get("pods", victim[0]) is not None, "a dry run evicts nobody"
        assert all(c.get("pods", f"x/low-{i}") for i in range(3))
        task = asyncio.get_running_loop().create_task(sched.run())
        try:
            await wait_for(lambda: c.get("pods", victim[0]) is None)
            await wait_for(lambda: c.get("pods", "x/high")["spec"].get("nodeName") is not None)
        finally:
            sched.stop()
            task.cancel()
        assert c.get("pods", "x/high")["spec"]["nodeName"] == expl.nominated_node


async def test_sampling_and_all_nodes() -> None:
    c = InMemoryCluster()
    for obj in nodes(500):
        c.create("nodes", obj)
    async with Started(c) as sched:
        pod = new_pod()
        sampled = await explain_pod(sched, pod)
        full = await explain_pod(sched, pod, all_nodes=True)
    # 500 nodes: adaptive 46% → 230 feasible nodes looked for.
    assert sampled.sampled and sampled.num_to_find == 230 == sampled.evaluated_nodes
    assert sum(v.outcome == "not-examined" for v in sampled.nodes) == 270
    assert "stops after 230 feasible nodes" in render.sampling_text(sampled)
    assert not full.sampled and full.evaluated_nodes == 500 == full.feasible_nodes
    assert "every one of the 500 nodes" in render.sampling_text(full)
    hidden = next(v.node for v in sampled.nodes if v.outcome == "not-examined")
    assert "was not examined" in render.node_paragraph(sampled, hidden)


async def test_nominated_node_is_tried_alone() -> None:
    c = InMemoryCluster()
    for obj in nodes(4):
        c.create("nodes", obj)
    obj = make_pod("p", namespace="x")
    obj["status"]["nominatedNodeName"] = "node-2"
    c.create("pods", obj)
    async with Started(c) as sched:
        expl = await explain_pod(sched, pod_of(sched, "x/p"))
    assert (expl.chosen, expl.chosen_by, expl.evaluated_nodes) == ("node-2", "nominated-node", 1)
    assert any("nominated to node-2" in n for n in expl.notes)


async def test_pre_filter_rejection_gives_every_node_its_status() -> None:
    c = InMemoryCluster()
    for obj in nodes(3):
        c.create("nodes", obj)
    conflict = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["node-0"]}
                            ]
                        },
                    ]
                }
            }
        },
        "nodeName": "",
    }
    async with Started(c) as sched:
        expl = await explain_pod(sched, new_pod(extra_spec=conflict))
    assert expl.chosen == "node-0"
    assert {v.node: v.reason for v in expl.nodes if v.outcome == "rejected"} == {
        "node-1": "node(s) didn't satisfy plugin(s) [NodeAffinity]",
        "node-2": "node(s) didn't satisfy plugin(s) [NodeAffinity]",
    }


class EvenNodes:
    """A Python Filter/Score plugin: odd-numbered nodes rejected, higher numbers scored
    higher (an out-of-tree plugin as the explanation must report it: by its name)."""

    name = "EvenNodes"
    weight = 5

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if int(node.name.rsplit("-", 1)[1]) % 2:
            return Status(Code.UNSCHEDULABLE, "node(s) were odd")
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return int(node.name.rsplit("-", 1)[1])


def with_plugins(*extra: Any) -> dict[str, Profile]:
    from ksched.framework.builtins import default_plugins

    base = default_profile()
    profile = Profile(
        base.scheduler_name, base.filters, base.scores, {}, 0, plugins=(*default_plugins(), *extra)
    )
    return {PROFILE: profile}


async def test_python_plugins_are_reported_by_name() -> None:
    c = InMemoryCluster()
    for obj in nodes(6):
        c.create("nodes", obj)
    async with Started(c, with_plugins(EvenNodes())) as sched:
        expl = await explain_pod(sched, new_pod())
    assert expl.chosen == "node-4"
    assert {v.node for v in expl.nodes if v.plugin == "EvenNodes"} == {"node-1", "node-3", "node-5"}
    (even,) = [s for s in expl.node("node-4").scores if s.plugin == "EvenNodes"]
    assert (even.raw, even.normalized, even.weight, even.weighted) == (4, 4, 5, 20)
    assert expl.node("node-4").total == sum(s.weighted for s in expl.node("node-4").scores)


async def test_unknown_profile_is_a_clear_error() -> None:
    from ksched.explain import ExplainError

    c = InMemoryCluster()
    c.create("nodes", make_node("n"))
    async with Started(c) as sched:
        with pytest.raises(ExplainError, match="no profile handles schedulerName 'other'"):
            await explain_pod(sched, new_pod(scheduler_name="other"))
        expl = await explain_pod(sched, new_pod(scheduler_name="other"), profile=PROFILE)
    assert expl.chosen == "n"


def _names(vs: Sequence[Any]) -> list[str]:
    return [v.node for v in vs]
