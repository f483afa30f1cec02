"""Lease-fenced writes: a replica whose Lease renewal is too old writes nothing.

Leader election alone leaves a window: a leader that is paused (a long GC pause, a
frozen VM, a stalled disk) and then resumed keeps acting on a cache that is seconds
old, while another replica already holds the Lease. kube-scheduler has that window;
ksched closes it with one gate that every write carrying a scheduling decision passes
through: bindings, victim deletions, nomination and condition patches, PV/PVC and
claim updates (``update_object``/``patch_object``) and the decision events.

**The rule.** :class:`FencingGate` lets a write through only while this replica's
last successful renewal is younger than ``leaseDuration - margin``, measured on the
monotonic clock from the moment that renew request was *sent*
(:attr:`~ksched.leaderelection.elector.LeaderElector.renewed_at`; a renewal whose
answer arrives after a pause counts from before the pause). The margin is
``leaseDuration - renewDeadline``, so the gate closes exactly when the renew loop
gives up (:meth:`~ksched.leaderelection.elector.LeaderElector.renew`). Why that is
safe: another candidate takes the Lease only once it has seen the record unchanged
for a whole ``leaseDuration`` on its own clock, and it can only have seen our last
renewal after we sent it; so every write the gate lets through leaves at least the
margin (5 s with the defaults) for the request to reach the apiserver and commit
before anyone else may lead.

**Where it is checked.** Twice, by the same gate: when the scheduler asks for the
write (:class:`FencedClusterAPI`, the only :class:`~ksched.cluster.ClusterAPI` the
scheduler and its plugins hold, so a plugin's ``handle.api.update_object`` is fenced
without knowing it), and again by the real client right before the bytes go to the
socket (``KubeClusterAPI.set_write_guard``, :mod:`ksched.client.rest`): a write that
waited behind a backlog of bindings, the client's rate limiter or a connection is
checked when it is finally sent, not when it was queued. Reads, watches and the
Lease's own calls pass through untouched.

**A refused write** raises :class:`~ksched.cluster.Fenced` (an ``APIError``: callers
treat it as a failed write, so the pod goes back to the queue and a victim is kept),
is counted in ``ksched_fenced_writes_total{verb,resource}`` and logged. The first
refusal trips the gate for good and calls ``on_lapse``: ``ksched run`` then stops
taking pods at once, forgets its assumed pods and exits 1, as kube-scheduler exits
when it loses its Lease (the restarted process starts as a fresh standby; see
:mod:`ksched.run` for why ksched does not re-acquire in place).

**What is left.** A write whose bytes were handed to the kernel before the process
froze is delivered by the kernel while the process is stopped: the apiserver receives
it on time. The only write that can land late is one whose last check passed and
whose bytes were not yet handed over when the freeze began: a few microseconds of
Python between aiohttp's chunk signal and ``transport.write`` (the README has the
measured figures). Closing that needs the apiserver to check a fencing token, which
Kubernetes does not offer.

``ksched_lease_renewal_age_seconds`` exports how old the last renewal is.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ksched.cluster import (
    ClusterAPI,
    Fenced,
    Kind,
    LeaseKind,
    ListResult,
    PatchType,
    WatchEvent,
)

__all__ = [
    "FENCED_WRITES",
    "LEASE_RENEWAL_AGE",
    "FencedClusterAPI",
    "FencingGate",
    "FencingMetrics",
    "describe_request",
]

log = logging.getLogger(__name__)

FENCED_WRITES = "ksched_fenced_writes_total"
LEASE_RENEWAL_AGE = "ksched_lease_renewal_age_seconds"

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def describe_request(method: str, path: str) -> tuple[str, str, str]:
    """``(verb, resource, object)`` of an API request path, as the audit log names
    them: ``POST /api/v1/namespaces/d/pods/p/binding`` is ``("create",
    "pods/binding", "d/p")``."""
    verb = _VERBS.get(method.upper(), method.lower())
    parts = [p for p in path.split("/") if p]
    # Drop the group/version prefix: /api/v1 or /apis/<group>/<version>.
    if parts[:1] == ["api"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"]:
        parts = parts[3:]
    namespace = ""
    if len(parts) >= 2 and parts[0] == "namespaces":
        namespace, parts = parts[1], parts[2:]
    if not parts:
        return verb, "namespaces" if namespace else "", namespace
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    if len(parts) > 2:
        resource = f"{resource}/{parts[2]}"
    target = f"{namespace}/{name}" if namespace and name else name or namespace
    return verb, resource, target


class FencingGate:
    """Whether this replica may write now, by the age of its last Lease renewal.

    ``renewed_at`` returns the monotonic time the last successful renewal was sent
    (None: never renewed); ``limit`` is ``leaseDuration - margin`` in seconds.
    ``on_lapse(reason)`` is called once, at the first refusal.
    """

    def __init__(
        self,
        *,
        renewed_at: Callable[[], float | None],
        limit: float,
        lease: str = "",
        clock: Callable[[], float] = time.monotonic,
        on_lapse: Callable[[str], None] | None = None,
    ) -> None:
        if limit <= 0:
            raise ValueError(f"the fencing limit must be positive, not {limit}")
        self._renewed_at = renewed_at
        self.limit = limit
        self.lease = lease
        self._clock = clock
        self.on_lapse = on_lapse
        #: The reason of the first refusal; the gate stays closed once set.
        self.lapsed: str | None = None
        #: Refused writes by ``(verb, resource)``.
        self.refused: Counter[tuple[str, str]] = Counter()

    def age(self) -> float | None:
        """Seconds since the last successful renewal was sent; None when never."""
        renewed = self._renewed_at()
        return None if renewed is None else self._clock() - renewed

    def is_open(self) -> bool:
        if self.lapsed is not None:
            return False
        age = self.age()
        return age is not None and age < self.limit

    def admit(self, verb: str, resource: str, target: str) -> None:
        """Return when the write may be sent; else count it, trip the gate and raise
        :class:`~ksched.cluster.Fenced`."""
        if self.lapsed is None:
            renewed = self._renewed_at()
            if renewed is not None and self._clock() - renewed < self.limit:
                return
        self._refuse(verb, resource, target)

    def admit_request(self, method: str, path: str) -> None:
        """:meth:`admit` for an HTTP request about to be sent (the client's guard)."""
        if self.is_open():
            return
        self._refuse(*describe_request(method, path))

    def _refuse(self, verb: str, resource: str, target: str) -> None:
        self.refused[verb, resource] += 1
        age = self.age()
        what = f"{verb} {resource} {target}".rstrip()
        if age is None and self.lapsed is None:
            # Not holding the Lease (a standby, or after releasing it): refused, but
            # nothing lapsed.
            log.warning("fenced: refusing %s: lease %s is not held", what, self.lease)
            raise Fenced(f"{what}: not sent, lease {self.lease} is not held by this replica")
        if self.lapsed is None:
            assert age is not None
            why = f"its last renewal was sent {age:.1f}s ago (limit {self.limit:g}s)"
            self.lapsed = f"lease {self.lease} lapsed: {why}"
            log.error("%s; refusing %s and every write after it", self.lapsed, what)
            if self.on_lapse is not None:
                self.on_lapse(self.lapsed)
        else:
            log.warning("fenced: refusing %s (lease %s lapsed)", what, self.lease)
        raise Fenced(f"{what}: not sent, {self.lapsed}")


class FencedClusterAPI:
    """A :class:`~ksched.cluster.ClusterAPI` whose writes pass :class:`FencingGate`;
    reads, watches and leases go straight to ``inner``."""

    def __init__(self, inner: ClusterAPI, gate: FencingGate) -> None:
        self.inner = inner
        self.gate = gate
        patch_event = getattr(inner, "patch_event", None)
        if patch_event is not None:
            # The event recorder sends series updates only to an API that has them.
            async def fenced_patch_event(*, namespace: str, name: str, patch: Any) -> Any:
                gate.admit("patch", "events", f"{namespace}/{name}")
                return await patch_event(namespace=namespace, name=name, patch=patch)

            self.patch_event = fenced_patch_event

    # ---- reads ----------------------------------------------------------------------

    async def list(self, *, kind: Kind) -> ListResult:
        return await self.inner.list(kind=kind)

    def watch(self, *, kind: Kind, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self.inner.watch(kind=kind, resource_version=resource_version)

    async def get_object(self, *, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        return await self.inner.get_object(kind=kind, namespace=namespace, name=name)

    # ---- fenced writes -------------------------------------------------------------

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.gate.admit("create", "pods/binding", f"{namespace}/{name}")
        await self.inner.bind(namespace=namespace, name=name, uid=uid, node_name=node_name)

    async def create_event(self, *, event: dict[str, Any]) -> None:
        meta = event.get("metadata") or {}
        self.gate.admit("create", "events", f"{meta.get('namespace')}/{meta.get('name')}")
        await self.inner.create_event(event=event)

    async def patch_pod_status(self, *, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.gate.admit("patch", "pods/status", f"{namespace}/{name}")
        await self.inner.patch_pod_status(namespace=namespace, name=name, patch=patch)

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        self.gate.admit("delete", "pods", f"{namespace}/{name}")
        await self.inner.delete_pod(namespace=namespace, name=name, uid=uid)

    async def create_object(self, *, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        name = meta.get("name") or meta.get("generateName")
        target = "/".join(str(p) for p in (meta.get("namespace"), name) if p)
        self.gate.admit("create", kind, target)
        return await self.inner.create_object(kind=kind, obj=obj)

    async def delete_object(self, *, kind: Kind, namespace: str, name: str) -> None:
        self.gate.admit("delete", kind, f"{namespace}/{name}" if namespace else name)
        await self.inner.delete_object(kind=kind, namespace=namespace, name=name)

    async def update_object(
        self, *, kind: Kind, obj: dict[str, Any], subresource: str = ""
    ) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        target = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
        self.gate.admit("update", f"{kind}/{subresource}" if subresource else kind, target)
        return await self.inner.update_object(kind=kind, obj=obj, subresource=subresource)

    async def patch_object(
        self,
        *,
        kind: Kind,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> dict[str, Any]:
        target = f"{namespace}/{name}" if namespace else name
        self.gate.admit("patch", f"{kind}/{subresource}" if subresource else kind, target)
        return await self.inner.patch_object(
            kind=kind,
            namespace=namespace,
            name=name,
            patch=patch,
            patch_type=patch_type,
            subresource=subresource,
        )

    # ---- leader election: never fenced (the renewals are what opens the gate) ---------

    async def get_lease(
        self, *, namespace: str, name: str, kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        return await self.inner.get_lease(namespace=namespace, name=name, kind=kind)

    async def create_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        return await self.inner.create_lease(lease=lease, kind=kind)

    async def update_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        return await self.inner.update_lease(lease=lease, kind=kind)


class FencingMetrics(Collector):
    """``ksched_fenced_writes_total{verb,resource}`` and
    ``ksched_lease_renewal_age_seconds``, read from the gate at scrape time."""

    def __init__(self, gate: FencingGate) -> None:
        self._gate = gate

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        refused = CounterMetricFamily(
            FENCED_WRITES,
            "Writes not sent because this replica's last Lease renewal was older than "
            "leaseDuration minus the fencing margin, by verb and resource.",
            labels=["verb", "resource"],
        )
        for (verb, resource), count in sorted(self._gate.refused.items()):
            refused.add_metric([verb, resource], count)
        yield refused
        age = GaugeMetricFamily(
            LEASE_RENEWAL_AGE,
            "Seconds since this replica sent its last successful Lease renewal (absent "
            "before the first one).",
        )
        seconds = self._gate.age()
        if seconds is not None:
            age.add_metric([], seconds)
        yield age
