"""DynamicResources: Dynamic Resource Allocation with structured parameters
(``resource.k8s.io/v1``), as kube-scheduler v1.36's plugin of that name.

A pod names ResourceClaims in ``spec.resourceClaims`` (directly, or through a template
that kube-controller-manager's resourceclaim controller turns into a claim recorded in
``status.resourceClaimStatuses``). The plugin makes sure each claim is allocated
(devices from the ResourceSlices DRA drivers publish, chosen by the structured
allocator) and reserved for the pod before the pod is bound:

* **PreEnqueue**: every claim exists (a template's claim has been created) and is not
  being deleted; otherwise the pod waits, gated, for the claim or the pod's status.
* **PreFilter**: looks the claims up (per pod, once), refuses claims in use by others'
  in-flight allocations, checks the device classes, and builds the Rust allocator
  (:class:`ksched._core.DraAllocator`) for the unallocated claims with every device
  already allocated or in flight taken.
* **Filter** (in the Rust core, after the built-in filters, in the same sampled node
  loop; :data:`~ksched.framework.interface.CORE_FILTER_KEY`): an allocated claim's
  node selector must match the node and its devices must not have failed their
  binding conditions; the unallocated claims must be allocatable on the node; the
  result is kept per node for Reserve and Score.
* **Score** (DRAPrioritizedList): nodes where higher-ranked ``firstAvailable``
  subrequests were allocated score higher, normalized to 0-100.
* **Reserve / Unreserve**: the chosen node's allocations become in flight
  (:mod:`.assume_cache`), so the next pods' allocators see those devices as taken;
  Unreserve drops them and removes the pod from claims' ``status.reservedFor``.
* **PreBind**: writes ``status.allocation`` (after adding the scheduler's finalizer) and
  appends the pod to ``status.reservedFor``, re-reading the claim on a conflict
  (client-go's ``retry.DefaultRetry``), then assumes the written claim; with
  DRADeviceBindingConditions it waits for the devices' binding conditions.
* **PostFilter**: when no node fits, deallocates one allocated claim that was not
  available on some node and is reserved for nobody else, so the next attempt can
  choose other devices; its status text ("no new claims to deallocate", "deallocation
  of ResourceClaim completed", "still not schedulable") starts the PostFilter part of
  every FailedScheduling message, as upstream's does. When an earlier PreFilter
  (a built-in one, or a Python one before this plugin) rejected the pod outright, this
  plugin's PreFilter never ran upstream and its PostFilter fails with "not found"
  (the CycleState read), which ends PostFilter before DefaultPreemption: ksched does
  the same (``CycleState.pre_filter_rejector``).

**Extended resources backed by DRA** (DRAExtendedResource, beta and on in v1.36;
:mod:`.extended`): a pod that requests ``example.com/gpu`` in a container, with a
DeviceClass mapping that name (``spec.extendedResourceName``, or the implicit
``deviceclass.resource.kubernetes.io/<class>``), gets one more claim, after its own:
the claim an earlier cycle created for it, or an in-memory one. PreFilter builds that
claim's variant for every subset of those resources (a node provides each either from a
device plugin, when its allocatable lists some of it, or from DRA) and the Rust Filter
picks the node's variant, rejects a node that lists neither ("cannot fit resource") and
every node when the earlier claim has requests ("cannot schedule extended resource
claim", which PostFilter answers by deleting it: "deletion of ResourceClaim
completed"). Reserve keeps the node's variant in flight; PreBind creates it in the API
(``generateName: <pod>-extended-resources-``, owned by the pod, counted in
``scheduler_resourceclaim_creates_total``), writes its allocation and reservation,
waits up to 120s for the informer to deliver it, and patches the pod's
``status.extendedResourceClaimStatus``; Unreserve deletes a claim PreBind created.
NodeResourcesFit leaves such a resource to this plugin on a node whose allocatable has
none of it. The mapping and the claims live in the scheduler-wide DRA manager
(:mod:`.manager`).

Feature gates as v1.36 defaults them: DRAPrioritizedList, DRAAdminAccess,
DRAPartitionableDevices, DRADeviceTaints, DRAConsumableCapacity,
DRADeviceBindingConditions, DRAResourceClaimDeviceStatus, DRASchedulerFilterTimeout
and DRAExtendedResource (``--feature-gates``) are on; DRAWorkloadResourceClaims,
DRADeviceTaintRules, DRAListTypeAttributes and DRANodeAllocatableResources are off.

Differences from upstream (see the README): PostFilter's deallocation and deletion,
and Unreserve's reservedFor removal and deletion, are sent in the background (the
scheduling cycle does not wait for the API).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import orjson

from ksched import _core
from ksched.api.pod import Pod
from ksched.backend.queue import cluster_event
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.cluster import APIError
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import (
    CORE_FILTER_KEY,
    DRY_RUN_KEY,
    NodeInfo,
    NodeScore,
    PostFilterResult,
    PreFilterResult,
)
from ksched.framework.status import Code, Status
from ksched.plugins.dynamic_resources.assume_cache import ClaimTracker, NotInCache
from ksched.plugins.dynamic_resources.claims import (
    FINALIZER,
    ClaimError,
    allocation,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
    kobj,
    meta,
    normalized,
    pod_claims,
    reserved_for,
)
from ksched.plugins.dynamic_resources.extended import (
    ASSUME_TIMEOUT,
    claim_requests,
    create_requests_and_mappings,
    find_extended_resource_claim,
    has_mapped_request,
    is_dra_extended_resource_name,
    is_special_claim,
    special_claim,
    with_requests,
)
from ksched.plugins.dynamic_resources.manager import DRAManager, dra_manager

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

__all__ = ["NAME", "DynamicResources"]

log = logging.getLogger(__name__)

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME

# The cluster-event resources (upstream's fwk.EventResource names).
RESOURCE_CLAIM: Final = cluster_event.RESOURCE_CLAIM
RESOURCE_SLICE: Final = cluster_event.RESOURCE_SLICE
DEVICE_CLASS: Final = cluster_event.DEVICE_CLASS

#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``.
FIRST_AVAILABLE_MAX_SIZE: Final = 8
#: DynamicResourcesArgs defaults (``filterTimeout`` 10s, ``bindingTimeout`` 600s).
DEFAULT_FILTER_TIMEOUT: Final = 10.0
DEFAULT_BINDING_TIMEOUT: Final = 600.0
#: ``resourceapi.ResourceClaimReservedForMaxSize``.
RESERVED_FOR_MAX_SIZE: Final = 256
#: ``retry.DefaultRetry``: 5 steps of 10ms (jitter 0.1).
_RETRY_STEPS: Final = 5
_RETRY_DELAY: Final = 0.01
#: How often PreBind looks at binding conditions (upstream polls every 5s).
_BINDING_POLL: Final = 5.0

Obj = dict[str, Any]


def _unresolvable(msg: str) -> Status:
    """Upstream ``statusUnschedulable``: DynamicResources' rejections are all
    UnschedulableAndUnresolvable (preemption cannot free devices)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


