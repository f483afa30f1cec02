"""The snapshot's storage columns, kept up to date from the shared informers.

The volume kernels read, per node, its CSINode (attach limits, migrated in-tree
plugins, drivers) and its VolumeAttachments, and per claim the CSI volume the claim
counts as (NodeVolumeLimits' ``getCSIDriverInfo`` for the pods already on a node). Those
come from five kinds of objects; :class:`StorageColumns` watches them through the
shared informers and pushes each change into the Rust snapshot
(``Snapshot.set_csi_node``, ``set_node_attachments``, ``set_claim_volume``), touching
only what the change can affect:

* a PVC change recomputes that claim;
* a PV change recomputes the claims whose ``spec.volumeName`` names it and the nodes
  whose VolumeAttachments name it;
* a StorageClass change recomputes the unbound claims of that class;
* a CSINode change sets that node's entry; a VolumeAttachment change recomputes the
  attachments of its node (and of its old node when it moved).

Reverse indexes (PV → claims, class → claims, PV → attachments, node → attachments)
make each of these proportional to what changed. One instance serves every profile of
a scheduler (``Handle.shared``); upstream computes the same values from its listers in
every Filter call, which is what keeps the two equal.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ksched.api.volume import (
    MIGRATED_PLUGINS_ANNOTATION,
    annotations_of,
    claim_class,
    claim_csi_volume,
    claim_key,
)

if TYPE_CHECKING:
    from ksched._core import Snapshot
    from ksched.backend.shared_informers import SharedInformer
    from ksched.cluster import Kind

__all__ = ["KEY", "StorageColumns"]

Obj = dict[str, Any]

#: ``Handle.shared`` key of the one instance per scheduler.
KEY: Final = "ksched/storage-columns"

_ALPHANUMERIC: Final = string.ascii_lowercase + string.digits


def _random_prefix() -> str:
    """upstream ``rand.String(32)``: the prefix of the made-up handles of unbound claims."""
    return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(32))


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _spec(obj: Obj) -> Obj:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _ns_name(obj: Obj) -> str:
    m = _meta(obj)
    return claim_key(str(m.get("namespace") or ""), str(m.get("name") or ""))


def csi_node_fields(csinode: Obj) -> tuple[list[tuple[str, int]], list[str], list[str]]:
    """``(limits, migrated plugins, drivers)`` of a CSINode, as the kernels take them."""
    limits: list[tuple[str, int]] = []
    drivers: list[str] = []
    for d in _spec(csinode).get("drivers") or []:
        if not isinstance(d, dict):
            continue
        name = str(d.get("name") or "")
        drivers.append(name)
        alloc = d.get("allocatable")
        count = alloc.get("count") if isinstance(alloc, dict) else None
        if isinstance(count, int) and not isinstance(count, bool):
            limits.append((name, count))
    ann = str(annotations_of(csinode).get(MIGRATED_PLUGINS_ANNOTATION) or "")
    migrated = ann.split(",") if ann else []
    return limits, migrated, drivers


class StorageColumns:
    """Feeds ``snapshot``'s storage columns from the informers ``informer(kind)`` gives."""

    def __init__(self, snapshot: Snapshot, informer: Callable[[Kind], SharedInformer]) -> None:
        self._snapshot = snapshot
        self.prefix = _random_prefix()
        self.pvcs = informer("persistentvolumeclaims")
        self.pvs = informer("persistentvolumes")
        self.classes = informer("storageclasses")
        self.csinodes = informer("csinodes")
        self.attachments = informer("volumeattachments")
        self._claims_of_pv: dict[str, set[str]] = {}
        self._pv_of_claim: dict[str, str] = {}
        self._claims_of_class: dict[str, set[str]] = {}
        self._class_of_claim: dict[str, str] = {}
        self._vas_of_pv: dict[str, set[str]] = {}
        self._pv_of_va: dict[str, str] = {}
        self._vas_of_node: dict[str, set[str]] = {}
        self._node_of_va: dict[str, str] = {}
        self.pvcs.add_handler(
            on_add=self._claim_changed,
            on_update=lambda old, new: self._claim_changed(new),
            on_delete=self._claim_deleted,
        )
        self.pvs.add_handler(
            on_add=self._pv_changed,
            on_update=lambda old, new: self._pv_changed(new),
            on_delete=self._pv_changed,
        )
        self.classes.add_handler(
            on_add=self._class_changed,
            on_update=lambda old, new: self._class_changed(new),
            on_delete=self._class_changed,
        )
        self.csinodes.add_handler(
            on_add=self._csinode_changed,
            on_update=lambda old, new: self._csinode_changed(new),
            on_delete=self._csinode_deleted,
        )
        self.attachments.add_handler(
            on_add=self._va_changed,
            on_update=lambda old, new: self._va_changed(new),
            on_delete=self._va_deleted,
        )

    # ---- claims ---------------------------------------------------------------------

    def claim_volume(self, pvc: Obj) -> tuple[str, str] | None:
        """The CSI volume ``pvc`` counts as (see :func:`ksched.api.volume.claim_csi_volume`)."""
        return claim_csi_volume(
            pvc,
            lambda name: self.pvs.get("", name),
            lambda name: self.classes.get("", name),
            self.prefix,
        )

    def _index(self, fwd: dict[str, set[str]], back: dict[str, str], key: str, to: str) -> None:
        old = back.get(key)
        if old == to:
            return
        if old is not None:
            members = fwd.get(old)
            if members is not None:
                members.discard(key)
                if not members:
                    del fwd[old]
        if to:
            back[key] = to
            fwd.setdefault(to, set()).add(key)
        else:
            back.pop(key, None)

    def _claim_changed(self, pvc: Obj) -> None:
        key = _ns_name(pvc)
        pv = str(_spec(pvc).get("volumeName") or "")
        self._index(self._claims_of_pv, self._pv_of_claim, key, pv)
        self._index(self._claims_of_class, self._class_of_claim, key, claim_class(pvc))
        self._snapshot.set_claim_volume(key, self.claim_volume(pvc))

    def _claim_deleted(self, pvc: Obj) -> None:
        key = _ns_name(pvc)
        self._index(self._claims_of_pv, self._pv_of_claim, key, "")
        self._index(self._claims_of_class, self._class_of_claim, key, "")
        self._snapshot.set_claim_volume(key, None)

    def _refresh_claims(self, keys: set[str] | None) -> None:
        for key in list(keys or ()):
            ns, _, name = key.partition("/")
            pvc = self.pvcs.get(ns, name)
            if pvc is not None:
                self._snapshot.set_claim_volume(key, self.claim_volume(pvc))

    def _pv_changed(self, pv: Obj) -> None:
        name = _name(pv)
        self._refresh_claims(self._claims_of_pv.get(name))
        for node in {self._node_of_va.get(va, "") for va in self._vas_of_pv.get(name, ())}:
            if node:
                self._refresh_node(node)

    def _class_changed(self, sc: Obj) -> None:
        self._refresh_claims(self._claims_of_class.get(_name(sc)))

    # ---- nodes ----------------------------------------------------------------------

    def _csinode_changed(self, csinode: Obj) -> None:
        limits, migrated, drivers = csi_node_fields(csinode)
        self._snapshot.set_csi_node(_name(csinode), limits, migrated, drivers)

    def _csinode_deleted(self, csinode: Obj) -> None:
        self._snapshot.remove_csi_node(_name(csinode))

    def _va_changed(self, va: Obj) -> None:
        name = _name(va)
        spec = _spec(va)
        source = spec.get("source")
        pv = source.get("persistentVolumeName") if isinstance(source, dict) else None
        node = str(spec.get("nodeName") or "")
        old_node = self._node_of_va.get(name)
        self._index(self._vas_of_pv, self._pv_of_va, name, pv if isinstance(pv, str) else "")
        self._index(self._vas_of_node, self._node_of_va, name, node)
        for n in {node, old_node or ""}:
            if n:
                self._refresh_node(n)

    def _va_deleted(self, va: Obj) -> None:
        name = _name(va)
        node = self._node_of_va.get(name)
        self._index(self._vas_of_pv, self._pv_of_va, name, "")
        self._index(self._vas_of_node, self._node_of_va, name, "")
        if node:
            self._refresh_node(node)

    def node_attachments(self, node: str) -> list[tuple[str, str]]:
        """``(attacher, volume handle)`` of the VolumeAttachments to ``node`` that
        NodeVolumeLimits counts (upstream ``getNodeVolumeAttachmentInfo``): an attacher,
        a PV name, and that PV with a CSI source."""
        out: list[tuple[str, str]] = []
        for va_name in sorted(self._vas_of_node.get(node, ())):
            va = self.attachments.get("", va_name)
            if va is None:
                continue
            spec = _spec(va)
            attacher = str(spec.get("attacher") or "")
            pv_name = self._pv_of_va.get(va_name)
            if not attacher or not pv_name:
                continue
            pv = self.pvs.get("", pv_name)
            csi = _spec(pv).get("csi") if pv is not None else None
            if not isinstance(csi, dict):
                continue
            out.append((attacher, str(csi.get("volumeHandle") or "")))
        return out

    def _refresh_node(self, node: str) -> None:
        self._snapshot.set_node_attachments(node, self.node_attachments(node))
