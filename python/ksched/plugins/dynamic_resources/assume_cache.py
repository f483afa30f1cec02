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
  maintained incrementally from the cache's changes; with DRAConsumableCapacity (on in
  v1.36) devices allocated with a share ID and their consumed capacity are kept apart,
  as upstream's ``GatherAllocatedState`` returns them.

ResourceClaim cluster events come from the claims informer (the scheduler's queue
handler runs after this cache's handlers, so hints see the cache up to date); upstream
also emits events for assume and restore, which here are followed by the informer's
own event for the same write.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ksched.plugins.dynamic_resources.claims import allocation, key_of

Obj = dict[str, Any]
DeviceKey = tuple[str, str, str]

__all__ = ["AllocatedState", "ClaimTracker"]


class AllocatedState:
    """Devices that are taken: dedicated ones, shared ones (with their share ID) and
    the capacity consumed by shared ones (``{device: {name: [quantity, ...]}}``)."""

    __slots__ = ("capacity", "devices", "shared")

    def __init__(self) -> None:
        self.devices: set[DeviceKey] = set()
        self.shared: set[tuple[str, str, str, str]] = set()
        self.capacity: dict[DeviceKey, dict[str, list[str]]] = {}

    def copy(self) -> AllocatedState:
        out = AllocatedState()
        out.devices = set(self.devices)
        out.shared = set(self.shared)
        out.capacity = {k: {n: list(v) for n, v in m.items()} for k, m in self.capacity.items()}
        return out

    def add_claim(self, claim: Obj, sign: int = 1) -> None:
        """Account (``sign`` 1) or release (-1) the devices of an allocated claim
        (upstream ``foreachAllocatedDevice``: admin-access results take nothing)."""
        alloc = allocation(claim)
        if alloc is None:
            return
        for r in (alloc.get("devices") or {}).get("results") or []:
            if not isinstance(r, dict) or r.get("adminAccess"):
                continue
            dev = (str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            share = r.get("shareID")
            if share is not None:
                entry = (*dev, str(share))
                if sign > 0:
                    self.shared.add(entry)
                else:
                    self.shared.discard(entry)
                consumed = r.get("consumedCapacity")
                if isinstance(consumed, dict):
                    caps = self.capacity.setdefault(dev, {})
                    for name, q in consumed.items():
                        values = caps.setdefault(str(name), [])
                        if sign > 0:
                            values.append(str(q))
                        elif str(q) in values:
                            values.remove(str(q))
                    if all(not v for v in caps.values()):
                        del self.capacity[dev]
                continue
            if sign > 0:
                self.devices.add(dev)
            else:
                self.devices.discard(dev)

    def shared_list(self) -> list[tuple[str, str, str, str]]:
        return sorted(self.shared)

    def capacity_list(self) -> list[tuple[str, str, str, dict[str, str]]]:
        """One entry per consumed amount (the Rust side sums them)."""
        out: list[tuple[str, str, str, dict[str, str]]] = []
        for dev, caps in self.capacity.items():
            for name, values in caps.items():
                out.extend((*dev, {name: v}) for v in values)
        return out


def _version(obj: Obj) -> int:
    rv = (obj.get("metadata") or {}).get("resourceVersion") or "0"
    try:
        return int(rv)
    except ValueError:
        return 0


class ClaimTracker:
    """Claims by ``namespace/name``: the latest (possibly assumed) version, the
    informer's version, the allocations in flight and the allocated devices."""

    def __init__(self) -> None:
        self._latest: dict[str, Obj] = {}
        self._api: dict[str, Obj] = {}
        self._in_flight: dict[str, list[Any]] = {}  # uid -> [claim, sharers]
        self._allocated = AllocatedState()

    # ---- informer side --------------------------------------------------------------

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        # upstream allocatedDevices: only transitions between allocated and not count.
        if old is None and new is not None:
            self._allocated.add_claim(new)
        elif old is not None and new is None:
            self._allocated.add_claim(old, -1)
        elif old is not None and new is not None:
            if allocation(old) is None and allocation(new) is not None:
                self._allocated.add_claim(new)
            elif allocation(old) is not None and allocation(new) is None:
                self._allocated.add_claim(old, -1)

    def on_add(self, obj: Obj) -> None:
        key = key_of(obj)
        old = self._latest.get(key)
        if old is not None and _version(obj) <= _version(old):
            return  # not newer than what we hold (maybe an assumed version)
        self._latest[key] = obj
        self._api[key] = obj
        self._changed(old, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.on_add(new)

    def on_delete(self, obj: Obj) -> None:
        key = key_of(obj)
        old = self._latest.pop(key, None)
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

    # ---- assume / restore ------------------------------------------------------------

    def assume(self, obj: Obj) -> None:
        """Keep ``obj`` (returned by an API write) until the informer catches up;
        ValueError when it is older than the cached version."""
        key = key_of(obj)
        old = self._latest.get(key)
        if old is None:
            raise ValueError(f'could not find ResourceClaim "{key}"')
        if _version(obj) < _version(old):
            raise ValueError(
                f'ResourceClaim "{key}" is out of sync (stored: {_version(old)}, '
                f"assume: {_version(obj)})"
            )
        self._latest[key] = obj
        self._changed(old, obj)

    def restore(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        latest, api = self._latest.get(key), self._api.get(key)
        if latest is not None and api is not None and latest is not api:
            self._latest[key] = api
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

    def allocated_state(self) -> AllocatedState:
        """Upstream ``GatherAllocatedState``: the allocated devices plus those of the
        allocations in flight."""
        state = self._allocated.copy()
        for claim, _ in self._in_flight.values():
            state.add_claim(claim)
        return state
