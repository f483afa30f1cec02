"""The Lease lock: a ``coordination.k8s.io/v1`` Lease read and written through the
:class:`~ksched.cluster.ClusterAPI` (client-go ``resourcelock/leaselock.go``).

A :class:`LeaderElectionRecord` is the part of the Lease's spec that leader election
reasons about. Times are ``metav1.MicroTime`` text (RFC 3339 with microseconds, UTC);
``leaseDurationSeconds`` is whole seconds, as upstream truncates
``int(LeaseDuration / time.Second)``.

The lock keeps the Lease object from its last read or write, and an update replaces
that object's spec and PUTs it with the resourceVersion it was read at: the API server
answers 409 Conflict when someone else wrote the Lease in between (optimistic
concurrency), and leader election falls back to reading the Lease again.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from ksched.cluster import APIError, ClusterAPI, LeaseKind

__all__ = ["LeaderElectionRecord", "LeaseLock", "format_micro_time", "parse_micro_time"]

Obj = dict[str, Any]


def format_micro_time(t: datetime.datetime) -> str:
    """``metav1.MicroTime`` text: ``2006-01-02T15:04:05.000000Z`` (always UTC)."""
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str | None) -> datetime.datetime | None:
    """RFC 3339 text (with or without fraction) → aware datetime; None for null/empty."""
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(slots=True)
class LeaderElectionRecord:
    """client-go ``resourcelock.LeaderElectionRecord``, as stored in a Lease spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""

    @classmethod
    def from_spec(cls, spec: Obj) -> LeaderElectionRecord:
        """``LeaseSpecToLeaderElectionRecord``."""
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime") or None,
            renew_time=spec.get("renewTime") or None,
            leader_transitions=int(spec.get("leaseTransitions") or 0),
            strategy=str(spec.get("strategy") or ""),
            preferred_holder=str(spec.get("preferredHolder") or ""),
        )

    def to_spec(self) -> Obj:
        """``LeaderElectionRecordToLeaseSpec``: every field set, strategy and
        preferredHolder only when non-empty."""
        spec: Obj = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }
        if self.strategy:
            spec["strategy"] = self.strategy
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        return spec


class LeaseLock:
    """One Lease, by namespace and name, held under ``identity``."""

    def __init__(
        self,
        api: ClusterAPI,
        *,
        namespace: str,
        name: str,
        identity: str,
        kind: LeaseKind = "leases",
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.kind = kind
        #: The Lease as last read or written (its resourceVersion is the precondition).
        self.lease: Obj | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> tuple[LeaderElectionRecord, Obj]:
        """The current record and its raw spec (compared to detect any change).
        Raises :class:`~ksched.cluster.NotFound`."""
        lease = await self.api.get_lease(namespace=self.namespace, name=self.name, kind=self.kind)
        self.lease = lease
        spec = lease.get("spec") or {}
        return LeaderElectionRecord.from_spec(spec), LeaderElectionRecord.from_spec(spec).to_spec()

    async def create(self, record: LeaderElectionRecord) -> None:
        lease: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        self.lease = await self.api.create_lease(lease=lease, kind=self.kind)

    async def update(self, record: LeaderElectionRecord) -> None:
        """Replace the spec of the Lease last seen; 409 when it changed since."""
        if self.lease is None:
            raise APIError(0, "NotInitialized", "lease not initialized, call get or create first")
        lease = {**self.lease, "spec": record.to_spec()}
        self.lease = await self.api.update_lease(lease=lease, kind=self.kind)