@dataclass(slots=True)
class _State:
    """Cycle state of one attempt (upstream ``stateData``)."""

    #: The pod's claims, as the tracker held them in PreFilter; PreBind replaces an
    #: entry with the object its write returned.
    claims: list[Obj] = field(default_factory=list)
    #: Per claim: the allocation Reserve chose (None if nothing to allocate).
    allocations: list[Obj | None] = field(default_factory=list)
    #: The Filter the Rust core runs on every node (the allocator, the allocated
    #: claims' node selectors); it keeps each feasible node's allocations.
    allocator: Any = None
    #: Indices of the claims to allocate (in the allocator's order).
    pending: list[int] = field(default_factory=list)
    #: Some claim has a prioritized list: Score has something to rank.
    scored: bool = False
    #: How many of ``claims`` the pod names itself; the claim for its extended
    #: resources backed by DRA, if any, comes after them (upstream ``claimStore``).
    num_user: int = 0
    #: The UID of that claim at PreFilter (the in-memory one's is temporary).
    initial_extended_uid: str = ""
    #: That claim's variants (``Snapshot.dra_extended_patterns``' order), and their
    #: container request mappings (``status.extendedResourceClaimStatus``).
    variants: list[Obj] = field(default_factory=list)
    mappings: list[list[Obj]] = field(default_factory=list)

    @property
    def extended(self) -> Obj | None:
        """The claim for extended resources (upstream ``extendedResourceClaim()``)."""
        return self.claims[self.num_user] if len(self.claims) > self.num_user else None

    def allocations_on(self, node: str) -> list[Obj] | None:
        raw = None if self.allocator is None else self.allocator.results_for(node)
        return None if raw is None else [orjson.loads(v) for v in raw]


