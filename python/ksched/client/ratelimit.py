"""The client-side rate limit of ``clientConnection.qps`` / ``burst``.

client-go throttles every request of a client (watches included) with a token bucket:
``burst`` tokens, refilled at ``qps`` per second, a request waits for its token.
:class:`TokenBucket` does the same with reservations (as ``golang.org/x/time/rate``
does): a caller takes a token at once, possibly driving the balance negative, and sleeps
for the time the bucket needs to earn it back. Waiters therefore leave in arrival order
without a lock or a queue; a caller cancelled while waiting gives its token back.

``qps == 0`` means client-go's default (5 qps, burst 10); ``qps < 0`` disables the limit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

DEFAULT_QPS = 5.0
DEFAULT_BURST = 10


class TokenBucket:
    """``acquire()`` waits until the request may go."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if qps == 0:
            qps, burst = DEFAULT_QPS, burst or DEFAULT_BURST
        self.qps = qps
        self.burst = max(int(burst), 1)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        #: Total seconds callers spent waiting (for metrics and tests).
        self.waited = 0.0

    @property
    def unlimited(self) -> bool:
        return self.qps < 0

    def reserve(self) -> float:
        """Take a token now; return how many seconds the caller must wait for it."""
        if self.qps < 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def cancel(self) -> None:
        """Give back a token taken by :meth:`reserve` that was not used."""
        if self.qps >= 0:
            self._tokens = min(float(self.burst), self._tokens + 1.0)

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay <= 0:
            return
        self.waited += delay
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancel()
            raise
