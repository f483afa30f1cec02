"""The binding queue: bounded, priority-ordered bindings and the run-ahead limit.

Why. ksched decides far faster than an API server takes bindings (on the project's
2-core machine: tens of thousands of decisions a second against about a thousand
bindings). Before this queue every decision spawned its own binding task, and thousands
of them waited, in arrival order, for one of the client's connections: every pod was
bound sooner than with upstream, yet ``scheduler_scheduling_attempt_duration_seconds``
(which runs until the binding returns) read seconds, decisions went stale while they
waited, and a high-priority pod created during a burst waited behind the whole backlog.

What.

* **A bounded pool.** At most :attr:`BindQueue.workers` bindings are in flight. Jobs wait
  in one heap ordered by pod priority (higher first), then submission order, so bindings
  go out in priority order. A worker is a task that pops and runs jobs until the heap is
  empty, then ends: no task per pod, no idle task. Workers start one at a time: a
  submission starts one when every worker alive is running an entry, and a worker that
  takes an entry while others wait starts the next one (up to
  :attr:`BindQueue.workers`) before running it. A binding that suspends (a real API
  server) thus has the next worker start on the next event-loop iteration, so the pool
  fills within as many iterations as it has workers, while a burst of bindings that
  complete without suspending (the embedded cluster) costs two tasks, not one per pod.
* **Two kinds of entries.** A *job* (:meth:`BindQueue.submit`) is run by the worker
  itself: the scheduler's whole binding cycle of a pod that needs nothing but its Bind
  (no Permit wait, no PreBind, no pod group). A binding cycle that runs as its own task
  (it waits at Permit, runs PreBind or binds with its group) takes a *slot*
  (:meth:`BindQueue.slot`) around its Bind call: it waits in the same heap, and the
  worker that grants the slot holds it until the cycle releases it.
* **Run-ahead limit.** :attr:`BindQueue.backlog` counts the bindings submitted and not
  finished (jobs queued or running, cycles waiting for or holding a slot). The scheduling
  loop stops taking pods while it reaches :attr:`BindQueue.limit`
  (:meth:`BindQueue.wait_for_room`): the rest stay in the scheduling queue, where priority
  order and queueing hints still apply, and are decided on a fresher snapshot. The limit
  is derived from the measured binding rate: ``max(min_run_ahead, rate * horizon)``,
  where ``rate`` counts the bindings finished over the last :data:`RATE_WINDOW` seconds
  and ``horizon`` is how long a decision may wait for its binding (the default keeps
  the attempt latency within tens of milliseconds at any binding rate). The floor keeps
  the pool busy: the limit never falls below what the workers can have in flight, so
  the limit never throttles the binding rate it is measured from.

On the embedded cluster a binding completes without suspending, so a worker drains the
heap within one event-loop iteration and the limit is never reached; against a real API
server the backlog settles at the limit while the API server is the bottleneck.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_HORIZON",
    "DEFAULT_MIN_RUN_AHEAD",
    "DEFAULT_WORKERS",
    "RATE_WINDOW",
    "BindQueue",
]

#: Bindings in flight at once: the REST client's connection bound
#: (``ksched.client.rest.MAX_CONNECTIONS``); more would only queue in the client.
DEFAULT_WORKERS = 32
#: The run-ahead limit never goes below this many bindings (keeps the workers busy).
DEFAULT_MIN_RUN_AHEAD = 32
#: How long, at the measured binding rate, the decided pods may wait for their binding.
DEFAULT_HORIZON = 0.02
#: Bindings finished within this many seconds make the measured rate.
RATE_WINDOW = 1.0

#: A job: a coroutine function and its arguments, run by a worker.
Job = tuple[Callable[..., Awaitable[None]], tuple[Any, ...]]


class BindQueue:
    """Runs bindings in priority order, a bounded number at a time, and tells the
    scheduling loop how far it may run ahead of them."""

    def __init__(
        self,
        *,
        workers: int = DEFAULT_WORKERS,
        min_run_ahead: int = DEFAULT_MIN_RUN_AHEAD,
        horizon: float = DEFAULT_HORIZON,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError("a binding queue needs at least one worker")
        self.workers = workers
        self.min_run_ahead = max(min_run_ahead, workers)
        self.horizon = horizon
        self.clock = clock
        self._heap: list[tuple[int, int, Job | asyncio.Future[asyncio.Future[None]]]] = []
        self._seq = itertools.count()
        self._running = 0  # worker tasks alive
        self._busy = 0  # workers running an entry (a job, or a granted slot)
        self._tasks: set[asyncio.Task[None]] = set()
        #: Bindings submitted and not finished (see the module docstring).
        self.backlog = 0
        self._finished: deque[float] = deque()
        self._room: asyncio.Future[None] | None = None
        self._idle: asyncio.Future[None] | None = None

    # ---- measuring ---------------------------------------------------------------

    def rate(self) -> float:
        """Bindings finished per second over the last :data:`RATE_WINDOW` seconds."""
        finished = self._finished
        now = self.clock()
        while finished and now - finished[0] > RATE_WINDOW:
            finished.popleft()
        return len(finished) / RATE_WINDOW

    @property
    def limit(self) -> int:
        """How many bindings may be outstanding before the loop stops taking pods."""
        return max(self.min_run_ahead, math.ceil(self.rate() * self.horizon))

    def room(self) -> int:
        """How many more pods the loop may decide before it reaches the limit."""
        return self.limit - self.backlog

    async def wait_for_room(self) -> None:
        """Return once the backlog is below the limit, or :meth:`wake` is called."""
        if self.backlog < self.limit:
            return
        if self._room is None or self._room.done():
            self._room = asyncio.get_running_loop().create_future()
        await self._room

    def wake(self) -> None:
        """Let :meth:`wait_for_room` return now (the scheduler is stopping)."""
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    async def idle(self) -> None:
        """Return once nothing is submitted and not finished."""
        while self.backlog:
            if self._idle is None or self._idle.done():
                self._idle = asyncio.get_running_loop().create_future()
            await self._idle

    def _finish(self) -> None:
        self.backlog -= 1
        self._finished.append(self.clock())
        room = self._room
        if room is not None and not room.done() and self.backlog < self.limit:
            room.set_result(None)
        idle = self._idle
        if idle is not None and not idle.done() and not self.backlog:
            idle.set_result(None)

    # ---- submitting --------------------------------------------------------------

    def submit(self, priority: int, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``fn(*args)`` in a worker, after every job of higher priority and every
        earlier one of the same priority. Exceptions it raises are logged."""
        heapq.heappush(self._heap, (-priority, next(self._seq), (fn, args)))
        self.backlog += 1
        self._spawn()

    @asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        """Hold one of the workers' slots for the block (a binding cycle's Bind), taken
        in the same order as the jobs."""
        grant: asyncio.Future[asyncio.Future[None]] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (-priority, next(self._seq), grant))
        self.backlog += 1
        self._spawn()
        try:
            release = await grant
        except BaseException:
            if grant.done() and not grant.cancelled():
                # Granted just as the cycle was cancelled: hand the slot back (the
                # worker counts the entry out).
                grant.result().set_result(None)
            else:
                # Cancelled while waiting: the worker skips the entry; count it out.
                grant.cancel()
                self._finish()
            raise
        try:
            yield
        finally:
            release.set_result(None)

    def _spawn(self) -> None:
        """Start a worker unless one alive is not running an entry (it will pop the
        next) or the pool is full."""
        if self._running == self._busy and self._running < self.workers:
            self._running += 1
            task = asyncio.get_running_loop().create_task(self._work())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _work(self) -> None:
        heap = self._heap
        loop = asyncio.get_running_loop()
        try:
            while heap:
                _, _, entry = heapq.heappop(heap)
                if isinstance(entry, asyncio.Future):
                    if entry.done():
                        continue  # its cycle stopped waiting (and counted itself out)
                    release: asyncio.Future[None] = loop.create_future()
                    entry.set_result(release)
                    self._busy += 1
                    if heap:
                        self._spawn()
                    try:
                        await release
                    finally:
                        self._busy -= 1
                else:
                    fn, args = entry
                    self._busy += 1
                    if heap:
                        self._spawn()
                    try:
                        await fn(*args)
                    except Exception:
                        log.exception("a binding failed unexpectedly")
                    finally:
                        self._busy -= 1
                self._finish()
        finally:
            self._running -= 1
