"""The scheduler-wide DRA state (upstream ``DefaultDRAManager``): one per scheduler,
shared by every profile's DynamicResources and by NodeResourcesFit.

Upstream builds the DRA manager once, when the DynamicResourceAllocation gate is on,
whatever the profiles enable: its claim tracker (assume cache, in-flight allocations,
allocated devices), its ResourceSlice and DeviceClass listers and, with
DRAExtendedResource, the extended resource cache. ksched does the same through
``Handle.shared``: the first plugin that asks (:func:`dra_manager`, in its ``setup``)
creates the manager and subscribes it to the claims, slices and classes informers;
every later one gets the same object. So two profiles never allocate one device, and
NodeResourcesFit leaves extended resources to DRA even in a profile without
DynamicResources, as upstream's does.

What it keeps:

* :attr:`DRAManager.devices`: the Rust device store (:class:`ksched._core.DraDevices`,
  every slice and class decoded once, and the devices allocated to claims);
* :attr:`DRAManager.tracker`: the claims (:class:`.assume_cache.ClaimTracker`);
* :attr:`DRAManager.classes`: extended resource name → DeviceClass
  (:class:`.extended.ExtendedResourceCache`), whose names are pushed to the snapshot
  (``Snapshot.set_dra_extended_resources``) for NodeResourcesFit's Filter.

Objects that cannot be decoded are logged and left out, naming the object and field.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import orjson

from ksched import _core
from ksched.plugins.dynamic_resources.assume_cache import ClaimTracker
from ksched.plugins.dynamic_resources.claims import meta
from ksched.plugins.dynamic_resources.extended import ExtendedResourceCache

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

__all__ = ["MANAGER_KEY", "DRAManager", "dra_manager"]

log = logging.getLogger(__name__)

#: The ``Handle.shared`` key of the scheduler's DRA manager.
MANAGER_KEY: Final = "DRAManager"

Obj = dict[str, Any]


class DRAManager:
    """Claims, slices, classes and the extended resource cache of one scheduler."""

    def __init__(self, *, extended_resources: bool = True) -> None:
        self.devices = _core.DraDevices()
        self.tracker = ClaimTracker(self._allocation_changed)
        #: DRAExtendedResource: None when the gate is off (upstream's nil cache, whose
        #: GetDeviceClass always answers nil).
        self.classes: ExtendedResourceCache | None = (
            ExtendedResourceCache() if extended_resources else None
        )
        self._snapshot: Any = None
        self._attached = False

    def attach(self, handle: Handle) -> None:
        """Subscribe to the informers (once) and keep the snapshot's extended resource
        names up to date."""
        if self._attached:
            return
        self._attached = True
        self._snapshot = handle.snapshot
        handle.informer("resourceclaims").add_handler(
            on_add=self.tracker.on_add,
            on_update=self.tracker.on_update,
            on_delete=self.tracker.on_delete,
        )
        handle.informer("resourceslices").add_handler(
            on_add=self._slice_added,
            on_update=lambda old, new: self._slice_added(new),
            on_delete=self._slice_deleted,
        )
        handle.informer("deviceclasses").add_handler(
            on_add=self._class_added,
            on_update=self._class_updated,
            on_delete=self._class_deleted,
        )

    # ---- the device store -----------------------------------------------------------

    def _allocation_changed(self, key: str, alloc: Obj | None) -> None:
        try:
            self.devices.set_claim_allocation(key, None if alloc is None else orjson.dumps(alloc))
        except ValueError as exc:
            log.warning("ignoring the allocation of a ResourceClaim: %s", exc)
            self.devices.set_claim_allocation(key, None)

    def _slice_added(self, obj: Obj) -> None:
        name = str(meta(obj).get("name") or "")
        try:
            self.devices.upsert_slice(name, orjson.dumps(obj))
        except ValueError as exc:
            log.warning("ignoring ResourceSlice: %s", exc)

    def _slice_deleted(self, obj: Obj) -> None:
        self.devices.remove_slice(str(meta(obj).get("name") or ""))

    def _store_class(self, obj: Obj) -> None:
        name = str(meta(obj).get("name") or "")
        try:
            self.devices.upsert_class(name, orjson.dumps(obj))
        except ValueError as exc:
            log.warning("ignoring DeviceClass: %s", exc)

    def _class_added(self, obj: Obj) -> None:
        self._store_class(obj)
        if self.classes is not None:
            self.classes.on_add(obj)
            self._publish()

    def _class_updated(self, old: Obj, new: Obj) -> None:
        self._store_class(new)
        if self.classes is not None:
            self.classes.on_update(old, new)
            self._publish()

    def _class_deleted(self, obj: Obj) -> None:
        self.devices.remove_class(str(meta(obj).get("name") or ""))
        if self.classes is not None:
            self.classes.on_delete(obj)
            self._publish()

    def _publish(self) -> None:
        if self._snapshot is not None and self.classes is not None:
            self._snapshot.set_dra_extended_resources(self.classes.names())

    # ---- reads ----------------------------------------------------------------------

    def device_class_for(self, resource: str) -> Obj | None:
        """``DeviceClassResolver().GetDeviceClass``."""
        return None if self.classes is None else self.classes.get_device_class(resource)


def dra_manager(handle: Handle) -> DRAManager:
    """The scheduler's DRA manager, created and attached on the first call."""
    gates = getattr(handle, "feature_gates", None)
    enabled = bool(getattr(gates, "dra_extended_resource", True))
    shared = getattr(handle, "shared", None)
    if shared is None:  # a test's minimal handle: a manager of its own
        return DRAManager(extended_resources=enabled)
    manager: DRAManager = shared(MANAGER_KEY, lambda: DRAManager(extended_resources=enabled))
    manager.attach(handle)
    return manager
