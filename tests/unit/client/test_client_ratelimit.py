"""The qps/burst token bucket: burst at once, then one token per 1/qps seconds."""

from __future__ import annotations

import asyncio

import pytest

from ksched.client.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_goes_at_once_then_callers_queue_in_order() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # reservations stack up
    clock.now += 1.0  # refills, but never beyond the burst
    assert bucket.reserve() == 0.0


def test_tokens_refill_at_qps_up_to_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(2, 2, clock=clock)
    bucket.reserve(), bucket.reserve()
    clock.now += 0.5
    assert bucket.reserve() == 0.0  # one token earned in 0.5s
    assert bucket.reserve() == pytest.approx(0.5)


def test_zero_qps_means_client_go_defaults_and_negative_means_unlimited() -> None:
    default = TokenBucket(0, 0)
    assert (default.qps, default.burst) == (DEFAULT_QPS, DEFAULT_BURST)
    unlimited = TokenBucket(-1, 0)
    assert unlimited.unlimited
    assert all(unlimited.reserve() == 0.0 for _ in range(10_000))


async def test_acquire_waits_and_a_cancelled_waiter_gives_its_token_back() -> None:
    bucket = TokenBucket(20, 1)
    await bucket.acquire()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await bucket.acquire()
    assert loop.time() - t0 >= 0.04
    waiter = loop.create_task(bucket.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # The cancelled reservation was returned: the next caller waits one interval, not two.
    t0 = loop.time()
    await bucket.acquire()
    assert loop.time() - t0 < 0.09