class DynamicResources:
    """The DynamicResources plugin (see the module docstring)."""

    name = NAME
    #: Score weight (v1.36's default profile gives it 2; a profile may set another).
    weight = 2
    #: PreBindPreFlight's ``AllowParallel`` is true (upstream): this PreBind runs
    #: concurrently with its neighbours that allow it too (VolumeBinding's).
    pre_bind_parallel = True

    def __init__(
        self,
        *,
        filter_timeout: float = DEFAULT_FILTER_TIMEOUT,
        binding_timeout: float = DEFAULT_BINDING_TIMEOUT,
    ) -> None:
        self.filter_timeout = filter_timeout
        self.binding_timeout = binding_timeout
        #: The scheduler's DRA state (:mod:`.manager`): a private one until ``setup``
        #: hands over the shared one.
        self.manager = DRAManager()
        self._handle: Handle | None = None

    @property
    def devices(self) -> _core.DraDevices:
        return self.manager.devices

    @property
    def tracker(self) -> ClaimTracker:
        return self.manager.tracker

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> DynamicResources:
        """From ``DynamicResourcesArgs`` (upstream JSON shape, defaulted and validated
        by the config layer): durations as Go duration strings."""
        from ksched.config.duration import parse_duration

        a = args or {}
        ft = a.get("filterTimeout")
        bt = a.get("bindingTimeout")
        return cls(
            filter_timeout=DEFAULT_FILTER_TIMEOUT if ft is None else parse_duration(str(ft)) / 1e9,
            binding_timeout=(
                DEFAULT_BINDING_TIMEOUT if bt is None else parse_duration(str(bt)) / 1e9
            ),
        )

    # ---- wiring -------------------------------------------------------------------------

    def setup(self, handle: Handle) -> None:
        self._handle = handle
        self.manager = dra_manager(handle)

    # Informer handlers of a plugin used without a scheduler (tests).

    def _slice_added(self, obj: Obj) -> None:
        self.manager._slice_added(obj)

    def _class_added(self, obj: Obj) -> None:
        self.manager._class_added(obj)

    def ignores_pod(self, pod: Pod) -> bool:
        """True when the pod names no ResourceClaim and requests no extended resource a
        DeviceClass maps to: then every extension point but PostFilter is a no-op for
        it (PreFilter would return Skip), and the scheduler places it without this
        plugin."""
        return not pod_claims(pod.raw) and not self._has_extended(pod)

    def _has_extended(self, pod: Pod) -> bool:
        classes = self.manager.classes
        return classes is not None and has_mapped_request(pod.requests, classes)

    # ---- claims of a pod ---------------------------------------------------------------

    def _pod_claims(self, pod: Pod) -> list[Obj]:
        """Upstream ``foreachPodResourceClaim``: the pod's existing claims, in order;
        ClaimError with upstream's text when one is missing or unusable."""
        raw = pod.raw
        out: list[Obj] = []
        for pc in pod_claims(raw):
            name, must_check_owner = claim_name(raw, pc)
            if name is None:
                continue
            claim = self.tracker.get(pod.namespace, name)
            if claim is None:
                raise ClaimError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if meta(claim).get("deletionTimestamp") is not None:
                raise ClaimError(f'resourceclaim "{name}" is being deleted')
            if must_check_owner:
                is_for_pod(raw, claim)
            out.append(claim)
        return out

    # ---- PreEnqueue and queueing hints -----------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod_claims(pod.raw):
            return None
        try:
            self._pod_claims(pod)
        except ClaimError as exc:
            return _unresolvable(str(exc))
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # SchedulerQueueingHints is on: no UpdateNodeTaint.
        node_actions = (
            ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        )
        return [
            ClusterEventWithHint(ClusterEvent(NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: Obj | None, new: Obj | None
    ) -> QueueingHint:
        try:
            claims = self._pod_claims(pod)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        if new is None:
            # Deletes are not registered; upstream's hint never sees one.
            return QueueingHint.QUEUE_SKIP
        uid = meta(new).get("uid")
        uses = any(meta(c).get("uid") == uid for c in claims)
        if old is not None and allocation(old) is not None and allocation(new) is None:
            # A claim was deallocated: its devices may help other pods.
            return QueueingHint.QUEUE
        if not uses:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if normalized(old.get("status")) == normalized(new.get("status")):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Pod) or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            self._pod_claims(new)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ---- PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)
        try:
            user = self._pod_claims(pod)
        except ClaimError as exc:
            return None, _unresolvable(str(exc))
        extended = self._pre_filter_extended(pod)
        claims = [*user, extended] if extended is not None else user
        if not claims:
            return None, Status(Code.SKIP)
        s.num_user = len(user)
        if extended is not None:
            s.initial_extended_uid = str(meta(extended).get("uid") or "")
        s.allocations = [None] * len(claims)
        to_allocate: list[tuple[str, bytes]] = []
        allocated: list[tuple[int, bytes | None, bool]] = []
        extended_pending = False
        for index, claim in enumerate(claims):
            alloc = allocation(claim)
            if (
                alloc is not None
                and len(reserved_for(claim)) >= RESERVED_FOR_MAX_SIZE
                and not is_reserved_for_pod(pod.uid, claim)
            ):
                return None, _unresolvable("resourceclaim in use")
            if alloc is not None:
                selector = alloc.get("nodeSelector")
                allocated.append(
                    (
                        index,
                        orjson.dumps(selector) if isinstance(selector, dict) else None,
                        self._unavailable_everywhere(claim),
                    )
                )
                continue
            uid = str(meta(claim).get("uid") or "")
            if self.tracker.pending_allocation(uid) is not None:
                return None, _unresolvable(
                    f"resource claim {kobj(claim)} is in the process of being allocated"
                )
            s.pending.append(index)
            if claim is extended:
                # Its requests are built per node in Filter.
                extended_pending = True
                continue
            status = self._validate_requests(claim)
            if status is not None:
                return None, status
            to_allocate.append((kobj(claim), orjson.dumps(claim)))
        ext_arg = None
        if extended is not None:
            ext_arg = self._extended_filter(pod, s, extended, extended_pending)
        in_flight = [(k, orjson.dumps(a)) for k, a in self.tracker.in_flight()] if s.pending else []
        try:
            s.allocator = self.devices.allocator(
                to_allocate, in_flight, allocated, self.filter_timeout, ext_arg
            )
        except ValueError as exc:
            return None, Status(Code.ERROR, str(exc))
        state.write(CORE_FILTER_KEY, s.allocator)
        s.scored = any(
            r.get("firstAvailable")
            for c in claims
            for r in ((c.get("spec") or {}).get("devices") or {}).get("requests") or []
        )
        s.claims = claims
        return None, None

    def _pre_filter_extended(self, pod: Pod) -> Obj | None:
        """Upstream ``preFilterExtendedResources``: the claim for the pod's extended
        resources backed by DRA (the one an earlier cycle created, or a new in-memory
        one); None when the pod requests none or the gate is off."""
        classes = self.manager.classes
        if classes is None or not has_mapped_request(pod.requests, classes):
            return None
        found = find_extended_resource_claim(pod.raw, self.tracker.extended_claims())
        if found is not None:
            return found
        return special_claim(pod.raw)

    def _extended_filter(
        self, pod: Pod, s: _State, claim: Obj, pending: bool
    ) -> tuple[
        list[tuple[str, bool]],
        list[tuple[list[int], bytes]] | None,
        bool,
        bool,
        list[tuple[str, str]],
    ]:
        """The ``extended`` argument of ``DraDevices.allocator``: the pod's
        DRA-extended-name requests (with whether a class backs each), the claim's
        variants and the prior-claim flag.

        Upstream's Filter builds each node's variant of the claim (the requests for the
        backed resources the node's allocatable has none of). Here the Rust Filter picks
        it from those PreFilter built: one per distinct set of such resources among the
        snapshot's nodes (``Snapshot.dra_extended_patterns``), so any number of
        resources costs at most one variant per node, usually one or two in all."""
        classes = self.manager.classes
        resources = sorted(
            (name, classes is not None and name in classes)
            for name, amount in pod.requests.items()
            if amount and is_dra_extended_resource_name(name)
        )
        prior = bool(claim_requests(claim))
        variants: list[tuple[list[int], bytes]] | None = None
        s.variants, s.mappings = [], []
        if pending and not prior and classes is not None:
            names = [n for n, b in resources if b]
            variants = []
            for pattern in self._extended_patterns(names):
                wanted = {names[k]: pod.requests[names[k]] for k in pattern}
                reqs, maps = create_requests_and_mappings(pod.raw, wanted, classes)
                variant = with_requests(claim, reqs)
                s.variants.append(variant)
                s.mappings.append(maps)
                variants.append((pattern, orjson.dumps(variant)))
        # Which class each backed resource maps to: NodeResourcesFit's and
        # BalancedAllocation's scores count its devices on nodes without the resource.
        mapped = []
        for name, backed_by in resources:
            cls = classes.get_device_class(name) if backed_by and classes is not None else None
            if cls is not None:
                mapped.append((name, str((cls.get("metadata") or {}).get("name") or "")))
        return resources, variants, prior, s.num_user == 0, mapped

    def _extended_patterns(self, names: list[str]) -> list[list[int]]:
        """The distinct sets of indices into ``names`` of the resources some node of
        the snapshot must get from DRA."""
        if self._handle is None:
            return []
        patterns: list[list[int]] = self._handle.snapshot.dra_extended_patterns(names)
        return patterns

    def _unavailable_everywhere(self, claim: Obj) -> bool:
        """An allocated claim whose devices failed their binding conditions, or timed
        out waiting for them, cannot be used on any node (upstream Filter; PostFilter
        may then deallocate it)."""
        try:
            ready = _claim_ready_for_binding(claim)
        except _BindingFailed:
            return True
        return not ready and self._claim_timed_out(claim)

    def _validate_requests(self, claim: Obj) -> Status | None:
        spec = claim.get("spec") or {}
        for request in (spec.get("devices") or {}).get("requests") or []:
            name = str(request.get("name") or "")
            exactly = request.get("exactly")
            subs = request.get("firstAvailable") or []
            if exactly is not None:
                st = self._validate_class(str(exactly.get("deviceClassName") or ""), name)
                if st is not None:
                    return st
            elif subs:
                for sub in subs:
                    qual = f"{name}/{sub.get('name') or ''}"
                    st = self._validate_class(str(sub.get("deviceClassName") or ""), qual)
                    if st is not None:
                        return st
            else:
                return _unresolvable(
                    f"resource claim {kobj(claim)}, request {name}: unknown request type"
                )
        return None

    def _validate_class(self, class_name: str, request: str) -> Status | None:
        if not class_name:
            return Status(Code.ERROR, f"request {request}: unsupported request type")
        if self._handle is not None and self._handle.informer("deviceclasses").get("", class_name):
            return None
        return _unresolvable(f"request {request}: device class {class_name} does not exist")

    # ---- PostFilter ------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        s: _State | None = state.get(STATE_KEY)
        if not _pre_filter_ran(state):
            # A PreFilter before this plugin's stopped the PreFilter phase, so upstream
            # has no state here: getStateData's CycleState.Read fails with "not found",
            # an Error that ends PostFilter before DefaultPreemption runs.
            return None, Status(Code.ERROR, "not found")
        if s is None or not s.claims:
            # No claims (this plugin's PreFilter wrote an empty state upstream, and ksched
            # skips it for such pods: Framework.for_pod).
            return None, Status(Code.UNSCHEDULABLE, "no new claims to deallocate")
        # Upstream iterates a map (random order): any one claim will do.
        candidates = list(s.allocator.unavailable_claims()) if s.allocator is not None else []
        random.shuffle(candidates)
        extended = s.extended
        for index in candidates:
            claim = s.claims[index]
            if extended is not None and claim is extended:
                if not is_special_claim(extended):
                    break  # deleted below
                continue
            reserved = reserved_for(claim)
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                updated = copy.deepcopy(claim)
                status = updated.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                if not state.get(DRY_RUN_KEY):  # ksched explain, shadow mode: act on nothing
                    self._spawn(self._update_status(updated, "deallocate"))
                return None, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        if extended is not None and not is_special_claim(extended):
            # The claim an earlier cycle created for the pod's extended resources is
            # stale: delete it so that the next attempt starts anew.
            self._spawn(self._delete_claim(extended))
            return None, Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
        return None, Status(Code.UNSCHEDULABLE, "still not schedulable")

    # ---- Score -----------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims or not s.scored:
            return 0
        allocations = s.allocations_on(node.name)
        if allocations is None:
            return 0
        return _compute_score(s.claims, allocations)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        # helper.DefaultNormalizeScore(MaxNodeScore, false, scores)
        highest = max((x.score for x in scores), default=0)
        if highest == 0:
            return None
        for x in scores:
            x.score = 100 * x.score // highest
        return None

    # ---- Reserve / Unreserve -------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        pending = s.pending
        if not pending:
            return None
        extended = s.extended
        allocations = s.allocations_on(node)
        if not allocations:
            if not any(s.claims[i] is not extended for i in pending):
                # Only the claim for extended resources was to be allocated, and the
                # node's device plugins provide them: nothing from DRA.
                return None
            return Status(Code.ERROR, "claim allocation not found for node")
        if len(allocations) != len(pending):
            return Status(
                Code.ERROR,
                f"internal error, have {len(allocations)} allocations, {len(pending)} claims "
                f"to allocate, want {len(pending)} claims",
            )
        variant = s.allocator.variant_for(node) if s.allocator is not None else None
        for alloc, index in zip(allocations, pending, strict=True):
            s.allocations[index] = alloc
            source = s.claims[index]
            if source is extended and variant is not None:
                # The node's own variant of the claim for extended resources.
                source = s.variants[variant]
            claim = copy.deepcopy(source)
            finalizers = meta(claim).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            claim.setdefault("status", {})["allocation"] = alloc
            self.tracker.signal_pending(str(meta(claim).get("uid") or ""), claim)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return
        for claim in s.claims[: s.num_user]:
            m = meta(claim)
            if self.tracker.maybe_remove_pending(str(m.get("uid") or "")):
                self.tracker.restore(str(m.get("namespace") or ""), str(m.get("name") or ""))
            if allocation(claim) is not None and is_reserved_for_pod(pod.uid, claim):
                patch = {
                    "metadata": {"uid": m.get("uid")},
                    "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
                }
                self._spawn(self._patch_status(claim, patch))
        extended = s.extended
        if extended is not None:
            # Upstream unreserveExtendedResourceClaim.
            m = meta(extended)
            if self.tracker.maybe_remove_pending(s.initial_extended_uid):
                self.tracker.restore(str(m.get("namespace") or ""), str(m.get("name") or ""))
            if not is_special_claim(extended):
                # Created in the API by PreBind: delete it, or it would be orphaned.
                self._spawn(self._delete_claim(extended))

    # ---- PreBind -------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: Skip when the pod has no claims."""
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status(Code.ERROR, "not found", plugin=NAME)
        if not s.claims:
            return Status(Code.SKIP)
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        for index, claim in enumerate(list(s.claims)):
            if is_reserved_for_pod(pod.uid, claim):
                continue
            try:
                s.claims[index] = await self._bind_claim(s, index, pod, node)
            except _BindError as exc:
                return Status(Code.ERROR, str(exc))
        if not _has_binding_conditions(s.claims):
            return None
        return await self._wait_for_binding_conditions(s, pod, node)

    async def _bind_claim(self, s: _State, index: int, pod: Pod, node: str) -> Obj:
        claim = s.claims[index]
        alloc = s.allocations[index]
        is_extended = claim is s.extended
        if is_extended and alloc is None and not claim_requests(claim):
            return claim  # extended resources from device plugins: nothing to write
        uid = str(meta(claim).get("uid") or "")
        modified: Obj | None = None
        created: Obj | None = None
        try:
            if is_extended and is_special_claim(claim):
                created = await self._create_extended_claim(s, pod, node)
                # From now on the real claim is tracked (Unreserve deletes it).
                s.claims[index] = created
                claim = created
            modified = await self._write_allocation(claim, alloc, pod)
            if is_extended:
                await self._patch_extended_status(s, pod, modified, node)
            return modified
        finally:
            force = False
            latest = modified if modified is not None else created
            if latest is not None and is_extended:
                await self._wait_in_cache(latest)
            elif modified is not None:
                try:
                    self.tracker.assume(modified)
                    force = True
                except ValueError as exc:
                    log.debug("claim not stored in assume cache: %s", exc)
            if alloc is not None:
                self.tracker.maybe_remove_pending(uid, force)

    async def _create_extended_claim(self, s: _State, pod: Pod, node: str) -> Obj:
        """Upstream ``createExtendedResourceClaimInAPI``: the node's variant of the
        claim, created with a generated name."""
        variant = s.allocator.variant_for(node) if s.allocator is not None else None
        if variant is None:
            raise _BindError(f"extended resource claim not found for node {node}")
        claim = copy.deepcopy(s.variants[variant])
        m = claim.setdefault("metadata", {})
        m.pop("name", None)
        m.pop("uid", None)
        claim.pop("status", None)
        metrics = self._handle.metrics if self._handle is not None else None
        try:
            created: Obj = await self._api().create_object(kind="resourceclaims", obj=claim)
        except (APIError, OSError) as exc:
            if metrics is not None:
                metrics.resourceclaim_creates.inc(("failure",))
            raise _BindError(
                f"create claim for extended resources {kobj(claim)}: {_text(exc)}"
            ) from exc
        if metrics is not None:
            metrics.resourceclaim_creates.inc(("success",))
        return created

    async def _patch_extended_status(self, s: _State, pod: Pod, claim: Obj, node: str) -> None:
        """Upstream ``patchPodExtendedResourceClaimStatus``."""
        variant = s.allocator.variant_for(node) if s.allocator is not None else None
        mappings = s.mappings[variant] if variant is not None else []
        if not mappings:
            raise _BindError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        patch = {
            "status": {
                "extendedResourceClaimStatus": {
                    "requestMappings": mappings,
                    "resourceClaimName": str(meta(claim).get("name") or ""),
                }
            }
        }
        try:
            await self._api().patch_pod_status(namespace=pod.namespace, name=pod.name, patch=patch)
        except (APIError, OSError) as exc:
            raise _BindError(
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {_text(exc)}"
            ) from exc

    async def _wait_in_cache(self, claim: Obj) -> None:
        """Upstream ``waitForExtendedClaimInAssumeCache``: the claim was just created, so
        the informer may not have it yet; poll every second, up to 120s, and give up
        quietly (the claim exists either way)."""
        deadline = time.monotonic() + ASSUME_TIMEOUT
        while True:
            try:
                self.tracker.assume(claim)
                return
            except NotInCache:
                if time.monotonic() >= deadline:
                    log.debug("claim %s not stored in assume cache after retries", kobj(claim))
                    return
            except ValueError as exc:
                log.debug("claim not stored in assume cache: %s", exc)
                return
            await asyncio.sleep(1.0)

    async def _delete_claim(self, claim: Obj) -> None:
        """Upstream ``deleteClaim``: drop the scheduler's finalizer (re-reading the claim
        on a conflict), then delete the claim."""
        api = self._api()
        m = meta(claim)
        ns, name = str(m.get("namespace") or ""), str(m.get("name") or "")
        current = copy.deepcopy(claim)
        try:
            for attempt in range(_RETRY_STEPS):
                if attempt:
                    await asyncio.sleep(_RETRY_DELAY * (1 + 0.1 * random.random()))
                    current = await api.get_object(kind="resourceclaims", namespace=ns, name=name)
                finalizers = meta(current).get("finalizers") or []
                if FINALIZER in finalizers:
                    meta(current)["finalizers"] = [f for f in finalizers if f != FINALIZER]
                try:
                    await api.update_object(kind="resourceclaims", obj=current)
                    break
                except APIError as exc:
                    if not _conflict(exc) or attempt == _RETRY_STEPS - 1:
                        raise
            await api.delete_object(kind="resourceclaims", namespace=ns, name=name)
        except (APIError, OSError, _BindError) as exc:
            log.warning("delete ResourceClaim %s: %s", kobj(claim), _text(exc))

    async def _write_allocation(self, claim: Obj, alloc: Obj | None, pod: Pod) -> Obj:
        """Upstream ``bindClaim``'s update under ``retry.RetryOnConflict``: the first try
        uses the claim of the cycle, every retry reads it again."""
        api = self._api()
        m = meta(claim)
        ns, name = str(m.get("namespace") or ""), str(m.get("name") or "")
        who = kobj(claim)
        current = copy.deepcopy(claim)
        last = _RETRY_STEPS - 1
        for attempt in range(_RETRY_STEPS):
            if attempt:
                await asyncio.sleep(_RETRY_DELAY * (1 + 0.1 * random.random()))
                try:
                    current = await api.get_object(kind="resourceclaims", namespace=ns, name=name)
                except (APIError, OSError) as exc:
                    raise _BindError(
                        f"get updated claim {who} after conflict: {_text(exc)}"
                    ) from exc
            if meta(current).get("deletionTimestamp") is not None:
                raise _BindError(f"claim {who} got deleted in the meantime")
            if alloc is not None:
                if allocation(current) is not None:
                    raise _BindError(f"claim {who} got allocated elsewhere in the meantime")
                finalizers = meta(current).setdefault("finalizers", [])
                if FINALIZER not in finalizers:
                    finalizers.append(FINALIZER)
                    try:
                        current = await api.update_object(kind="resourceclaims", obj=current)
                    except (APIError, OSError) as exc:
                        if _conflict(exc) and attempt < last:
                            continue
                        raise _BindError(f"add finalizer to claim {who}: {_text(exc)}") from exc
                current.setdefault("status", {})["allocation"] = copy.deepcopy(alloc)
            status = current.setdefault("status", {})
            status.setdefault("reservedFor", []).append(
                {"resource": "pods", "name": pod.name, "uid": pod.uid}
            )
            if not isinstance(status.get("allocation"), dict):
                raise _BindError(f"claim {who} got deallocated elsewhere in the meantime")
            status["allocation"].setdefault("allocationTimestamp", _now_rfc3339())
            try:
                return await api.update_object(  # type: ignore[no-any-return]
                    kind="resourceclaims", obj=current, subresource="status"
                )
            except (APIError, OSError) as exc:
                if _conflict(exc) and attempt < last:
                    continue
                what = (
                    "add allocation and reservation to"
                    if alloc is not None
                    else "add reservation to"
                )
                raise _BindError(f"{what} claim {who}: {_text(exc)}") from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _wait_for_binding_conditions(self, s: _State, pod: Pod, node: str) -> Status | None:
        handle = self._handle
        assert handle is not None
        fw = handle.framework(pod.scheduler_name)
        profile = fw.name if fw is not None else pod.scheduler_name
        handle.record_event(
            pod,
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            f"waiting for binding conditions for device on node {node}",
            profile,
        )
        start = time.monotonic()
        label = "success"
        error = ""
        while True:
            try:
                if self._ready_for_binding(s):
                    break
            except _BindingFailed as exc:
                label, error = "failure", f"device binding failed: {exc}"
                break
            except _BindingTimedOut as exc:
                label, error = "timeout", f"device binding timeout: {exc}"
                break
            except _BindingError as exc:
                label, error = "error", str(exc)
                break
            if time.monotonic() - start >= self.binding_timeout:
                label, error = "timeout", "device binding timeout: context deadline exceeded"
                break
            await asyncio.sleep(_BINDING_POLL)
        duration = time.monotonic() - start
        metrics = handle.metrics
        for claim in s.claims:
            alloc = allocation(claim)
            if alloc is None:
                continue
            for r in (alloc.get("devices") or {}).get("results") or []:
                metrics.dra_binding_conditions_wait_duration.observe(
                    (profile, str(r.get("driver")), label), duration
                )
                if r.get("bindingConditions"):
                    metrics.dra_binding_conditions_allocations.inc(
                        (profile, str(r.get("driver")), label)
                    )
        return Status(Code.ERROR, error) if error else None

    def _ready_for_binding(self, s: _State) -> bool:
        for index, claim in enumerate(s.claims):
            m = meta(claim)
            latest = self.tracker.get(str(m.get("namespace") or ""), str(m.get("name") or ""))
            if latest is None:
                # The assume cache's NotFoundError (upstream: the "error" outcome).
                raise _BindingError(f'could not find ResourceClaim "{kobj(claim)}"')
            s.claims[index] = latest
            if not _claim_ready_for_binding(latest):
                if self._claim_timed_out(latest):
                    # isPodReadyForBinding: ErrDeviceBindingTimeout, "claim=<name>".
                    raise _BindingTimedOut(f"claim={m.get('name')}")
                return False
        return True

    def _claim_timed_out(self, claim: Obj) -> bool:
        alloc = allocation(claim)
        if alloc is None or not alloc.get("allocationTimestamp"):
            return False
        results = (alloc.get("devices") or {}).get("results") or []
        if not any(r.get("bindingConditions") for r in results):
            return False
        try:
            stamp = datetime.fromisoformat(str(alloc["allocationTimestamp"]).replace("Z", "+00:00"))
        except ValueError:
            return False
        return stamp.timestamp() + self.binding_timeout < time.time()

    # ---- API writes -------------------------------------------------------------------------

    def _api(self) -> Any:
        if self._handle is None:
            raise _BindError("DynamicResources is not set up")
        return self._handle.api

    def _spawn(self, coro: Any) -> None:
        if self._handle is None:
            coro.close()
            return
        self._handle.spawn(coro)

    async def _update_status(self, claim: Obj, what: str) -> None:
        try:
            await self._api().update_object(kind="resourceclaims", obj=claim, subresource="status")
        except (APIError, OSError, _BindError) as exc:
            log.warning("%s ResourceClaim %s: %s", what, kobj(claim), exc)

    async def _patch_status(self, claim: Obj, patch: Obj) -> None:
        m = meta(claim)
        try:
            await self._api().patch_object(
                kind="resourceclaims",
                namespace=str(m.get("namespace") or ""),
                name=str(m.get("name") or ""),
                patch=patch,
                patch_type="strategic",
                subresource="status",
            )
        except (APIError, OSError, _BindError) as exc:
            # We will get here again when pod scheduling is retried.
            log.warning("unreserve ResourceClaim %s: %s", kobj(claim), exc)


