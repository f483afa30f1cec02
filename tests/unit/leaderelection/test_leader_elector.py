"""Leader election on the embedded cluster: client-go's acquire/renew/release rules,
driven one attempt at a time with a fake clock, and the loops with short real periods."""

from __future__ import annotations

import asyncio
import datetime
import re
import time
from typing import Any

import pytest

from ksched.cluster import Conflict
from ksched.leaderelection import (
    LeaderElectionRecord,
    LeaderElector,
    LeaseCandidate,
    LeaseLock,
    format_micro_time,
    parse_micro_time,
)
from ksched.sim.cluster import InMemoryCluster

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.base = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime.datetime:
        return self.base + datetime.timedelta(seconds=self.t - 1000.0)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def elector(
    api: InMemoryCluster,
    identity: str,
    clock: FakeClock | None = None,
    *,
    lease_duration: float = 15,
    renew_deadline: float = 10,
    retry_period: float = 2,
    **kwargs: Any,
) -> LeaderElector:
    lock = LeaseLock(api, namespace="kube-system", name="kube-scheduler", identity=identity)
    return LeaderElector(
        lock,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        clock=clock,
        **kwargs,
    )


async def spec(api: InMemoryCluster) -> dict[str, Any]:
    lease = await api.get_lease(namespace="kube-system", name="kube-scheduler")
    return dict(lease["spec"])


def test_micro_time_round_trips() -> None:
    t = datetime.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC)
    assert format_micro_time(t) == "2026-01-02T03:04:05.000006Z"
    assert parse_micro_time("2026-01-02T03:04:05.000006Z") == t
    assert parse_micro_time(None) is None


