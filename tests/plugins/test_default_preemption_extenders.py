"""DefaultPreemption with scheduler extenders (upstream ``callExtenders``), end to end on
the embedded cluster: a real extender on loopback HTTP answers the preempt verb, the
pod's asynchronous cycle awaits it, and only the candidates it accepts can be chosen.

Waits poll for an outcome with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ksched.config import Duration, Extender
from ksched.framework.extender import HTTPExtender
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import RunningWithExtenders, node_of, wait_for
from tests.unit.extender.fake_extender import FakeExtender

PROFILE = "default-scheduler"


def full_cluster(*nodes: str) -> InMemoryCluster:
    """Nodes of one cpu, each full with a low-priority pod ``low-<node>``."""
    c = InMemoryCluster()
    for n in nodes:
        c.create("nodes", make_node(n, cpu="1", memory="4Gi"))
        low = make_pod(f"low-{n}", cpu="1", node_name=n, priority=0)
        low["status"]["startTime"] = "2026-01-01T00:00:00Z"
        c.create("pods", low)
    return c


def extender(url: str, **kw: Any) -> HTTPExtender:
    return HTTPExtender(
        Extender(url_prefix=url, preempt_verb="preempt", http_timeout=Duration.seconds(5), **kw)
    )


def keep_nodes(*keep: str) -> Callable[[Any], Any]:
    """A preempt answer accepting the candidates on ``keep`` with their victims."""

    def answer(args: Any) -> Any:
        victims = args.get("NodeNameToMetaVictims") or {}
        if not victims:
            victims = {
                node: {
                    "Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                    "NumPDBViolations": v["NumPDBViolations"],
                }
                for node, v in (args.get("NodeNameToVictims") or {}).items()
            }
        return {"NodeNameToMetaVictims": {n: v for n, v in victims.items() if n in keep}}

    return answer


@pytest.mark.parametrize("cache_capable", [False, True], ids=["victims", "meta-victims"])
async def test_only_a_candidate_the_extender_accepts_is_chosen(cache_capable: bool) -> None:
    c = full_cluster("n1", "n2", "n3")
    async with FakeExtender() as fake:
        fake.handlers["preempt"] = keep_nodes("n3")
        async with RunningWithExtenders(c, extender(fake.url, node_cache_capable=cache_capable)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n3")
        (args,) = fake.calls("preempt")
    assert args["Pod"]["metadata"]["name"] == "high"
    sent = args["NodeNameToMetaVictims" if cache_capable else "NodeNameToVictims"]
    assert sorted(sent) == ["n1", "n2", "n3"], "every candidate goes to the extender"
    assert c.get("pods", "default/low-n3") is None
    assert c.get("pods", "default/low-n1") is not None
    assert c.get("pods", "default/low-n2") is not None


async def test_extenders_answer_in_turn_each_seeing_the_previous_answer() -> None:
    c = full_cluster("n1", "n2", "n3")
    async with FakeExtender(prefix="/a") as first, FakeExtender(prefix="/b") as second:
        first.handlers["preempt"] = keep_nodes("n2", "n3")
        second.handlers["preempt"] = keep_nodes("n2")
        async with RunningWithExtenders(c, extender(first.url), extender(second.url)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n2")
        (args,) = second.calls("preempt")
    assert sorted(args["NodeNameToVictims"]) == ["n2", "n3"]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        pytest.param((500, b"boom"), "500", id="http-error"),
        pytest.param(
            {"NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": 0}}},
            'expected at least one victim pod on node "n1"',
            id="a-node-without-victims",
        ),
    ],
)
async def test_a_failing_extender_stops_the_preemption(answer: Any, error: str) -> None:
    c = full_cluster("n1", "n2")
    async with FakeExtender() as fake:
        fake.handlers["preempt"] = lambda args: answer
        async with RunningWithExtenders(c, extender(fake.url)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(
                lambda: any(
                    error in e["note"] for e in c.events if e["reason"] == "FailedScheduling"
                )
            )
    assert c.get("pods", "default/low-n1") is not None
    assert c.get("pods", "default/low-n2") is not None
    assert node_of(c, "high") is None


async def test_an_ignorable_extender_that_fails_is_skipped() -> None:
    c = full_cluster("n1")
    async with FakeExtender() as fake:
        fake.handlers["preempt"] = lambda args: (500, b"boom")
        async with RunningWithExtenders(c, extender(fake.url, ignorable=True)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n1")
        assert len(fake.calls("preempt")) >= 1
    assert c.get("pods", "default/low-n1") is None


async def test_an_ignorable_extender_drops_the_nodes_it_answers_without_victims() -> None:
    c = full_cluster("n1", "n2")

    def answer(args: Any) -> Any:
        meta = keep_nodes("n1", "n2")(args)["NodeNameToMetaVictims"]
        meta["n1"]["Pods"] = []
        return {"NodeNameToMetaVictims": meta}

    async with FakeExtender() as fake:
        fake.handlers["preempt"] = answer
        async with RunningWithExtenders(c, extender(fake.url, ignorable=True)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n2")
    assert c.get("pods", "default/low-n1") is not None


async def test_an_extender_without_the_preempt_verb_is_not_asked() -> None:
    c = full_cluster("n1")
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda args: {"NodeNames": args.get("NodeNames")}
        ext = HTTPExtender(
            Extender(
                url_prefix=fake.url,
                filter_verb="filter",
                node_cache_capable=True,
                http_timeout=Duration.seconds(5),
            )
        )
        async with RunningWithExtenders(c, ext):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n1")
        assert fake.calls("preempt") == []


async def test_a_victim_deleted_while_the_extender_answers_does_not_fail_the_preemption() -> None:
    c = full_cluster("n1", "n2")
    answer = keep_nodes("n1")

    async def slow(args: Any) -> Any:
        c.delete("pods", "default/low-n1")  # gone before the answer arrives
        await asyncio.sleep(0.05)
        return answer(args)

    async with FakeExtender() as fake:
        fake.handlers["preempt"] = slow
        async with RunningWithExtenders(c, extender(fake.url)):
            c.create("pods", make_pod("high", cpu="1", priority=100))
            await wait_for(lambda: node_of(c, "high") == "n1")
    assert c.get("pods", "default/low-n2") is not None
    errors = [e["note"] for e in c.events if e["reason"] == "FailedScheduling"]
    assert not any("snapshot" in note for note in errors), errors