class _BindError(Exception):
    pass


def _conflict(exc: Exception) -> bool:
    return isinstance(exc, APIError) and exc.status == 409


def _text(exc: Exception) -> str:
    """The API's message (as client-go's error prints it), or the error."""
    return exc.message if isinstance(exc, APIError) else str(exc)


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _BindingFailed(Exception):
    """A binding failure condition is true (upstream ``ErrDeviceBindingFailed``)."""


class _BindingTimedOut(Exception):
    """The allocation waited longer than ``bindingTimeout`` (``ErrDeviceBindingTimeout``)."""


class _BindingError(Exception):
    """Reading the claim failed (upstream's "error" outcome of the wait)."""


def _device_status(claim: Obj, result: Obj) -> Obj | None:
    for d in (claim.get("status") or {}).get("devices") or []:
        if (
            d.get("device") == result.get("device")
            and d.get("driver") == result.get("driver")
            and d.get("pool") == result.get("pool")
        ):
            return d  # type: ignore[no-any-return]
    return None


def _condition_true(status: Obj, cond: str) -> Obj | None:
    for c in status.get("conditions") or []:
        if c.get("type") == cond and c.get("status") == "True":
            return c  # type: ignore[no-any-return]
    return None


def _claim_ready_for_binding(claim: Obj) -> bool:
    """Upstream ``isClaimReadyForBinding``; _BindingFailed when a failure condition is
    true."""
    alloc = allocation(claim)
    if alloc is None:
        return False
    for r in (alloc.get("devices") or {}).get("results") or []:
        conditions = r.get("bindingConditions") or []
        if not conditions:
            continue
        status = _device_status(claim, r)
        if status is None:
            return False
        for cond in r.get("bindingFailureConditions") or []:
            failed = _condition_true(status, cond)
            if failed is not None:
                raise _BindingFailed(
                    f"claim={meta(claim).get('name')}, reason={failed.get('reason')}, "
                    f'message="{failed.get("message") or ""}"'
                )
        if not all(_condition_true(status, c) for c in conditions):
            return False
    return True


