"""NodeVolumeLimits (upstream CSILimits): the CSI attach limits of CSINodes.

PreFilter (here): the pod's attachable volumes, in volume order (upstream
``filterAttachableVolumes`` for the new pod): a PVC or generic ephemeral volume's claim
must exist (``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>" not found``,
UnschedulableAndUnresolvable) and an ephemeral claim must be the pod's own (an error);
the claim then counts as its PV's CSI volume, an in-tree PV of a migrated plugin as its
translation, or, while unbound, as a volume of its class's provisioner
(:func:`ksched.api.volume.claim_csi_volume`); in-tree inline volumes of migrated plugins
count as their translation (a translation error applies only to nodes with a CSINode,
where upstream translates). A pod without PVC, ephemeral or migratable inline volumes
skips the plugin.

The volumes already on each node (its pods' claims, resolved the same way, and its
VolumeAttachments) and the limits are the snapshot's storage columns
(:mod:`ksched.backend.cache.storage`); the Filter is ``rust/plugins/node_volume_limits.rs``.

Events as upstream: any new CSINode, a CSINode whose limit for some driver grew, a
deleted pod (bound or nominated) with claims or migratable inline volumes, a claim of
the pod created, a VolumeAttachment deleted that one of the pod's volumes may use.
"""

from __future__ import annotations

from typing import Any, Final

from ksched._core import NodeVolumeLimitsRequest
from ksched.api import csi_translation
from ksched.api.pod import Pod
from ksched.api.volume import (
    has_volumes,
    not_found,
    pod_volumes,
    pvc_claim,
    volume_claim_name,
    volume_is_for_pod,
)
from ksched.backend.cache.storage import KEY, StorageColumns
from ksched.backend.queue.cluster_event import (
    CSI_NODE,
    POD,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT", "NAME", "NodeVolumeLimits", "events_to_register"]

NAME: Final = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT: Final = "node(s) exceed max volume count"


def _counts(pod: Pod, vol: dict[str, Any]) -> bool:
    """A volume this plugin looks at: a claim, or an in-tree inline volume that migrates."""
    return volume_claim_name(pod, vol) is not None or csi_translation.inline_plugin(vol) is not None


def _limits(csinode: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in ((csinode or {}).get("spec") or {}).get("drivers") or []:
        if isinstance(d, dict):
            alloc = d.get("allocatable")
            count = alloc.get("count") if isinstance(alloc, dict) else None
            out[str(d.get("name") or "")] = count if isinstance(count, int) else 0
    return out


def _after_csinode_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A driver's limit grew."""
    before = _limits(old)
    return QUEUE if any(n > before.get(d, 0) for d, n in _limits(new).items()) else SKIP


def _after_pod_deleted(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    if old is None:
        return SKIP
    vols = list(pod_volumes(old))
    if not vols or (not old.node_name and not old.nominated_node_name):
        return SKIP
    return QUEUE if any(_counts(old, v) for v in vols) else SKIP


def _after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    meta = (new or {}).get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return SKIP
    names = {volume_claim_name(pod, v) for v in pod_volumes(pod)}
    return QUEUE if meta.get("name") in names else SKIP


def _after_attachment_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    attacher = ((old or {}).get("spec") or {}).get("attacher")
    for vol in pod_volumes(pod):
        if pvc_claim(vol) is not None:
            return QUEUE
        if csi_translation.inline_plugin(vol) is None:
            continue
        try:
            driver, _ = csi_translation.translate_inline(vol)
        except csi_translation.TranslationError:
            return QUEUE  # upstream returns Queue with the error
        if driver == attacher:
            return QUEUE
    return SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        # Any new CSINode may help: no hint, as upstream.
        ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD)),
        ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.UPDATE), _after_csinode_updated),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _after_pod_deleted),
        ClusterEventWithHint(
            ClusterEvent("PersistentVolumeClaim", ActionType.ADD), _after_claim_added
        ),
        ClusterEventWithHint(
            ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE), _after_attachment_deleted
        ),
    ]


class NodeVolumeLimits:
    """The Python half of NodeVolumeLimits (its PreFilter lookups and events)."""

    name = NAME

    def __init__(self) -> None:
        self._columns: StorageColumns | None = None

    def setup(self, handle: Handle) -> None:
        self._columns = handle.shared(KEY, lambda: StorageColumns(handle.snapshot, handle.informer))

    def applies_to(self, pod: Pod) -> bool:
        if not has_volumes(pod):
            return False
        return any(_counts(pod, v) for v in pod_volumes(pod))

    def kernel_pre_filter(self, state: CycleState, pod: Pod) -> NodeVolumeLimitsRequest:
        cols = self._columns
        assert cols is not None, "NodeVolumeLimits used before setup"
        volumes: list[tuple[str, str]] = []
        errors: list[tuple[bool, bool, str]] = []
        for vol in pod_volumes(pod):
            claim = volume_claim_name(pod, vol)
            if claim is None:
                plugin = csi_translation.inline_plugin(vol)
                if plugin is None or plugin not in csi_translation.MIGRATION_ON:
                    continue
                try:
                    volumes.append(csi_translation.translate_inline(vol))
                except csi_translation.TranslationError as exc:
                    msg = f"converting volume({vol.get('name') or ''}) from inline to csi: {exc}"
                    errors.append((True, False, msg))
                continue
            if claim == "":
                errors.append((False, False, "PersistentVolumeClaim had no name"))
                break
            pvc = cols.pvcs.get(pod.namespace, claim)
            if pvc is None:
                missing = not_found("persistentvolumeclaim", claim)
                errors.append((False, True, f"looking up PVC {pod.namespace}/{claim}: {missing}"))
                break
            if pvc_claim(vol) is None:  # generic ephemeral: the claim must be the pod's
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    errors.append((False, False, err))
                    break
            counted = cols.claim_volume(pvc)
            if counted is not None:
                volumes.append(counted)
        return NodeVolumeLimitsRequest(volumes, errors=errors)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register()
