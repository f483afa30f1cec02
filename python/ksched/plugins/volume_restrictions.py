"""VolumeRestrictions: in-tree disks that cannot be mounted twice on a node, and
ReadWriteOncePod claims already in use.

PreFilter (here): every PVC volume's claim must exist (else UnschedulableAndUnresolvable
``persistentvolumeclaim "<name>" not found``); the claims with the ``ReadWriteOncePod``
access mode go to the kernel, which counts how many of them scheduled pods use. Filter,
the count and AddPod/RemovePod (nominated pods, preemption) are in
``rust/plugins/volume_restrictions.rs``.

Events as upstream with queueing hints on: a deleted pod whose disks or claims the pod
shares, a new node, the creation of a claim the pod names.
"""

from __future__ import annotations

from typing import Any, Final

from ksched._core import VolumeRestrictionsRequest
from ksched.api.pod import Pod
from ksched.api.volume import (
    access_modes,
    disks_conflict,
    has_disk,
    has_volumes,
    not_found,
    pod_disks,
    pod_volumes,
    pvc_claim,
)
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.backend.shared_informers import SharedInformer
from ksched.framework.builtin_events import QUEUE, SKIP
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "NAME",
    "VolumeRestrictions",
    "events_to_register",
]

NAME: Final = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
PERSISTENT_VOLUME_CLAIM: Final = "PersistentVolumeClaim"
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"


def _claims(pod: Pod) -> set[str]:
    return {c for c in (pvc_claim(v) for v in pod_volumes(pod)) if c is not None}


def _after_pod_deleted(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: the deleted pod held a disk the pod's volumes
    conflict with, or named one of its claims (which may be ReadWriteOncePod)."""
    if old is None or old.namespace != pod.namespace:
        return SKIP
    theirs = pod_disks(old)
    if any(disks_conflict(d, e) for d in pod_disks(pod) for e in theirs):
        return QUEUE
    return QUEUE if _claims(pod) & _claims(old) else SKIP


def _after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimAdded``: a claim the pod names."""
    meta = (new or {}).get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return SKIP
    return QUEUE if meta.get("name") in _claims(pod) else SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _after_pod_deleted),
        # Any new node may help; no hint, as upstream.
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ClusterEventWithHint(
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), _after_claim_added
        ),
    ]


class VolumeRestrictions:
    """The Python half of VolumeRestrictions (its PreFilter lookups and events)."""

    name = NAME

    def __init__(self) -> None:
        self._claims: SharedInformer | None = None

    def setup(self, handle: Handle) -> None:
        self._claims = handle.informer("persistentvolumeclaims")

    def applies_to(self, pod: Pod) -> bool:
        if not has_volumes(pod):
            return False
        return any(pvc_claim(v) is not None or has_disk(v) for v in pod_volumes(pod))

    def kernel_pre_filter(self, state: CycleState, pod: Pod) -> VolumeRestrictionsRequest:
        assert self._claims is not None, "VolumeRestrictions used before setup"
        rwop: list[str] = []
        for vol in pod_volumes(pod):
            claim = pvc_claim(vol)
            if claim is None:
                continue
            pvc = self._claims.get(pod.namespace, claim)
            if pvc is None:
                return VolumeRestrictionsRequest(
                    reject=(UNRESOLVABLE, not_found("persistentvolumeclaim", claim))
                )
            if "ReadWriteOncePod" in access_modes(pvc):
                rwop.append(claim)
        return VolumeRestrictionsRequest(rwop)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register()