def _has_binding_conditions(claims: list[Obj]) -> bool:
    for claim in claims:
        alloc = allocation(claim)
        if alloc is None:
            continue
        if any(
            r.get("bindingConditions") for r in (alloc.get("devices") or {}).get("results") or []
        ):
            return True
    return False


def _pre_filter_ran(state: CycleState) -> bool:
    """Whether upstream ran this plugin's PreFilter in the cycle of ``state``: no
    PreFilter stopped the phase (``CycleState.pre_filter_rejector``), or the one that
    did comes after this plugin in the profile's PreFilter order. The built-in (Rust)
    PreFilters all come before it (v1.36's default profile appends DynamicResources
    after them); ksched runs its Python PreFilter first, and skips it for pods without
    claims, so its own state does not tell."""
    rejector = state.pre_filter_rejector
    if not rejector or rejector == NAME:
        return True
    order = state.pre_filter_order
    if rejector in order and NAME in order:
        return order.index(NAME) < order.index(rejector)
    return False


def _compute_score(claims: list[Obj], allocations: list[Obj]) -> int:
    """Upstream ``computeScore``: for each claim's firstAvailable request, the rank of
    the subrequest that was allocated (8 for the first, 7 for the second, ...)."""
    score = 0
    unallocated = 0
    for claim in claims:
        alloc = allocation(claim)
        if alloc is None:
            if unallocated >= len(allocations):
                raise ValueError(
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation"
                )
            alloc = allocations[unallocated]
            unallocated += 1
        allocated_subs = {
            str(r.get("request"))
            for r in (alloc.get("devices") or {}).get("results") or []
            if str(r.get("request") or "").count("/") == 1
        }
        for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            if req.get("exactly") is not None:
                continue
            for i, sub in enumerate(req.get("firstAvailable") or []):
                if f"{req.get('name')}/{sub.get('name')}" in allocated_subs:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
