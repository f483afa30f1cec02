"""Scheduling with extenders, end to end on the embedded cluster: a real extender on
loopback HTTP filters, prioritizes and binds; failures follow upstream's rules; the
event loop keeps running while an extender answers.

Waits poll for an outcome with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ksched import schedule_one
from ksched.config import Duration, Extender, ExtenderManagedResource
from ksched.framework.builtins import default_plugins
from ksched.framework.cycle_state import CycleState
from ksched.framework.extender import EXTENDER_NAME, HTTPExtender
from ksched.framework.profile import default_profile
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import RunningWithExtenders, node_of, parsed_pod, wait_for
from tests.unit.extender.fake_extender import FakeExtender, names_of

PROFILE = "default-scheduler"


def cluster_with(*nodes: str) -> InMemoryCluster:
    c = InMemoryCluster()
    for n in nodes:
        c.create("nodes", make_node(n))
    return c


def condition(c: InMemoryCluster, name: str) -> dict[str, Any] | None:
    pod = c.get("pods", f"default/{name}") or {}
    return next(
        (x for x in pod.get("status", {}).get("conditions", []) if x.get("type") == "PodScheduled"),
        None,
    )


def extender(url: str, **kw: Any) -> HTTPExtender:
    kw.setdefault("http_timeout", Duration.seconds(5))
    return HTTPExtender(Extender(url_prefix=url, **kw))


Running = RunningWithExtenders


def keep_only(*keep: str, failed: str = "rejected by the extender") -> Callable[[Any], Any]:
    def answer(args: Any) -> Any:
        names = names_of(args)
        return {
            "NodeNames": [n for n in names if n in keep],
            "FailedNodes": {n: failed for n in names if n not in keep},
        }

    return answer


# ---- filter -----------------------------------------------------------------------------


@pytest.mark.parametrize("cache_capable", [False, True], ids=["node-objects", "node-names"])
async def test_pods_land_only_on_nodes_the_extender_keeps(cache_capable: bool):
    c = cluster_with("n1", "n2", "n3", "n4")
    async with FakeExtender() as fake:
        if cache_capable:
            fake.handlers["filter"] = keep_only("n3", "n4")
        else:
            fake.handlers["filter"] = lambda a: {
                "Nodes": {"items": [i for i in a["Nodes"]["items"] if i["metadata"]["name"] > "n2"]}
            }
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=cache_capable)
        async with Running(c, ext) as sched:
            for i in range(8):
                c.create("pods", make_pod(f"p{i}"))
            await wait_for(lambda: sched.stats.bound == 8)
            errors, unschedulable = sched.stats.errors, sched.stats.unschedulable
        assert {node_of(c, f"p{i}") for i in range(8)} == {"n3", "n4"}
        assert (errors, unschedulable) == (0, 0)
        assert len(fake.calls("filter")) == 8
        # Every call got the nodes that passed the built-in filters.
        assert sorted(names_of(fake.calls("filter")[0])) == ["n1", "n2", "n3", "n4"]


async def test_rejection_by_every_node_reports_filters_and_extender_reasons_and_retries():
    c = cluster_with("n1", "n2", "n3")
    c.create("nodes", make_node("cordoned", unschedulable=True))
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda a: {
            "NodeNames": [],
            "FailedNodes": {"n1": "no license", "n2": "no license"},
            "FailedAndUnresolvableNodes": {"n3": "retired"},
        }
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=True)
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            # The condition patch runs in the background: it may land before the
            # failed attempt has put the pod back in the queue.
            await wait_for(lambda: condition(c, "p") is not None and bool(sched.queue.infos()))
            cond = condition(c, "p")
            assert cond is not None and cond["reason"] == "Unschedulable"
            assert cond["message"].startswith(
                "0/4 nodes are available: 1 node(s) were unschedulable, 1 retired, 2 no license."
            )
            info = sched.queue.infos()
            assert [i.pod.name for i in info] == ["p"]
            assert EXTENDER_NAME in info[0].unschedulable_plugins
            # Extenders register no events: any event retries the pod.
            fake.handlers["filter"] = keep_only("n9")
            c.create("nodes", make_node("n9"))
            await wait_for(lambda: node_of(c, "p") == "n9")


# ---- prioritize -------------------------------------------------------------------------


PREFER_N1 = {
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                        ]
                    },
                }
            ]
        }
    }
}


async def test_extender_scores_are_weighted_scaled_and_added_to_the_plugin_scores():
    """NodeAffinity gives n1 100 x weight 2 = 200. Extender a gives n2 10 x weight 3 x
    (100/10) = 300, extender b n2 5 x 1 x 10 = 50 and n3 100: n2 wins with 350. Without
    the scaling (35) or the weights (150), n1 would."""
    c = cluster_with("n1", "n2", "n3")
    async with FakeExtender() as a, FakeExtender() as b:
        a.handlers["prioritize"] = lambda args: [
            {"Host": n, "Score": 10 if n == "n2" else 0} for n in names_of(args)
        ]
        b.handlers["prioritize"] = lambda args: [
            {"Host": n, "Score": {"n2": 5, "n3": 10}.get(n, 0)} for n in names_of(args)
        ]
        exts = (
            extender(a.url, prioritize_verb="prioritize", weight=3),
            extender(b.url, prioritize_verb="prioritize", weight=1, node_cache_capable=True),
        )
        async with Running(c, *exts) as sched:
            c.create("pods", make_pod("p", extra_spec=PREFER_N1))
            await wait_for(lambda: sched.stats.bound == 1)
        assert node_of(c, "p") == "n2"
        assert len(a.calls("prioritize")) == len(b.calls("prioritize")) == 1
    # Without extenders the affinity decides.
    c = cluster_with("n1", "n2", "n3")
    async with Running(c) as sched:
        c.create("pods", make_pod("p", extra_spec=PREFER_N1))
        await wait_for(lambda: sched.stats.bound == 1)
    assert node_of(c, "p") == "n1"


async def test_a_single_feasible_node_is_chosen_without_prioritizing():
    c = cluster_with("n1", "n2")
    async with FakeExtender() as fake:
        fake.handlers["filter"] = keep_only("n2")
        fake.handlers["prioritize"] = lambda args: []
        ext = extender(
            fake.url,
            filter_verb="filter",
            prioritize_verb="prioritize",
            weight=1,
            node_cache_capable=True,
        )
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
    assert node_of(c, "p") == "n2"
    assert fake.calls("prioritize") == []


async def test_ties_among_the_best_totals_are_broken_at_random(monkeypatch: pytest.MonkeyPatch):
    seen: list[list[str]] = []

    def choice(seq: list[str]) -> str:
        seen.append(sorted(seq))
        return seq[-1]

    monkeypatch.setattr(schedule_one.random, "choice", choice)
    c = cluster_with("n1", "n2", "n3")
    async with FakeExtender() as fake:
        fake.handlers["prioritize"] = lambda args: [
            {"Host": n, "Score": 0 if n == "n2" else 10} for n in names_of(args)
        ]
        ext = extender(fake.url, prioritize_verb="prioritize", weight=5)
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
    assert seen == [["n1", "n3"]]
    assert node_of(c, "p") in ("n1", "n3")


async def test_a_nominated_node_the_extender_rejects_sends_the_pod_to_every_node():
    c = cluster_with("n1", "n2", "n3")
    async with FakeExtender() as fake:
        fake.handlers["filter"] = keep_only("n2", failed="n1 is draining")
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=True)
        async with Running(c, ext) as sched:
            pod = make_pod("p")
            pod["status"]["nominatedNodeName"] = "n1"
            c.create("pods", pod)
            await wait_for(lambda: sched.stats.bound == 1)
            assert sched.stats.unschedulable == 0  # one attempt
    assert node_of(c, "p") == "n2"
    # First the nominated node alone (upstream evaluateNominatedNode), then every node.
    assert [sorted(a["NodeNames"]) for a in fake.calls("filter")] == [
        ["n1"],
        ["n1", "n2", "n3"],
    ]


async def test_prioritize_errors_are_ignored():
    c = cluster_with("n1", "n2")
    async with FakeExtender() as fake:
        fake.handlers["prioritize"] = lambda args: (500, b"boom")
        ext = extender(fake.url, prioritize_verb="prioritize", weight=1)
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
        assert sched.stats.errors == 0


# ---- interest ---------------------------------------------------------------------------


async def test_only_pods_requesting_a_managed_resource_are_sent_to_the_extender():
    c = InMemoryCluster()
    node = make_node("n1")
    for part in ("capacity", "allocatable"):
        node["status"][part]["example.com/gpu"] = "4"
    c.create("nodes", node)
    async with FakeExtender() as fake:
        fake.handlers["filter"] = keep_only()
        ext = extender(
            fake.url,
            filter_verb="filter",
            managed_resources=[ExtenderManagedResource(name="example.com/gpu")],
        )
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("plain"))
            gpu = make_pod("gpu")
            gpu["spec"]["containers"][0]["resources"]["limits"]["example.com/gpu"] = "1"
            c.create("pods", gpu)
            await wait_for(lambda: node_of(c, "plain") == "n1" and condition(c, "gpu") is not None)
            assert sched.stats.unschedulable >= 1
    # (The gpu pod is retried when "plain" binds: extenders register every event.)
    assert {a["Pod"]["metadata"]["name"] for a in fake.calls("filter")} == {"gpu"}


# ---- failures ---------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["unreachable", "timeout", "error-answer"])
async def test_a_failing_ignorable_extender_is_skipped(failure: str):
    c = cluster_with("n1")
    async with FakeExtender() as fake:

        async def slow(args: Any) -> Any:
            await asyncio.sleep(2)
            return keep_only()(args)

        fake.handlers["filter"] = {
            "timeout": slow,
            "error-answer": lambda a: {"Error": "license server down"},
            "unreachable": keep_only(),
        }[failure]
        url = fake.url if failure != "unreachable" else "http://127.0.0.1:1/ext"
        ext = extender(
            url, filter_verb="filter", ignorable=True, http_timeout=Duration(200_000_000)
        )
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
    assert node_of(c, "p") == "n1"


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("unreachable", 'Post "http://127.0.0.1:1/ext/filter": connect: connection refused'),
        ("timeout", "Client.Timeout exceeded while awaiting headers"),
        ("error-answer", "license server down"),
    ],
)
async def test_a_failing_extender_fails_the_attempt_with_an_error(failure: str, message: str):
    c = cluster_with("n1")
    async with FakeExtender() as fake:

        async def slow(args: Any) -> Any:
            await asyncio.sleep(2)
            return keep_only("n1")(args)

        fake.handlers["filter"] = {
            "timeout": slow,
            "error-answer": lambda a: {"Error": "license server down"},
            "unreachable": keep_only("n1"),
        }[failure]
        url = fake.url if failure != "unreachable" else "http://127.0.0.1:1/ext"
        ext = extender(url, filter_verb="filter", http_timeout=Duration(200_000_000))
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: condition(c, "p") is not None)
            cond = condition(c, "p")
            assert cond is not None and cond["reason"] == "SchedulerError"
            assert message in cond["message"]
            assert sched.stats.errors >= 1 and sched.stats.bound == 0


# ---- bind -------------------------------------------------------------------------------


async def test_an_interested_binder_extender_binds_instead_of_the_default_binder():
    c = cluster_with("n1")
    async with FakeExtender() as fake:

        def bind(args: Any) -> Any:
            pod = c.get("pods", f"{args['PodNamespace']}/{args['PodName']}")
            assert pod is not None and pod["metadata"]["uid"] == args["PodUID"]
            c.update("pods", {**pod, "spec": {**pod["spec"], "nodeName": args["Node"]}})
            return {"Error": ""}

        fake.handlers["bind"] = bind
        async with Running(c, extender(fake.url, bind_verb="bind")) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
    assert node_of(c, "p") == "n1"
    assert c.bind_calls == 0  # DefaultBinder never ran
    assert fake.calls("bind") == [
        {
            "PodName": "p",
            "PodNamespace": "default",
            "PodUID": c.get("pods", "default/p")["metadata"]["uid"],  # type: ignore[index]
            "Node": "n1",
        }
    ]


async def test_a_failing_binder_extender_fails_the_binding_unless_ignorable():
    c = cluster_with("n1")
    async with FakeExtender() as fake:
        fake.handlers["bind"] = lambda a: {"Error": "fenced"}
        async with Running(c, extender(fake.url, bind_verb="bind")) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bind_errors >= 1)
            await wait_for(lambda: condition(c, "p") is not None)  # patched in the background
            assert node_of(c, "p") is None
            cond = condition(c, "p")
            assert cond is not None and cond["message"] == "fenced"
    c = cluster_with("n1")
    async with FakeExtender() as fake:
        fake.handlers["bind"] = lambda a: {"Error": "fenced"}
        ignorable = extender(fake.url, bind_verb="bind", ignorable=True)
        async with Running(c, ignorable) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: sched.stats.bound == 1)
    assert c.bind_calls == 1  # DefaultBinder took over


# ---- the event loop and a moving world ------------------------------------------------


async def test_the_loop_runs_while_an_extender_answers_and_a_node_deleted_meanwhile_is_not_used():
    c = cluster_with("n1")
    release = asyncio.Event()
    async with FakeExtender() as fake:

        async def stalled(args: Any) -> Any:
            await release.wait()
            return keep_only("n1")(args)

        fake.handlers["filter"] = stalled
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=True)
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: len(fake.calls("filter")) == 1)
            # The informers keep going while the cycle waits for the extender.
            c.delete("nodes", "n1")
            c.create("nodes", make_node("n2"))
            await wait_for(lambda: "n2" in sched.cache.nodes and "n1" not in sched.cache.nodes)
            release.set()
            await wait_for(lambda: condition(c, "p") is not None)
            cond = condition(c, "p")
            assert cond is not None and cond["reason"] == "SchedulerError"
            assert 'node "n1" changed while the extenders were called' in cond["message"]
            assert sched.cache.num_assumed() == 0
            # Retried after backoff: the extender now sees (and keeps) n2.
            fake.handlers["filter"] = keep_only("n2")
            await wait_for(lambda: node_of(c, "p") == "n2")


async def test_a_pod_deleted_while_the_extender_answers_is_dropped():
    c = cluster_with("n1")
    release = asyncio.Event()
    async with FakeExtender() as fake:

        async def stalled(args: Any) -> Any:
            await release.wait()
            return keep_only("n1")(args)

        fake.handlers["filter"] = stalled
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=True)
        async with Running(c, ext) as sched:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: len(fake.calls("filter")) == 1)
            c.delete("pods", "default/p")
            await asyncio.sleep(0.05)
            release.set()
            c.create("pods", make_pod("q"))
            fake.handlers["filter"] = keep_only("n1")
            await wait_for(lambda: node_of(c, "q") == "n1")
            await wait_for(lambda: sched.cache.num_assumed() == 0)
            assert sched.stats.errors == 0
    assert c.bind_calls == 1  # q only


# ---- the handle -------------------------------------------------------------------------


async def test_the_handle_lists_the_extenders_and_the_queue_knows_their_name():
    c = cluster_with("n1")
    ext = extender("http://127.0.0.1:1", preempt_verb="preempt")
    sched = Scheduler(c, {PROFILE: default_profile()}, extenders=[ext])
    assert list(sched.handle.extenders) == [ext]
    assert ext.supports_preemption() and ext.name() == "http://127.0.0.1:1"
    regs = sched.frameworks[PROFILE].enqueue_registrations()
    assert any(name == EXTENDER_NAME for name, _ in regs)
    plain = Scheduler(c, {PROFILE: default_profile()})
    assert list(plain.handle.extenders) == []
    assert all(
        name != EXTENDER_NAME for name, _ in plain.frameworks[PROFILE].enqueue_registrations()
    )


# ---- ksched simulate --config -------------------------------------------------------


async def test_simulate_with_a_config_calls_its_extenders(tmp_path: Any):
    from ksched import simulate

    kept: set[str] = set()

    def answer(args: Any) -> Any:
        names = sorted(args["NodeNames"])
        keep = names[: max(1, len(names) // 2)]
        kept.update(keep)
        return {"NodeNames": keep}

    async with FakeExtender() as fake:
        fake.handlers["filter"] = answer
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "extenders:\n"
            f"- urlPrefix: {fake.url}\n"
            "  filterVerb: filter\n"
            "  nodeCacheCapable: true\n"
        )
        profiles, extenders = simulate.load_setup(str(cfg))
        assert [e.url_prefix for e in extenders] == [fake.url]
        report = await simulate.run_simulation(
            nodes=6, pods=12, seed=3, profiles=profiles, extenders=extenders, timeout=60
        )
    assert report.scheduled == 12
    assert len(fake.calls("filter")) >= 12
    assert report.placement.nodes_used <= len(kept) == 3


# ---- PostFilter in the asynchronous cycle ---------------------------------------------


class AwaitingPostFilter:
    """A PostFilter that awaits, as DefaultPreemption awaiting ``process_preemption``."""

    name = "AwaitingPostFilter"

    def __init__(self) -> None:
        self.awaited = 0

    def post_filter(self, state: Any, pod: Any, statuses: Any) -> Any:
        async def run() -> Any:
            await asyncio.sleep(0)
            self.awaited += 1
            seen = sorted((n, statuses.status_of(n).message) for n in ("n1", "n2"))
            return None, Status(Code.UNSCHEDULABLE, f"asked the extender about {seen}")

        return run()


async def test_post_filter_may_await_in_the_extender_cycle_and_never_in_the_sync_one():
    post = AwaitingPostFilter()
    profile = default_profile()
    profile.plugins = (*default_plugins(), post)
    c = cluster_with("n1", "n2")
    async with FakeExtender() as fake:
        fake.handlers["filter"] = keep_only(failed="no room on the extender's side")
        ext = extender(fake.url, filter_verb="filter", node_cache_capable=True)
        sched = Scheduler(c, {PROFILE: profile}, seed=1, extenders=[ext])
        await sched.start()
        task = asyncio.get_running_loop().create_task(sched.run())
        try:
            c.create("pods", make_pod("p"))
            await wait_for(lambda: condition(c, "p") is not None)
            cond = condition(c, "p")
            assert cond is not None
            assert cond["message"].startswith("0/2 nodes are available: 2 no room")
            assert (
                "asked the extender about [('n1', \"no room on the extender's side\")"
                in (cond["message"])
            )
            # At least once: the pod is retried after its PodScheduled=False write (an
            # extender's rejection is retried on any event; upstream, where it names no
            # plugin, retries it on its backoff), which may already have happened.
            assert post.awaited >= 1
        finally:
            await sched.shutdown()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    # Without extenders the cycle is synchronous: an awaitable PostFilter is an error
    # (the coroutine is closed, not left unawaited).
    fw = Framework(default_profile(), plugins=[post])
    _, s = fw.run_post_filter(CycleState(), parsed_pod("p"), {})
    assert s.code is Code.ERROR and "awaitable in a synchronous cycle" in s.message
