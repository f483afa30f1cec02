"""Lease-based leader election with client-go's semantics, on asyncio.

The algorithm is ``k8s.io/client-go/tools/leaderelection``'s:

* **acquire** — call :meth:`LeaderElector.try_acquire_or_renew` every ``retryPeriod``
  with client-go's jitter (the wait after an attempt is ``retryPeriod * (1 + 1.2 r)``,
  ``r`` uniform in [0, 1)) until it succeeds or ``stop`` is set;
* **try_acquire_or_renew** — the leader first updates optimistically from the record it
  observed last (fast path); otherwise the Lease is read (created when missing, with
  ``leaseTransitions: 0``). A record that differs from the one observed before is
  stamped with the *local* monotonic time: a candidate may take the Lease only once
  ``leaseDurationSeconds`` have passed since it last saw the record change, so clocks
  of different machines are never compared. A leader keeps ``acquireTime`` and
  ``leaseTransitions``; a new holder increments ``leaseTransitions``. Every write is a
  PUT with the resourceVersion read, so two candidates never both win;
* **renew** — every ``retryPeriod`` after the previous renewal, retry (each
  ``retryPeriod``) until ``renewDeadline`` after the last *successful* renewal was
  sent; when that passes the lease is lost. client-go gives each renew cycle a fresh
  ``now + renewDeadline``, so a leader paused longer than the Lease and then resumed
  still counts itself leading for another renewDeadline; here the deadline is fixed
  by :attr:`LeaderElector.renewed_at` (the monotonic time the last successful acquire
  or renew request was sent), which is also what the write fence reads
  (:mod:`.fencing`);
* **release** (``ReleaseOnCancel``) — re-read the Lease and, when still the holder,
  write an empty ``holderIdentity`` with ``leaseDurationSeconds: 1`` (retrying on
  conflict), so a standby takes over at its next attempt instead of waiting out the
  lease;
* **coordinated** (``CoordinatedLeaderElection``) — the API server's leader election
  controller picks the holder among LeaseCandidates (:mod:`.candidate`) and writes the
  Lease; a candidate never creates or takes it, it only renews it while it is named
  holder, its record has not expired, and no ``preferredHolder`` asks it to yield.

:meth:`LeaderElector.check` is the healthz watchdog (``NewLeaderHealthzAdaptor``):
a leader that has not renewed for ``leaseDuration`` + the tolerance is unhealthy.
``leader_election_master_status{name}`` is exported by :class:`LeaderMetrics`.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ksched import logs
from ksched.cluster import APIError, ClusterAPI, Conflict, NotFound
from ksched.leaderelection.lease import LeaderElectionRecord, LeaseLock, format_micro_time

__all__ = [
    "JITTER_FACTOR",
    "Clock",
    "LeaderElector",
    "LeaderMetrics",
    "RealClock",
    "lease_event_recorder",
]

log = logs.get_logger(__name__)

#: client-go ``leaderelection.JitterFactor``.
JITTER_FACTOR = 1.2


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime.datetime: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` or until ``stop`` is set; True when stopped."""
    if stop.is_set():
        return True
    try:
        await asyncio.wait_for(stop.wait(), max(seconds, 0.0))
    except TimeoutError:
        return False
    return True


