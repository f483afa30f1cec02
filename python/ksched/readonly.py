"""A :class:`~ksched.cluster.ClusterAPI` that can only read: shadow mode, ``ksched
explain`` and ``ksched record`` run the scheduler's code on it.

It forwards the reads (``list``, ``watch``, ``get_object``, ``get_lease``) to the real
client and refuses every write — bind, event, status patch, deletion, object update or
patch, lease create or update — with a 403 :class:`~ksched.cluster.APIError` naming the
call, counting it in :attr:`ReadOnlyClusterAPI.refused`. It refuses rather than
skips: a write reaching it is a bug of the caller, and the caller's own error handling
(a failed binding, a failed patch) then runs as it would for a forbidden request.

Anything else the wrapped client offers is not forwarded either, except the few
attributes that carry no request (``config``, ``close``): a method added to the
clients later is a write until it is listed here as a read. Fencing (which gates the
writes of a leader) has nothing to gate here: nothing gets through.

The delegated authentication of the HTTPS endpoints (TokenReview,
SubjectAccessReview) is not a ClusterAPI call and is unaffected: shadow mode still
answers ``/metrics``; those reviews store nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any, NoReturn

from ksched.cluster import APIError, ClusterAPI, Kind, LeaseKind, ListResult, PatchType, WatchEvent

__all__ = ["READS", "ReadOnlyClusterAPI", "WriteRefused"]

log = logging.getLogger(__name__)

#: The ClusterAPI calls forwarded.
READS = frozenset({"list", "watch", "get_object", "get_lease"})
#: Attributes of the wrapped client passed through (no request).
_PASSTHROUGH = frozenset({"config", "close"})


class WriteRefused(APIError):
    """A write reached the read-only API."""

    def __init__(self, what: str, mode: str) -> None:
        super().__init__(403, "Forbidden", f"{mode} is read-only: refused {what}")
        self.what = what


class ReadOnlyClusterAPI:
    """Reads pass to ``inner``; every write raises :class:`WriteRefused`."""

    def __init__(self, inner: ClusterAPI, *, mode: str = "ksched") -> None:
        self._inner = inner
        self._mode = mode
        #: Refused writes by call (``bind``, ``create_event``...).
        self.refused: Counter[str] = Counter()

    @property
    def inner(self) -> ClusterAPI:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        if name in _PASSTHROUGH:
            return getattr(self._inner, name)
        raise AttributeError(f"{self._mode} is read-only: {name} is not available")

    def _refuse(self, what: str) -> NoReturn:
        self.refused[what.split(" ", 1)[0]] += 1
        if self.refused[what.split(" ", 1)[0]] == 1:
            log.error("%s is read-only: refused %s (a write reached it)", self._mode, what)
        raise WriteRefused(what, self._mode)

    # ---- reads -------------------------------------------------------------------

    async def list(self, *, kind: Kind) -> ListResult:
        return await self._inner.list(kind=kind)

    def watch(self, *, kind: Kind, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self._inner.watch(kind=kind, resource_version=resource_version)

    async def get_object(self, *, kind: Kind, namespace: str, name: str) -> dict[str, Any]:
        return await self._inner.get_object(kind=kind, namespace=namespace, name=name)

    async def get_lease(
        self, *, namespace: str, name: str, kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        return await self._inner.get_lease(namespace=namespace, name=name, kind=kind)

    # ---- writes: refused ---------------------------------------------------------

    async def bind(self, *, namespace: str, name: str, uid: str, node_name: str) -> None:
        self._refuse(f"bind {namespace}/{name} to {node_name}")

    async def create_event(self, *, event: dict[str, Any]) -> None:
        self._refuse(f"create_event {event.get('reason', '')}")

    async def patch_pod_status(self, *, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._refuse(f"patch_pod_status {namespace}/{name}")

    async def delete_pod(self, *, namespace: str, name: str, uid: str) -> None:
        self._refuse(f"delete_pod {namespace}/{name}")

    async def update_object(
        self, *, kind: Kind, obj: dict[str, Any], subresource: str = ""
    ) -> dict[str, Any]:
        self._refuse(f"update_object {kind}")

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
        self._refuse(f"patch_object {kind} {namespace}/{name}")

    async def create_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        self._refuse(f"create_lease {kind}")

    async def update_lease(
        self, *, lease: dict[str, Any], kind: LeaseKind = "leases"
    ) -> dict[str, Any]:
        self._refuse(f"update_lease {kind}")
