"""A LeaseCandidate for coordinated leader election (client-go ``leasecandidate.go``).

With the ``CoordinatedLeaderElection`` feature, each replica publishes a
``coordination.k8s.io/v1beta1`` LeaseCandidate named after its identity, naming the
Lease it competes for, its binary and emulation versions and the strategy
(``OldestEmulationVersion``). The API server's leader election controller pings
candidates (``spec.pingTime``), expects them to answer by renewing (``spec.renewTime``),
picks the holder and writes the Lease; :class:`~.elector.LeaderElector` in coordinated
mode then only renews it.

Upstream watches its own LeaseCandidate with an informer and renews on a ping or every
5 minutes. ksched reads it every ``poll_interval`` (the retry period) instead of
watching: a ping is answered within one interval, which the controller tolerates.
:attr:`LeaseCandidate.synced` is the readyz ``informer-sync`` check's signal.
"""

from __future__ import annotations

import asyncio

from ksched import logs
from ksched.cluster import APIError, ClusterAPI, NotFound
from ksched.leaderelection.elector import Clock, RealClock, _wait
from ksched.leaderelection.lease import format_micro_time, parse_micro_time

__all__ = ["RENEW_INTERVAL", "LeaseCandidate"]

log = logs.get_logger(__name__)

#: client-go ``requeueInterval``: renew at least this often without a ping.
RENEW_INTERVAL = 300.0


class LeaseCandidate:
    """Keeps one LeaseCandidate object alive and answers the controller's pings."""

    def __init__(
        self,
        api: ClusterAPI,
        *,
        namespace: str,
        name: str,
        lease_name: str,
        binary_version: str,
        emulation_version: str,
        strategy: str = "OldestEmulationVersion",
        poll_interval: float = 1.0,
        clock: Clock | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.lease_name = lease_name
        self.binary_version = binary_version
        self.emulation_version = emulation_version
        self.strategy = strategy
        self.poll_interval = poll_interval
        self.clock: Clock = clock or RealClock()
        self.synced = asyncio.Event()
        self._last_renew = float("-inf")
        self.renewals = 0

    def _new(self) -> dict[str, object]:
        return {
            "apiVersion": "coordination.k8s.io/v1beta1",
            "kind": "LeaseCandidate",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "leaseName": self.lease_name,
                "binaryVersion": self.binary_version,
                "emulationVersion": self.emulation_version,
                "strategy": self.strategy,
                "renewTime": format_micro_time(self.clock.now()),
            },
        }

    async def ensure(self) -> None:
        """Create the candidate, or renew it when pinged or when due."""
        try:
            current = await self.api.get_lease(
                namespace=self.namespace, name=self.name, kind="leasecandidates"
            )
        except NotFound:
            log.v(2).info("Creating lease candidate")
            await self.api.create_lease(lease=self._new(), kind="leasecandidates")
            self._last_renew = self.clock.monotonic()
            return
        spec = current.get("spec") or {}
        ping = parse_micro_time(spec.get("pingTime"))
        renew = parse_micro_time(spec.get("renewTime"))
        pinged = ping is not None and (renew is None or ping > renew)
        due = self.clock.monotonic() - self._last_renew >= RENEW_INTERVAL
        if not (pinged or due):
            return
        spec = {**spec, "renewTime": format_micro_time(self.clock.now())}
        await self.api.update_lease(lease={**current, "spec": spec}, kind="leasecandidates")
        self._last_renew = self.clock.monotonic()
        self.renewals += 1

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.ensure()
                self.synced.set()
            except (APIError, OSError, TimeoutError) as exc:
                log.error("Ensuring lease failed", err=exc)
            if await _wait(stop, self.poll_interval):
                return