def test_record_spec_conversion_follows_client_go() -> None:
    rec = LeaderElectionRecord("a", 15, "t1", "t2", 3)
    assert rec.to_spec() == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "t1",
        "renewTime": "t2",
        "leaseTransitions": 3,
    }
    assert LeaderElectionRecord.from_spec(rec.to_spec()) == rec
    assert "strategy" in LeaderElectionRecord(strategy="OldestEmulationVersion").to_spec()


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [(10, 10, 2), (15, 2, 2), (0.5, 0.4, 0.1)],
    ids=["lease-not-longer-than-deadline", "deadline-within-jittered-retry", "sub-second-lease"],
)
def test_invalid_timings_are_refused(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    with pytest.raises(ValueError):
        elector(
            InMemoryCluster(),
            "a",
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
        )


async def test_first_candidate_creates_the_lease_with_transitions_zero() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a = elector(api, "a", clock)
    assert await a.try_acquire_or_renew()
    s = await spec(api)
    assert s["holderIdentity"] == "a"
    assert s["leaseDurationSeconds"] == 15
    assert s["leaseTransitions"] == 0
    assert MICRO.match(s["acquireTime"]) and s["acquireTime"] == s["renewTime"]
    assert a.is_leader()


async def test_renewal_keeps_acquire_time_and_transitions_and_moves_renew_time() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a = elector(api, "a", clock)
    await a.try_acquire_or_renew()
    first = await spec(api)
    clock.advance(2)
    writes = api.lease_writes
    assert await a.try_acquire_or_renew()
    s = await spec(api)
    assert s["acquireTime"] == first["acquireTime"]
    assert s["leaseTransitions"] == 0
    assert parse_micro_time(s["renewTime"]) - parse_micro_time(first["renewTime"]) == (  # type: ignore[operator]
        datetime.timedelta(seconds=2)
    )
    assert api.lease_writes == writes + 1  # fast path: one PUT, no GET needed


async def test_a_standby_waits_for_the_lease_to_expire_by_its_own_clock() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # observed now: valid for 15s from now
    assert b.leader() == "a"
    clock.advance(14.9)
    assert not await b.try_acquire_or_renew()
    clock.advance(0.2)
    assert await b.try_acquire_or_renew()
    s = await spec(api)
    assert s["holderIdentity"] == "b"
    assert s["leaseTransitions"] == 1
    assert s["acquireTime"] == s["renewTime"]
    # The old leader's fast path fails on the stale resourceVersion, and the slow path
    # sees b's valid lease.
    assert not await a.try_acquire_or_renew()
    assert not a.is_leader() and a.leader() == "b"


async def test_a_renewing_leader_is_never_taken_over() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    await a.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(2)
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()  # every renewal resets b's observation
    assert (await spec(api))["holderIdentity"] == "a"


async def test_concurrent_takeover_has_exactly_one_winner() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a = elector(api, "a", clock)
    await a.try_acquire_or_renew()
    others = [elector(api, f"c{i}", clock) for i in range(5)]
    for o in others:
        await o.try_acquire_or_renew()  # observe a's record
    clock.advance(16)
    # Every candidate read the same resourceVersion; only the first PUT wins.
    reads = [await o.lock.get() for o in others]
    assert len({str(r) for r in reads}) == 1
    wins = 0
    for o in others:
        try:
            await o.lock.update(LeaderElectionRecord(o.identity, 15, "t", "t", 1))
            wins += 1
        except Conflict:
            pass
    assert wins == 1


async def test_release_clears_the_holder_and_a_standby_takes_over_at_once() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    s = await spec(api)
    assert s["holderIdentity"] == ""
    assert s["leaseDurationSeconds"] == 1
    assert s["leaseTransitions"] == 0
    assert MICRO.match(s["renewTime"])
    assert await b.try_acquire_or_renew()  # no waiting: the holder is empty
    s = await spec(api)
    assert s["holderIdentity"] == "b" and s["leaseTransitions"] == 1
    assert await a.release()  # not the holder: nothing to do
    assert (await spec(api))["holderIdentity"] == "b"


async def test_watchdog_fails_only_a_leader_that_stopped_renewing() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a, b = elector(api, "a", clock), elector(api, "b", clock)
    assert a.check(20) is None
    await a.try_acquire_or_renew()
    await b.try_acquire_or_renew()
    clock.advance(35.1)
    assert a.check(20) == "failed election to renew leadership on lease kube-scheduler"
    assert b.check(20) is None  # a standby is never unhealthy


async def test_loops_acquire_renew_lose_and_stop() -> None:
    api = InMemoryCluster()
    a = elector(api, "a", lease_duration=1, renew_deadline=0.5, retry_period=0.1)
    stop = asyncio.Event()
    assert await asyncio.wait_for(a.acquire(stop), 2)
    assert a.leading
    renew = asyncio.get_running_loop().create_task(a.renew(stop))
    await asyncio.sleep(0.35)
    assert (await spec(api))["holderIdentity"] == "a"
    # The API server starts refusing our writes: lost within renewDeadline (+ a retry).
    real_update = api.update_lease

    async def refuse(**kwargs: Any) -> Any:
        raise Conflict("refused")

    api.update_lease = refuse  # type: ignore[method-assign]
    t0 = asyncio.get_running_loop().time()
    assert await asyncio.wait_for(renew, 3) is False
    assert asyncio.get_running_loop().time() - t0 < 0.5 + 0.1 + 0.3
    assert not a.leading
    api.update_lease = real_update  # type: ignore[method-assign]
    # A stopped renew loop returns True.
    b = elector(api, "b", lease_duration=1, renew_deadline=0.5, retry_period=0.1)
    assert await asyncio.wait_for(b.acquire(stop), 3)  # a's lease expired
    stop.set()
    assert await asyncio.wait_for(b.renew(stop), 1) is True
    assert not await asyncio.wait_for(elector(api, "c").acquire(stop), 1)  # stopped


async def test_coordinated_mode_never_creates_or_takes_the_lease() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a = elector(api, "a", clock, coordinated=True)
    assert not await a.try_acquire_or_renew()
    with pytest.raises(Exception, match="not found"):
        await spec(api)
    # The controller names a holder; only that candidate renews it, keeping the strategy.
    await api.create_lease(
        lease={
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "a",
                "leaseDurationSeconds": 15,
                "strategy": "OldestEmulationVersion",
                "leaseTransitions": 4,
                "acquireTime": "2026-01-01T00:00:00.000000Z",
                "renewTime": "2026-01-01T00:00:00.000000Z",
            },
        }
    )
    b = elector(api, "b", clock, coordinated=True)
    clock.advance(100)
    assert not await b.try_acquire_or_renew()  # expired for b, yet b never takes it
    assert await a.try_acquire_or_renew()
    s = await spec(api)
    assert s["holderIdentity"] == "a" and s["strategy"] == "OldestEmulationVersion"
    assert s["leaseTransitions"] == 4 and s["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    # A preferred holder asks the leader to yield: it stops renewing.
    lease = await api.get_lease(namespace="kube-system", name="kube-scheduler")
    await api.update_lease(lease={**lease, "spec": {**lease["spec"], "preferredHolder": "b"}})
    assert not await a.try_acquire_or_renew()


async def test_lease_candidate_is_created_and_answers_pings() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    cand = LeaseCandidate(
        api,
        namespace="kube-system",
        name="host_1",
        lease_name="kube-scheduler",
        binary_version="1.36.0",
        emulation_version="1.36.0",
        clock=clock,
    )
    await cand.ensure()
    obj = await api.get_lease(namespace="kube-system", name="host_1", kind="leasecandidates")
    assert obj["spec"]["leaseName"] == "kube-scheduler"
    assert obj["spec"]["strategy"] == "OldestEmulationVersion"
    assert obj["spec"]["binaryVersion"] == obj["spec"]["emulationVersion"] == "1.36.0"
    clock.advance(1)
    await cand.ensure()
    assert cand.renewals == 0  # not pinged, not due
    ping = format_micro_time(clock.now())
    await api.update_lease(
        lease={**obj, "spec": {**obj["spec"], "pingTime": ping}}, kind="leasecandidates"
    )
    clock.advance(1)
    await cand.ensure()
    assert cand.renewals == 1
    renewed = await api.get_lease(namespace="kube-system", name="host_1", kind="leasecandidates")
    assert renewed["spec"]["renewTime"] > ping
    clock.advance(301)
    await cand.ensure()
    assert cand.renewals == 2  # every 5 minutes without a ping


async def test_renewed_at_is_when_the_successful_request_was_sent_not_answered() -> None:
    api, clock = InMemoryCluster(), FakeClock()
    a = elector(api, "a", clock)
    assert a.renewed_at is None
    assert await a.try_acquire_or_renew()
    assert a.renewed_at == 1000.0
    real_update = api.update_lease

    async def slow(**kwargs: Any) -> Any:
        clock.advance(7.0)  # the answer comes back 7 s later (a pause, a slow apiserver)
        return await real_update(**kwargs)

    api.update_lease = slow  # type: ignore[method-assign]
    clock.advance(2.0)
    assert await a.try_acquire_or_renew()
    assert a.renewed_at == 1002.0  # the send time: others saw the record only after it
    assert a.observed_time == 1009.0
    api.update_lease = real_update  # type: ignore[method-assign]
    # A failed attempt leaves it alone; releasing clears it.
    b = elector(api, "b", clock)
    assert not await b.try_acquire_or_renew() and b.renewed_at is None
    assert await a.release()
    assert a.renewed_at is None


async def test_a_renew_loop_resumed_after_a_pause_gives_up_without_renewing() -> None:
    # client-go starts each renew cycle with a fresh now + renewDeadline, so a leader
    # frozen longer than its lease renews on resume and keeps leading; here the
    # deadline counts from the last successful renewal.
    api = InMemoryCluster()
    a = elector(api, "a", lease_duration=1, renew_deadline=0.5, retry_period=0.1)
    stop = asyncio.Event()
    assert await asyncio.wait_for(a.acquire(stop), 2)
    renew = asyncio.get_running_loop().create_task(a.renew(stop))
    await asyncio.sleep(0.25)
    attempts = 0
    real_update = api.update_lease

    async def counting(**kwargs: Any) -> Any:
        nonlocal attempts
        attempts += 1
        return await real_update(**kwargs)

    api.update_lease = counting  # type: ignore[method-assign]
    time.sleep(0.8)  # the whole process freezes past renewDeadline
    assert await asyncio.wait_for(renew, 1) is False
    assert attempts == 0
    assert not a.leading
