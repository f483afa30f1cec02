"""The ResourceClaim assume cache and the allocations in flight (upstream ``claimTracker``
over an ``assumecache.AssumeCache``, ``allocatedDevices``).

Three things a scheduling cycle must see that the claims informer alone does not show:

* **assumed claims**: after PreBind wrote a claim's allocation, the updated object
  returned by the API is *assumed* until the informer reports it (or a newer version);
  an informer event with an older or equal resourceVersion does not replace it, as
  upstream's cache keeps the newer of the two. Unreserve *restores* the informer's
  version.
* **in-flight allocations**: between Reserve and the end of PreBind, a claim's
  allocation exists only here (``signal_pending``), with a count of the pods sharing
  it, so that a second pod's PreFilter refuses the claim ("is in the process of being
  allocated") and its allocator treats the devices as taken; two pods never get one
  device.
* **allocated devices**: the devices of every allocated claim (assumed or not),
  maintained incrementally from the cache's changes (upstream ``allocatedDevices``):
  each change of a claim's allocation is handed to ``on_allocation(key, allocation)``,
  which the plugin forwards to the Rust device store (:class:`ksched._core.DraDevices`)
  where the allocators read them; with DRAConsumableCapacity (on in v1.36) devices
  allocated with a share ID and their consumed capacity are kept apart there, as
  upstream's ``GatherAllocatedState`` returns them.

ResourceClaim cluster events come from the claims informer (the scheduler's queue
handler runs after this cache's handlers, so hints see the cache up to date); upstream
also emits events for assume and restore, which here are followed by the informer's
own event for the same write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ksched.plugins.dynamic_resources.claims import allocation, key_of

Obj = dict[str, Any]
_EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DeviceKey = tuple[str, str, str]

__all__ = ["ClaimTracker", "NotInCache"]


class NotInCache(ValueError):
    """The claim is not in the cache (yet): upstream ``assumecache.ErrNotFound``."""


#: ``on_allocation(namespace/name, status.allocation or None)``.
AllocationHandler = Callable[[str, Obj | None], None]


def _version(obj: Obj) -> int:
    rv = (obj.get("metadata") or {}).get("resourceVersion") or "0"
    try:
        return int(rv)
    except ValueError:
        return 0


class ClaimTracker:
    """Claims by ``namespace/name``: the latest (possibly assumed) version, the
    informer's version, the allocations in flight and the allocated devices."""

    def __init__(self, on_allocation: AllocationHandler | None = None) -> None:
        self._latest: dict[str, Obj] = {}
        #: Keys of the claims annotated as a pod's extended resource claim.
        self._extended: set[str] = set()
        self._api: dict[str, Obj] = {}
        self._in_flight: dict[str, list[Any]] = {}  # uid -> [claim, sharers]
        self.on_allocation = on_allocation

    # ---- informer side --------------------------------------------------------------

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        before = None if old is None else allocation(old)
        after = None if new is None else allocation(new)
        if before is not after and before != after and self.on_allocation is not None:
            self.on_allocation(key_of(new if new is not None else old or {}), after)

    def on_add(self, obj: Obj) -> None:
        key = key_of(obj)
        old = self._latest.get(key)
        if old is not None and _version(obj) <= _version(old):
            return  # not newer than what we hold (maybe an assumed version)
        self._set(key, obj)
        self._api[key] = obj
        self._changed(old, obj)

    def _set(self, key: str, obj: Obj) -> None:
        self._latest[key] = obj
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if annotations.get(_EXTENDED_ANNOTATION) == "true":
            self._extended.add(key)
        else:
            self._extended.discard(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.on_add(new)

    def on_delete(self, obj: Obj) -> None:
        key = key_of(obj)
        old = self._latest.pop(key, None)
        self._extended.discard(key)
        self._api.pop(key, None)
        self._changed(old, None)

    # ---- reads ----------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Obj | None:
        return self._latest.get(f"{namespace}/{name}")

    def get_api(self, namespace: str, name: str) -> Obj | None:
        return self._api.get(f"{namespace}/{name}")

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._latest.values()))

    def __len__(self) -> int:
        return len(self._latest)

    def extended_claims(self) -> list[Obj]:
        """The claims annotated ``resource.kubernetes.io/extended-resource-claim:
        "true"`` (latest versions)."""
        return [self._latest[k] for k in self._extended if k in self._latest]

    # ---- assume / restore ------------------------------------------------------------

    def assume(self, obj: Obj) -> None:
        """Keep ``obj`` (returned by an API write) until the informer catches up;
        ValueError when it is older than the cached version."""
        key = key_of(obj)
        old = self._latest.get(key)
        if old is None:
            raise NotInCache(f'could not find ResourceClaim "{key}"')
        if _version(obj) < _version(old):
            raise ValueError(
                f'ResourceClaim "{key}" is out of sync (stored: {_version(old)}, '
                f"assume: {_version(obj)})"
            )
        self._set(key, obj)
        self._changed(old, obj)

    def restore(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        latest, api = self._latest.get(key), self._api.get(key)
        if latest is not None and api is not None and latest is not api:
            self._set(key, api)
            self._changed(latest, api)

    # ---- allocations in flight ----------------------------------------------------------

    def pending_allocation(self, uid: str) -> Obj | None:
        entry = self._in_flight.get(uid)
        return None if entry is None else allocation(entry[0])

    def signal_pending(self, uid: str, claim: Obj) -> None:
        entry = self._in_flight.get(uid)
        if entry is not None:
            entry[1] += 1
        else:
            self._in_flight[uid] = [claim, 1]

    def maybe_remove_pending(self, uid: str, force: bool = False) -> bool:
        """Drop one sharer of the in-flight allocation; True when it was the last (or
        ``force``) and the allocation is no longer in flight."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return False
        if force or entry[1] == 1:
            del self._in_flight[uid]
            return True
        entry[1] -= 1
        return False

    @property
    def num_in_flight(self) -> int:
        return len(self._in_flight)

    def in_flight(self) -> list[tuple[str, Obj]]:
        """``(namespace/name, allocation)`` of every allocation in flight."""
        out: list[tuple[str, Obj]] = []
        for claim, _ in self._in_flight.values():
            alloc = allocation(claim)
            if alloc is not None:
                out.append((key_of(claim), alloc))
        return out
