"""VolumeBinding: bind a pod's PVCs to PVs, or have them provisioned, on the node chosen
for the pod, as kube-scheduler does.

Split by concern, as upstream's ``volumebinding/`` folder:

* this module — the plugin: its extension points, failure reasons, events and queueing
  hints;
* :mod:`.binder` — what reads and writes API objects (PreFilter's claim lookups and the
  request for the kernels, Reserve's assumptions, PreBind's writes and wait);
* :mod:`.assume_cache` — the PV and PVC assume caches;
* ``rust/plugins/volume_binding`` — the per-node Filter (``FindPodVolumes``) and the
  storage capacity Score.

Extension points:

* PreFilter: a pod without PVCs skips the plugin; a claim that is missing, lost, being
  deleted (or an ephemeral claim not the pod's) rejects it with that error, as does any
  unbound claim of an immediate class (``pod has unbound immediate
  PersistentVolumeClaims``), all UnschedulableAndUnresolvable;
* Filter (Rust): the reasons ``node(s) didn't match PersistentVolume's node affinity``,
  ``node(s) didn't find available persistent volumes to bind``, ``node(s) did not have
  enough free storage``, ``node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)``;
* Score (Rust, only with the ``StorageCapacityScoring`` gate, which is what gives the
  args a ``shape``);
* Reserve/Unreserve: assume (and undo) the node's bindings and provisioning;
* PreBind: write them and wait for the PV controller, up to ``bindTimeoutSeconds``
  (600 by default): ``binding volumes: context deadline exceeded`` when it expires (the
  pod goes back to the queue, the assumptions undone). PreBindPreFlight says Skip when
  every claim is bound already, so only pods with work to do get
  ``status.nominatedNodeName`` set before PreBind (NominatedNodeNameForExpectation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ksched._core import VolumeBindingRequest
from ksched.api.pod import Pod
from ksched.api.quantity import nanos_to_value, parse_quantity_nanos
from ksched.api.volume import (
    MIGRATED_PLUGINS_ANNOTATION,
    annotations_of,
    has_volumes,
    pod_volumes,
    volume_claim_name,
)
from ksched.backend.cache.storage import KEY, StorageColumns
from ksched.backend.queue.cluster_event import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import Handle
from ksched.framework.status import Code, Status
from ksched.plugins.volume_binding.binder import Binder, BinderError, PodVolumes, PreFilterData

__all__ = [
    "DEFAULT_BIND_TIMEOUT_SECONDS",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "VolumeBinding",
    "events_to_register",
]

NAME: Final = "VolumeBinding"
ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT_SECONDS: Final = 600
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"

STATE_KEY: Final = NAME


# ---- events and queueing hints --------------------------------------------------------


def _after_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new class, or a class whose ``allowedTopologies`` changed (binding mode is
    immutable)."""
    if old is None:
        return QUEUE
    same = (old.get("allowedTopologies") or []) == ((new or {}).get("allowedTopologies") or [])
    return SKIP if same else QUEUE


def _after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    meta = (new or {}).get("metadata") or {}
    if meta.get("namespace") != pod.namespace:
        return SKIP
    names = {volume_claim_name(pod, v) for v in pod_volumes(pod)}
    return QUEUE if meta.get("name") in names else SKIP


def _after_csinode_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of its migrated plugins (PV translation)."""
    if old is None:
        return QUEUE
    before = annotations_of(old).get(MIGRATED_PLUGINS_ANNOTATION)
    return SKIP if before == annotations_of(new or {}).get(MIGRATED_PLUGINS_ANNOTATION) else QUEUE


def _volume_limit(capacity: Any) -> int | None:
    """``volumeLimit``: ``maximumVolumeSize``, else ``capacity`` (``Value()``)."""
    limit = capacity.get("maximumVolumeSize")
    if limit is None:
        limit = capacity.get("capacity")
    if limit is None:
        return None
    try:
        return nanos_to_value(parse_quantity_nanos(limit))
    except ValueError:
        return None


def _after_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QUEUE
    before, after = _volume_limit(old), _volume_limit(new or {})
    return QUEUE if after is not None and (before is None or after > before) else SKIP


def _after_csidriver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Storage capacity tracking turned off for a CSI driver an inline volume uses."""
    name = ((new or {}).get("metadata") or {}).get("name")
    for vol in pod_volumes(pod):
        csi = vol.get("csi")
        if not isinstance(csi, dict) or csi.get("driver") != name:
            continue
        was = ((old or {}).get("spec") or {}).get("storageCapacity") is True
        now = ((new or {}).get("spec") or {}).get("storageCapacity") is True
        if was and not now:
            return QUEUE
    return SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE), _after_class_change
        ),
        ClusterEventWithHint(
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
            _after_claim_change,
        ),
        ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(
            ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE), _after_csinode_change
        ),
        ClusterEventWithHint(ClusterEvent(CSI_DRIVER, ActionType.UPDATE), _after_csidriver_change),
        ClusterEventWithHint(
            ClusterEvent(CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
            _after_capacity_change,
        ),
    ]


