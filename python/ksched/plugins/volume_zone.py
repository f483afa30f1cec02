"""VolumeZone: the zone/region labels of the pod's bound PVs must match the node's.

PreFilter (here, upstream ``getPVbyPod``): for each PVC volume, the claim, then its PV
(a claim not bound yet is skipped when its class is WaitForFirstConsumer, and rejects
the pod otherwise), and the PV's topology labels: the beta and GA zone and region keys,
each a ``__``-separated set of values (a label that does not parse is ignored). Every
failed lookup is UnschedulableAndUnresolvable with upstream's message. No label: the
plugin is skipped. Filter in ``rust/plugins/volume_zone.rs``.

Events as upstream with queueing hints on: a new WaitForFirstConsumer class, a new node
or a node's labels, a claim of the pod created or updated, a new PV or a PV whose
topology labels changed.
"""

from __future__ import annotations

from typing import Any, Final

from ksched._core import VolumeZoneRequest
from ksched.api.pod import Pod
from ksched.api.volume import claim_class, has_volumes, not_found, pod_volumes, pvc_claim
from ksched.backend.queue.cluster_event import (
    NODE,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.backend.shared_informers import SharedInformer
from ksched.framework.builtin_events import QUEUE, SKIP
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle

__all__ = ["ERR_REASON_CONFLICT", "NAME", "TOPOLOGY_LABELS", "VolumeZone", "events_to_register"]

NAME: Final = "VolumeZone"
ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"

#: ``topologyLabels``, in upstream's order.
TOPOLOGY_LABELS: Final = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_DELIMITER: Final = "__"

Topologies = list[tuple[str, list[str]]]


def pv_topologies(pv: dict[str, Any]) -> Topologies:
    """``getPVTopologies``: ``(label key, sorted values)`` of the PV's topology labels."""
    labels = (pv.get("metadata") or {}).get("labels") or {}
    out: Topologies = []
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = [z.strip() for z in str(value).split(_DELIMITER)]
        if any(z == "" for z in zones):
            continue  # LabelZonesToSet fails: upstream logs and ignores the label
        out.append((key, sorted(set(zones))))
    return out


def _claims(pod: Pod) -> list[str]:
    return [c for c in (pvc_claim(v) for v in pod_volumes(pod)) if c is not None]


def _after_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Only a WaitForFirstConsumer class can help (its unbound claims are skipped)."""
    return QUEUE if (new or {}).get("volumeBindingMode") == "WaitForFirstConsumer" else SKIP


def _after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    meta = (new or {}).get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return SKIP
    return QUEUE if meta.get("name") in _claims(pod) else SKIP


def _after_pv_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QUEUE
    return QUEUE if pv_topologies(old) != pv_topologies(new or {}) else SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.ADD), _after_class_added),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(
            ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
            _after_claim_change,
        ),
        ClusterEventWithHint(
            ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE), _after_pv_change
        ),
    ]


class VolumeZone:
    """The Python half of VolumeZone (its PreFilter lookups and events)."""

    name = NAME

    def __init__(self) -> None:
        self._claims: SharedInformer | None = None
        self._pvs: SharedInformer | None = None
        self._classes: SharedInformer | None = None

    def setup(self, handle: Handle) -> None:
        self._claims = handle.informer("persistentvolumeclaims")
        self._pvs = handle.informer("persistentvolumes")
        self._classes = handle.informer("storageclasses")

    def applies_to(self, pod: Pod) -> bool:
        if not has_volumes(pod):
            return False
        return any(pvc_claim(v) is not None for v in pod_volumes(pod))

    def kernel_pre_filter(self, state: CycleState, pod: Pod) -> VolumeZoneRequest | None:
        assert self._claims is not None and self._pvs is not None and self._classes is not None
        topologies: Topologies = []
        for claim in _claims(pod):
            if claim == "":
                return VolumeZoneRequest(reject=(UNRESOLVABLE, "PersistentVolumeClaim had no name"))
            pvc = self._claims.get(pod.namespace, claim)
            if pvc is None:
                return VolumeZoneRequest(
                    reject=(UNRESOLVABLE, not_found("persistentvolumeclaim", claim))
                )
            pv_name = str((pvc.get("spec") or {}).get("volumeName") or "")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return VolumeZoneRequest(
                        reject=(
                            UNRESOLVABLE,
                            "PersistentVolumeClaim had no pv name and storageClass name",
                        )
                    )
                sc = self._classes.get("", class_name)
                if sc is None:
                    return VolumeZoneRequest(
                        reject=(UNRESOLVABLE, not_found("storageclass.storage.k8s.io", class_name))
                    )
                mode = sc.get("volumeBindingMode")
                if mode is None:
                    return VolumeZoneRequest(
                        reject=(
                            UNRESOLVABLE,
                            f'VolumeBindingMode not set for StorageClass "{class_name}"',
                        )
                    )
                if mode == "WaitForFirstConsumer":
                    continue
                return VolumeZoneRequest(reject=(UNRESOLVABLE, "PersistentVolume had no name"))
            pv = self._pvs.get("", pv_name)
            if pv is None:
                return VolumeZoneRequest(
                    reject=(UNRESOLVABLE, not_found("persistentvolume", pv_name))
                )
            topologies.extend(pv_topologies(pv))
        if not topologies:
            return None
        return VolumeZoneRequest(topologies)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register()
