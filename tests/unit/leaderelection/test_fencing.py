"""The write fence: the gate's rule, the fenced API, and a paused leader in-process.

The gate is driven with a fake clock; the scheduler-level cases run the whole
scheduler on the embedded cluster behind :class:`FencedClusterAPI`; the ``serve``
cases run ``ksched run``'s composition with a real elector on the embedded cluster and
freeze the event loop (``time.sleep``), as SIGSTOP freezes the process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from ksched.cluster import Fenced
from ksched.config import load_config_bytes
from ksched.framework.profile import default_profile
from ksched.leaderelection import LeaderElector, LeaseLock
from ksched.leaderelection.fencing import (
    FencedClusterAPI,
    FencingGate,
    FencingMetrics,
    describe_request,
)
from ksched.run import LeaderElectionLost, serve
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def gate_at(renewed: float | None, clock: Clock, limit: float = 3.0, **kw: Any) -> FencingGate:
    return FencingGate(renewed_at=lambda: renewed, limit=limit, lease="ns/l", clock=clock, **kw)


# ---- the rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("renewed_ago", "limit", "open_"),
    [
        pytest.param(0.0, 3.0, True, id="just-renewed"),
        pytest.param(2.999, 3.0, True, id="just-under-the-limit"),
        pytest.param(3.0, 3.0, False, id="at-the-limit"),
        pytest.param(10.0, 3.0, False, id="paused-past-the-lease"),
        pytest.param(None, 3.0, False, id="never-renewed"),
    ],
)
def test_the_gate_is_open_only_while_the_last_renewal_is_younger_than_the_limit(
    renewed_ago: float | None, limit: float, open_: bool
) -> None:
    clock = Clock()
    renewed = None if renewed_ago is None else clock.t - renewed_ago
    gate = gate_at(renewed, clock, limit)
    assert gate.is_open() is open_
    if open_:
        gate.admit("create", "pods/binding", "d/p")
    else:
        with pytest.raises(Fenced):
            gate.admit("create", "pods/binding", "d/p")


def test_the_first_refusal_trips_the_gate_for_good_and_calls_on_lapse_once() -> None:
    clock = Clock()
    renewed = [clock.t]
    lapses: list[str] = []
    gate = FencingGate(
        renewed_at=lambda: renewed[0], limit=3.0, lease="ns/l", clock=clock, on_lapse=lapses.append
    )
    clock.t += 5
    with pytest.raises(Fenced, match="create pods/binding d/p: not sent, lease ns/l lapsed"):
        gate.admit("create", "pods/binding", "d/p")
    with pytest.raises(Fenced):
        gate.admit_request("DELETE", "/api/v1/namespaces/d/pods/v")
    assert lapses == ["lease ns/l lapsed: its last renewal was sent 5.0s ago (limit 3s)"]
    renewed[0] = clock.t  # a late renewal does not reopen it
    assert not gate.is_open()
    with pytest.raises(Fenced):
        gate.admit("patch", "pods/status", "d/p")
    assert gate.refused == {
        ("create", "pods/binding"): 1,
        ("delete", "pods"): 1,
        ("patch", "pods/status"): 1,
    }


def test_a_replica_that_never_held_the_lease_is_refused_without_lapsing() -> None:
    lapses: list[str] = []
    gate = gate_at(None, Clock(), on_lapse=lapses.append)
    with pytest.raises(Fenced, match="not held by this replica"):
        gate.admit("create", "events", "d/e")
    assert lapses == [] and gate.lapsed is None


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        gate_at(0.0, Clock(), limit=0)


@pytest.mark.parametrize(
    ("method", "path", "want"),
    [
        ("POST", "/api/v1/namespaces/d/pods/p/binding", ("create", "pods/binding", "d/p")),
        ("PATCH", "/api/v1/namespaces/d/pods/p/status", ("patch", "pods/status", "d/p")),
        ("DELETE", "/api/v1/namespaces/d/pods/p", ("delete", "pods", "d/p")),
        ("POST", "/apis/events.k8s.io/v1/namespaces/d/events", ("create", "events", "d")),
        ("PUT", "/api/v1/persistentvolumes/pv-1", ("update", "persistentvolumes", "pv-1")),
        (
            "PUT",
            "/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c/status",
            ("update", "resourceclaims/status", "d/c"),
        ),
        ("PATCH", "/api/v1/nodes/n1", ("patch", "nodes", "n1")),
    ],
    ids=["binding", "pod-status", "pod-deletion", "event", "pv", "claim-status", "node"],
)
def test_requests_are_named_as_the_audit_log_names_them(
    method: str, path: str, want: tuple[str, str, str]
) -> None:
    assert describe_request(method, path) == want


# ---- the fenced API ---------------------------------------------------------------

Call = Callable[[FencedClusterAPI], Awaitable[Any]]

WRITES: list[tuple[str, Call, tuple[str, str]]] = [
    (
        "bind",
        lambda a: a.bind(namespace="default", name="p", uid="", node_name="n1"),
        ("create", "pods/binding"),
    ),
    (
        "event",
        lambda a: a.create_event(event={"metadata": {"namespace": "default", "name": "e"}}),
        ("create", "events"),
    ),
    (
        "pod-status",
        lambda a: a.patch_pod_status(namespace="default", name="p", patch={"status": {}}),
        ("patch", "pods/status"),
    ),
    (
        "victim-deletion",
        lambda a: a.delete_pod(namespace="default", name="p", uid=""),
        ("delete", "pods"),
    ),
    (
        "object-update",
        lambda a: a.update_object(kind="persistentvolumes", obj={"metadata": {"name": "pv"}}),
        ("update", "persistentvolumes"),
    ),
    (
        "object-patch",
        lambda a: a.patch_object(
            kind="resourceclaims", namespace="default", name="c", patch={}, subresource="status"
        ),
        ("patch", "resourceclaims/status"),
    ),
    (
        "object-create",
        lambda a: a.create_object(
            kind="resourceclaims",
            obj={"metadata": {"namespace": "default", "generateName": "p-extended-resources-"}},
        ),
        ("create", "resourceclaims"),
    ),
    (
        "object-delete",
        lambda a: a.delete_object(kind="resourceclaims", namespace="default", name="c"),
        ("delete", "resourceclaims"),
    ),
]


@pytest.mark.parametrize(("call", "counted"), [w[1:] for w in WRITES], ids=[w[0] for w in WRITES])
async def test_every_write_is_refused_once_the_gate_is_closed(
    call: Call, counted: tuple[str, str]
) -> None:
    c = InMemoryCluster()
    c.create("pods", make_pod("p"))
    c.create("nodes", make_node("n1"))
    clock = Clock()
    gate = gate_at(clock.t - 10, clock)
    api = FencedClusterAPI(c, gate)
    before = (c.bind_calls, len(c.events), [dict(o) for o in c.objects("pods")])
    with pytest.raises(Fenced):
        await call(api)
    assert (c.bind_calls, len(c.events), [dict(o) for o in c.objects("pods")]) == before
    assert gate.refused == {counted: 1}
    text = generate_metrics(gate)
    verb, resource = counted
    assert f'ksched_fenced_writes_total{{resource="{resource}",verb="{verb}"}} 1.0' in text


async def test_reads_watches_and_leases_pass_a_closed_gate() -> None:
    c = InMemoryCluster()
    c.create("pods", make_pod("p"))
    clock = Clock()
    api = FencedClusterAPI(c, gate_at(None, clock))
    listed = await api.list(kind="pods")
    assert [p["metadata"]["name"] for p in listed.items] == ["p"]
    assert (await api.get_object(kind="pods", namespace="default", name="p"))["metadata"]
    lease = {"metadata": {"namespace": "ns", "name": "l"}, "spec": {}}
    created = await api.create_lease(lease=lease)
    await api.update_lease(lease=created)
    assert await api.get_lease(namespace="ns", name="l")


def generate_metrics(gate: FencingGate) -> str:
    registry = CollectorRegistry()
    registry.register(FencingMetrics(gate))
    return generate_latest(registry).decode()


def test_the_renewal_age_is_exported_while_held() -> None:
    clock = Clock()
    assert "\nksched_lease_renewal_age_seconds " not in generate_metrics(gate_at(None, clock))
    held = generate_metrics(gate_at(clock.t - 1.5, clock))
    assert "\nksched_lease_renewal_age_seconds 1.5\n" in held


# ---- the scheduler behind the fence -----------------------------------------------


async def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def bound(c: InMemoryCluster) -> set[str]:
    return {p["metadata"]["name"] for p in c.objects("pods") if p["spec"].get("nodeName")}


async def test_a_refused_binding_sends_nothing_and_stops_the_scheduler() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    renewed = [time.monotonic()]
    lapses: list[str] = []
    gate = FencingGate(
        renewed_at=lambda: renewed[0], limit=3.0, lease="ns/l", on_lapse=lapses.append
    )
    sched = Scheduler(FencedClusterAPI(c, gate), {"default-scheduler": default_profile()}, seed=1)
    gate.on_lapse = lambda reason: (lapses.append(reason), sched.stop_leading())
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        c.create("pods", make_pod("before"))
        await wait_for(lambda: bound(c) == {"before"})
        events_before = len(c.events)
        renewed[0] -= 10  # as if the process had been frozen for 10 s
        for i in range(3):
            c.create("pods", make_pod(f"after-{i}"))
        await asyncio.wait_for(task, 5)  # the scheduling loop ends by itself
    finally:
        await sched.shutdown()
    assert bound(c) == {"before"}
    assert c.bind_calls == 1
    assert len(c.events) == events_before  # neither Scheduled nor FailedScheduling
    assert len(lapses) == 1
    assert sched.cache.num_assumed() == 0
    assert gate.refused[("create", "pods/binding")] >= 1
    # The pod whose binding was refused is not lost: its failure put it back in the queue.
    statuses = [
        cond
        for p in c.objects("pods")
        for cond in (p.get("status") or {}).get("conditions") or []
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False"
    ]
    assert statuses == []  # and its condition patch was refused as well


# ---- ksched run's composition: a paused leader ------------------------------------

CONFIG = (
    b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    b"leaderElection: {leaderElect: true, leaseDuration: 1s, renewDeadline: 0.6s, "
    b"retryPeriod: 0.1s, resourceNamespace: kube-system, resourceName: ksched}\n"
)


def elector_for(c: InMemoryCluster, identity: str) -> LeaderElector:
    lock = LeaseLock(c, namespace="kube-system", name="ksched", identity=identity)
    return LeaderElector(lock, lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)


async def test_a_leader_frozen_past_its_lease_writes_nothing_after_it_resumes_and_exits() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", pods="3"))
    cfg = load_config_bytes(CONFIG)
    registry = CollectorRegistry()
    started = asyncio.Event()
    elector = elector_for(c, "a")
    task = asyncio.get_running_loop().create_task(
        serve(
            cfg,
            c,
            stop=asyncio.Event(),
            registry=registry,
            elector=elector,
            on_started=lambda s: started.set(),
        )
    )
    await asyncio.wait_for(started.wait(), 5)
    c.create("pods", make_pod("before"))
    await wait_for(lambda: bound(c) == {"before"})
    binds, events = c.bind_calls, len(c.events)
    # Pods arrive, and the whole process freezes before it handles them (SIGSTOP, a
    # long GC pause): 1.5 s, longer than the lease.
    for i in range(3):
        c.create("pods", make_pod(f"after-{i}"))
    time.sleep(1.5)
    with pytest.raises(LeaderElectionLost, match="leaderelection lost: "):
        await asyncio.wait_for(task, 5)
    assert bound(c) == {"before"}
    assert c.bind_calls == binds
    scheduler_events = [e for e in list(c.events)[events:] if e.get("reason") != "LeaderElection"]
    assert scheduler_events == []


async def test_a_leader_that_keeps_renewing_is_never_fenced() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    cfg = load_config_bytes(CONFIG)
    stop = asyncio.Event()
    started = asyncio.Event()
    registry = CollectorRegistry()
    task = asyncio.get_running_loop().create_task(
        serve(
            cfg,
            c,
            stop=stop,
            registry=registry,
            elector=elector_for(c, "a"),
            on_started=lambda s: started.set(),
        )
    )
    await asyncio.wait_for(started.wait(), 5)
    for i in range(20):
        c.create("pods", make_pod(f"p{i}"))
        await asyncio.sleep(0.1)  # 2 s: several lease durations
    await wait_for(lambda: len(bound(c)) == 20)
    text = generate_latest(registry).decode()
    assert "ksched_fenced_writes_total{" not in text
    assert "\nksched_lease_renewal_age_seconds " in text
    stop.set()
    sched = await asyncio.wait_for(task, 5)
    assert sched.stats.bound == 20