# ---- the plugin -----------------------------------------------------------------------


@dataclass(slots=True)
class _State:
    """Cycle state (upstream ``stateData``): PreFilter's findings, then Reserve's."""

    data: PreFilterData | None = None
    all_bound: bool = False
    pod_volumes: PodVolumes | None = None


class VolumeBinding:
    """The Python half of VolumeBinding (see the module docstring)."""

    name = NAME
    #: PreBindPreFlight's ``AllowParallel``: PreBind may run beside DynamicResources'.
    pre_bind_parallel = True

    def __init__(self, bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS) -> None:
        self.bind_timeout_seconds = bind_timeout_seconds
        self._handle: Handle | None = None
        self._binder: Binder | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> VolumeBinding:
        """From ``VolumeBindingArgs`` (upstream JSON shape, defaulted)."""
        timeout = (args or {}).get("bindTimeoutSeconds")
        return cls(DEFAULT_BIND_TIMEOUT_SECONDS if timeout is None else int(timeout))

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        self._binder = Binder(handle, float(self.bind_timeout_seconds))
        # The kernels read the nodes' CSINodes (migrated plugins) from the snapshot.
        handle.shared(KEY, lambda: StorageColumns(handle.snapshot, handle.informer))

    @property
    def binder(self) -> Binder:
        assert self._binder is not None, "VolumeBinding used before setup"
        return self._binder

    def applies_to(self, pod: Pod) -> bool:
        if not has_volumes(pod):
            return False
        return any(volume_claim_name(pod, v) is not None for v in pod_volumes(pod))

    def kernel_pre_filter(self, state: CycleState, pod: Pod) -> VolumeBindingRequest | None:
        binder = self.binder
        has, err = binder.pod_has_pvcs(pod)
        if err is not None:
            return VolumeBindingRequest(reject=(UNRESOLVABLE, err))
        if not has:
            state.write(STATE_KEY, _State())
            return None
        try:
            claims = binder.pod_volume_claims(pod)
            if claims.unbound_immediate:
                return VolumeBindingRequest(reject=(UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE))
            data = binder.request(pod, claims)
        except BinderError as exc:
            return VolumeBindingRequest(reject=("Error", str(exc)))
        state.write(STATE_KEY, _State(data=data))
        return data.request

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        st: _State | None = state.get(STATE_KEY)
        if st is None or st.data is None:
            if st is not None:
                st.all_bound = True
            return None
        assert self._handle is not None
        plan = self._handle.snapshot.volume_binding_plan(st.data.request, node)
        if plan is None:
            st.all_bound = True  # no volumes were found for the node (upstream: allBound)
            return None
        pv = st.data.pod_volumes(plan)
        st.pod_volumes = pv
        try:
            st.all_bound = self.binder.assume_pod_volumes(pod, node, pv)
        except BinderError as exc:
            return Status(Code.ERROR, str(exc), plugin=NAME)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        st: _State | None = state.get(STATE_KEY)
        if st is not None and st.pod_volumes is not None:
            self.binder.revert_assumed_pod_volumes(st.pod_volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        """Skip when there is nothing to bind (every claim is bound)."""
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return Status(Code.ERROR, "not found", plugin=NAME)
        if st.all_bound:
            return Status(Code.SKIP)
        if st.pod_volumes is None:
            return Status(Code.ERROR, f'no pod volume found for node "{node}"', plugin=NAME)
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        st: _State | None = state.get(STATE_KEY)
        if st is None:
            return Status(Code.ERROR, "not found", plugin=NAME)
        if st.all_bound:
            return None
        if st.pod_volumes is None:
            return Status(Code.ERROR, f'no pod volume found for node "{node}"', plugin=NAME)
        try:
            await self.binder.bind_pod_volumes(pod, node, st.pod_volumes)
        except BinderError as exc:
            return Status(Code.ERROR, str(exc), plugin=NAME)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register()