class LeaderElector:
    """One candidate for one Lease (client-go ``LeaderElector``)."""

    def __init__(
        self,
        lock: LeaseLock,
        *,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        name: str = "",
        coordinated: bool = False,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        record_event: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if lease_duration < 1 or retry_period <= 0:
            raise ValueError("leaseDuration must be at least 1s and retryPeriod positive")
        self.lock = lock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.name = name or lock.name
        self.coordinated = coordinated
        self.clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.on_new_leader = on_new_leader
        self.record_event = record_event
        self.observed_record = LeaderElectionRecord()
        self._observed_raw: dict[str, Any] | None = None
        self.observed_time = 0.0
        self._reported_leader = ""
        #: Whether this elector currently leads (for leader_election_master_status).
        self.leading = False
        #: Monotonic time at which the last successful acquire/renew request was sent
        #: (None: never held, or released). Others may take the Lease only a full
        #: leaseDuration after they saw that renewal, hence after this time.
        self.renewed_at: float | None = None
        #: Renewals that took the slow path (read, then update): leader_election_slowpath_total.
        self.slow_path_renewals = 0

    # ---- state -----------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.lock.identity

    def is_leader(self) -> bool:
        """Whether the last observed record names this candidate."""
        return self.observed_record.holder_identity == self.identity

    def leader(self) -> str:
        """The last observed holder ('' when none)."""
        return self.observed_record.holder_identity

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.monotonic()

    def _renewed(self, record: LeaderElectionRecord, sent: float) -> None:
        """Our record was written: observe it, and remember when its request left."""
        self._set_observed(record)
        self.renewed_at = sent

    def _lease_valid(self, now: float) -> bool:
        return self.observed_time + self.observed_record.lease_duration_seconds > now

    def _new_record(self) -> LeaderElectionRecord:
        stamp = format_micro_time(self.clock.now())
        return LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=stamp,
            renew_time=stamp,
        )

    def _observe(self, old: LeaderElectionRecord, raw: dict[str, Any]) -> None:
        if raw != self._observed_raw:
            self._set_observed(old)
            self._observed_raw = raw

    def _maybe_report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self.on_new_leader is not None:
            self.on_new_leader(holder)

    # ---- one attempt -------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to acquire or renew the Lease; True on success."""
        if self.coordinated:
            return await self._try_coordinated_renew()
        record = self._new_record()
        # 1. Fast path: the leader updates from the record it observed last.
        if self.is_leader() and self._lease_valid(self.clock.monotonic()):
            record.acquire_time = self.observed_record.acquire_time
            record.leader_transitions = self.observed_record.leader_transitions
            sent = self.clock.monotonic()
            try:
                await self.lock.update(record)
            except (APIError, OSError, TimeoutError) as exc:
                log.v(2).info("Failed to update lease optimistically, falling back to slow path",
                              lock=self.lock.describe(), err=exc)  # fmt: skip
            else:
                self._renewed(record, sent)
                return True
        # 2. Read the Lease, or create it.
        try:
            old, raw = await self.lock.get()
        except NotFound:
            sent = self.clock.monotonic()
            try:
                await self.lock.create(record)
            except (APIError, OSError, TimeoutError) as exc:
                log.error("Error initially creating lease lock", err=exc, lock=self.lock.describe())
                return False
            self._renewed(record, sent)
            return True
        except (APIError, OSError, TimeoutError) as exc:
            log.error("Error retrieving lease lock", err=exc, lock=self.lock.describe())
            return False
        # 3. Someone else's, and not expired by our own clock?
        self._observe(old, raw)
        if (
            old.holder_identity
            and self._lease_valid(self.clock.monotonic())
            and not self.is_leader()
        ):
            log.v(4).info("Lease is held by and has not yet expired", lock=self.lock.describe(),
                          holder=old.holder_identity)  # fmt: skip
            return False
        # 4. Take or keep it.
        if self.is_leader():
            record.acquire_time = old.acquire_time
            record.leader_transitions = old.leader_transitions
            self.slow_path_renewals += 1
        else:
            record.leader_transitions = old.leader_transitions + 1
        sent = self.clock.monotonic()
        try:
            await self.lock.update(record)
        except (APIError, OSError, TimeoutError) as exc:
            log.error("Failed to update lease", err=exc, lock=self.lock.describe())
            return False
        self._renewed(record, sent)
        return True

    async def _try_coordinated_renew(self) -> bool:
        record = self._new_record()
        try:
            old, raw = await self.lock.get()
        except NotFound:
            log.info("Lease lock not found", lock=self.lock.describe(), err="not found")
            return False
        except (APIError, OSError, TimeoutError) as exc:
            log.error("Error retrieving lease lock", err=exc, lock=self.lock.describe())
            return False
        self._observe(old, raw)
        if self.observed_time + old.lease_duration_seconds < self.clock.monotonic():
            log.info("Lease has expired", lock=self.lock.describe())
            return False
        if not self.is_leader():
            return False
        if old.preferred_holder:
            log.v(4).info("Lease is marked as 'end of term'", lock=self.lock.describe())
            return False
        record.acquire_time = old.acquire_time
        record.leader_transitions = old.leader_transitions
        record.strategy = old.strategy
        sent = self.clock.monotonic()
        try:
            await self.lock.update(record)
        except (APIError, OSError, TimeoutError) as exc:
            log.error("Failed to update lock", err=exc, lock=self.lock.describe())
            return False
        self._renewed(record, sent)
        return True

    async def _attempt(self, timeout: float) -> bool:
        try:
            return await asyncio.wait_for(self.try_acquire_or_renew(), max(timeout, 0.001))
        except TimeoutError:
            log.error(
                "Lease attempt timed out", lock=self.lock.describe(), timeout=f"{timeout:.1f}s"
            )
            return False

    # ---- loops -------------------------------------------------------------------------

    def _jittered(self) -> float:
        return self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Try until the Lease is ours (True) or ``stop`` is set (False)."""
        desc = self.lock.describe()
        log.info("Attempting to acquire leader lease...", lock=desc)
        while not stop.is_set():
            ok = await self._attempt(self.renew_deadline)
            self._maybe_report_transition()
            if ok:
                log.info("Successfully acquired lease", lock=desc)
                self.leading = True
                await self._event("became leader")
                return True
            if await _wait(stop, self._jittered()):
                break
        return False

    async def renew(self, stop: asyncio.Event) -> bool:
        """Keep renewing. Returns True when ``stop`` was set, False when the lease was
        lost (no successful renewal within ``renewDeadline``)."""
        desc = self.lock.describe()
        while not stop.is_set():
            last = self.renewed_at if self.renewed_at is not None else self.clock.monotonic()
            deadline = last + self.renew_deadline
            ok = False
            while not stop.is_set():
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    break
                ok = await self._attempt(remaining)
                if ok:
                    break
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0 or await _wait(stop, min(self.retry_period, remaining)):
                    break
            self._maybe_report_transition()
            if stop.is_set():
                break
            if not ok:
                log.info(
                    "Failed to renew lease", lock=desc, err="timed out waiting for the condition"
                )
                self.leading = False
                await self._event("stopped leading")
                return False
            if await _wait(stop, self.retry_period):
                break
        self.leading = False
        return True

    async def release(self) -> bool:
        """Give the Lease up if we hold it (``ReleaseOnCancel``); True when done."""
        if self.coordinated or not self.is_leader():
            return True
        try:
            return await asyncio.wait_for(self._try_release(), self.renew_deadline)
        except TimeoutError:
            log.error("Failed to release lease", err="timed out", lock=self.lock.describe())
            return False

    async def _try_release(self) -> bool:
        while True:
            try:
                old, _ = await self.lock.get()
            except (APIError, OSError) as exc:
                log.error("Failed to release lease", err=exc, lock=self.lock.describe())
                return False
            if old.holder_identity != self.identity:
                return True
            stamp = format_micro_time(self.clock.now())
            record = LeaderElectionRecord(
                leader_transitions=old.leader_transitions,
                lease_duration_seconds=1,
                acquire_time=stamp,
                renew_time=stamp,
            )
            try:
                await self.lock.update(record)
            except Conflict:
                continue
            except (APIError, OSError) as exc:
                log.error("Failed to release lease", err=exc, lock=self.lock.describe())
                return False
            self._set_observed(record)
            self.renewed_at = None
            log.v(2).info("Released lease", lock=self.lock.describe())
            return True

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """Healthz watchdog: an error text when we lead but have not renewed for
        ``leaseDuration + max_tolerable_expired_lease``; None otherwise."""
        if not self.is_leader():
            return None
        if self.clock.monotonic() - self.observed_time > (
            self.lease_duration + max_tolerable_expired_lease
        ):
            return f"failed election to renew leadership on lease {self.name}"
        return None

    async def _event(self, what: str) -> None:
        if self.record_event is not None:
            try:
                await self.record_event(f"{self.identity} {what}")
            except (APIError, OSError, TimeoutError) as exc:
                log.v(4).info("Lease event not recorded", err=exc)


class LeaderMetrics(Collector):
    """client-go's ``leader_election_master_status{name}`` (1 while leading) and
    ``leader_election_slowpath_total{name}`` (exposed once it has a count, as
    client_golang exposes a vector)."""

    def __init__(self, elector: LeaderElector) -> None:
        self._elector = elector

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        family = GaugeMetricFamily(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            labels=["name"],
        )
        family.add_metric([self._elector.name], 1.0 if self._elector.leading else 0.0)
        yield family
        if self._elector.slow_path_renewals:
            slow = CounterMetricFamily(
                "leader_election_slowpath",
                "Total number of slow path exercised in renewing leader leases. 'name' is the "
                "string used to identify the lease. Please make sure to group by name.",
                labels=["name"],
            )
            slow.add_metric([self._elector.name], float(self._elector.slow_path_renewals))
            yield slow


def lease_event_recorder(
    api: ClusterAPI, lock: LeaseLock, controller: str
) -> Callable[[str], Awaitable[None]]:
    """``Lock.RecordEvent``: a ``LeaderElection`` event regarding the Lease."""

    async def record(note: str) -> None:
        now = format_micro_time(datetime.datetime.now(datetime.UTC))
        lease = lock.lease or {}
        meta = lease.get("metadata") or {}
        await api.create_event(
            event={
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {
                    "generateName": f"{lock.name}.",
                    "namespace": lock.namespace,
                },
                "eventTime": now,
                "reportingController": controller,
                # The legacy recorder kube-scheduler uses reports the host.
                "reportingInstance": socket.gethostname(),
                "action": "LeaderElection",
                "reason": "LeaderElection",
                "type": "Normal",
                "note": note,
                "regarding": {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "namespace": lock.namespace,
                    "name": lock.name,
                    "uid": meta.get("uid", ""),
                },
            }
        )

    return record
