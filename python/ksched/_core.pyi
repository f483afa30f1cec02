"""Type stub of the Rust extension ``ksched._core`` (checked by ``mypy.stubtest``).

The extension holds the node snapshot as columnar arrays and runs the built-in
Filter/Score plugins over it. Amounts are canonical integers: cpu in millicores,
memory and storage in bytes, pods and extended resources as counts.
"""

from typing import Any, Final, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "FILTER_PLUGINS",
    "PRE_FILTER_PLUGINS",
    "PRE_SCORE_PLUGINS",
    "SCORE_PLUGINS",
    "AttemptState",
    "AttemptTrace",
    "CompiledPod",
    "DraAllocator",
    "DraDevices",
    "EvaluationCounts",
    "GangResult",
    "NodeVolumeLimitsRequest",
    "PreemptionDryRun",
    "Profile",
    "ScheduleResult",
    "Snapshot",
    "VolumeBindingRequest",
    "VolumeRestrictionsRequest",
    "VolumeZoneRequest",
    "num_feasible_nodes_to_find",
]

#: Plugins with Rust Filter kernels, in no particular order.
FILTER_PLUGINS: Final[list[str]]
#: Plugins with Rust Score kernels.
SCORE_PLUGINS: Final[list[str]]
#: Plugins whose upstream PreFilter the core runs (DynamicResources' runs in Python).
PRE_FILTER_PLUGINS: Final[list[str]]
#: Plugins with Rust Score kernels that have a PreScore upstream.
PRE_SCORE_PLUGINS: Final[list[str]]

def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes an attempt looks for (upstream's numFeasibleNodesToFind)."""

@final
class CompiledPod:
    """A pod as the kernels see it; build once per pod object and reuse across attempts.

    ``affinity`` is the pod's raw ``spec.affinity`` and ``topology_spread_constraints`` its
    raw ``spec.topologySpreadConstraints`` (API JSON). ``default_spread_selector`` is the
    selector of the Services/controllers the pod belongs to (PodTopologySpread's default
    constraints use it; None: the pod belongs to none). Raises ``ValueError`` naming the
    pod and field for malformed input.
    """

    def __new__(
        cls,
        uid: str,
        namespace: str,
        name: str,
        *,
        requests: dict[str, int],
        non_zero_cpu: int,
        non_zero_memory: int,
        node_name: str = ...,
        nominated_node_name: str = ...,
        tolerations: list[tuple[str, str, str, str]] = ...,
        labels: dict[str, str] | None = None,
        priority: int = 0,
        node_selector: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None,
        host_ports: list[tuple[str, str, int]] = ...,
        images: list[str] = ...,
        image_volumes: list[str] = ...,
        topology_spread_constraints: list[dict[str, Any]] | None = None,
        default_spread_selector: dict[str, Any] | None = None,
        deleting: bool = False,
        start_time: float | None = None,
        fit_score_requests: dict[str, int] | None = None,
        volumes: dict[str, Any] | None = None,
        required_features: list[str] = ...,
    ) -> CompiledPod:
        """``volumes`` is what ``spec.volumes`` says that the volume plugins read
        (``ksched.api.volume.volume_spec``): ``claims`` and ``limit_claims`` (claim
        names), ``disks`` as ``(kind, key, monitors, pool, image, read_only)`` and
        ``inline`` migrated volumes as ``(driver, handle)``. ``required_features`` are
        the node declared features scheduling the pod requires (NodeDeclaredFeatures)."""
    def with_requests(self, requests: list[Any]) -> CompiledPod:
        """A copy with the kernel requests of one attempt attached (the volume plugins'
        PreFilter results); a later request of one class replaces an earlier one."""
    def without_requests(self) -> CompiledPod:
        """A copy without kernel requests."""
    def sibling(self, uid: str, name: str, start_time: float | None) -> CompiledPod:
        """The kernel form of another pod stamped from the same template: this pod with
        ``uid``, ``name`` and ``start_time`` replaced and no kernel requests (its
        signature, once computed, is shared). The caller vouches that everything else
        the constructor reads is the same (``ksched.backend.compile.SiblingCompiler``)."""
    @property
    def has_requests(self) -> bool: ...
    @property
    def uid(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def requests(self) -> dict[str, int]: ...
    @property
    def required_features(self) -> list[str]:
        """The node declared features scheduling the pod requires."""
    @property
    def priority(self) -> int: ...
    @property
    def start_time(self) -> float | None:
        """``status.startTime`` in seconds since the epoch; None: not started."""
    @property
    def signature(self) -> bytes | None:
        """Equal for pods scheduling treats alike; None for a pod that names its node."""

@final
class VolumeRestrictionsRequest:
    """VolumeRestrictions' PreFilter result: the pod's ReadWriteOncePod claim names, or
    ``reject=(code, message)`` with code ``UnschedulableAndUnresolvable`` or ``Error``."""

    def __new__(
        cls, rwop_claims: list[str] = ..., *, reject: tuple[str, str] | None = None
    ) -> VolumeRestrictionsRequest: ...
    @property
    def reject(self) -> tuple[str, str] | None: ...

@final
class VolumeZoneRequest:
    """VolumeZone's PreFilter result: ``(label key, values)`` of the bound PVs' topology
    labels, or a ``reject``."""

    def __new__(
        cls,
        topologies: list[tuple[str, list[str]]] = ...,
        *,
        reject: tuple[str, str] | None = None,
    ) -> VolumeZoneRequest: ...
    @property
    def reject(self) -> tuple[str, str] | None: ...

@final
class NodeVolumeLimitsRequest:
    """NodeVolumeLimits' per-pod lookups: ``(driver, volume handle)`` of the pod's
    attachable volumes and, in volume order, the lookup errors
    ``(needs_csi_node, unresolvable, message)`` (the first that applies to a node is its
    Filter status)."""

    def __new__(
        cls,
        volumes: list[tuple[str, str]] = ...,
        *,
        errors: list[tuple[bool, bool, str]] = ...,
    ) -> NodeVolumeLimitsRequest: ...
    @property
    def volumes(self) -> list[tuple[str, str]]: ...
    @property
    def errors(self) -> list[tuple[bool, bool, str]]: ...

@final
class VolumeBindingRequest:
    """VolumeBinding's PreFilter result (see ``ksched.plugins.volume_binding``):
    ``bound`` one dict per bound claim (None: its PV is missing) with ``affinity`` and,
    for a migratable in-tree PV, ``migrated_plugin`` with ``migrated_affinity`` or
    ``migrated_error``; ``delay`` one dict per unbound WaitForFirstConsumer claim with
    ``selected_node``, ``prebound``/``candidates`` (``{"pv": index, "affinity": ...}``,
    candidates smallest first), ``provision`` (``{"supported": bool, "topologies":
    [...], "capacity": [(index, nodeTopology)]}`` or ``{"error": message}``),
    ``request`` and ``class``; ``match_order`` the claims to match, in upstream's size
    order; ``pvs`` ``(name, class, capacity)`` and ``capacities`` for scoring; or a
    ``reject``."""

    def __new__(
        cls,
        *,
        bound: list[dict[str, Any] | None] | None = None,
        delay: list[dict[str, Any]] | None = None,
        match_order: list[int] = ...,
        pvs: list[tuple[str, str, int]] = ...,
        capacities: list[int] = ...,
        reject: tuple[str, str] | None = None,
    ) -> VolumeBindingRequest: ...
    @property
    def reject(self) -> tuple[str, str] | None: ...

@final
class Profile:
    """The Filter plugins (in order), Score plugins with weights, their args (upstream
    JSON shape, keyed by plugin name) and the effective percentageOfNodesToScore.
    ``dynamic_resources_at`` is how many of ``filters`` come before DynamicResources'
    Filter in the profile's order (None: all of them). ``pre_scores`` are the plugins
    enabled at PreScore (None: those of ``scores`` that have one) and ``pre_filters``
    those enabled at PreFilter that the core runs (None: those of ``filters``), whose
    evaluations the results count."""

    def __new__(
        cls,
        filters: list[str],
        scores: list[tuple[str, int]],
        plugin_args: dict[str, dict[str, object]] | None = None,
        percentage_of_nodes_to_score: int = 0,
        dynamic_resources_at: int | None = None,
        pre_scores: list[str] | None = None,
        pre_filters: list[str] | None = None,
    ) -> Profile: ...
    @property
    def filters(self) -> list[str]: ...
    @property
    def scores(self) -> list[tuple[str, int]]: ...
    @property
    def percentage_of_nodes_to_score(self) -> int: ...
    @property
    def dynamic_resources_at(self) -> int | None: ...
    @property
    def pre_filters(self) -> list[str]: ...
    @property
    def pre_scores(self) -> list[str]: ...

@final
class DraDevices:
    """DynamicResources' view of the cluster's devices: every ResourceSlice and
    DeviceClass (API JSON, decoded once per change) and the compiled CEL selectors."""

    def __new__(cls) -> DraDevices: ...
    def upsert_slice(self, name: str, obj: bytes) -> None:
        """Add or replace a ResourceSlice; ValueError naming the field that is wrong."""
    def remove_slice(self, name: str) -> None: ...
    def upsert_class(self, name: str, obj: bytes) -> None:
        """Add or replace a DeviceClass; ValueError naming the field that is wrong."""
    def remove_class(self, name: str) -> None: ...
    @property
    def num_slices(self) -> int: ...
    @property
    def num_devices(self) -> int: ...
    def set_claim_allocation(self, key: str, allocation: bytes | None = None) -> None:
        """The ``status.allocation`` JSON of claim ``key`` (None: not allocated or gone):
        its devices count as taken, those of its previous allocation no longer."""
    @property
    def num_allocated_devices(self) -> int: ...
    def allocator(
        self,
        claims: list[tuple[str, bytes]],
        in_flight: list[tuple[str, bytes]] = ...,
        allocated: list[tuple[int, bytes | None, bool]] = ...,
        timeout: float | None = None,
        extended: tuple[
            list[tuple[str, bool]],
            list[tuple[list[int], bytes]] | None,
            bool,
            bool,
            list[tuple[str, str]],
        ]
        | None = None,
    ) -> DraAllocator:
        """DynamicResources' Filter for one pod and attempt: ``claims`` (``(ns/name,
        JSON)`` of each unallocated claim) allocated with every allocated claim's devices
        taken and those of the allocations in flight (``(ns/name, status.allocation
        JSON)``), and the allocated claims (``(index, nodeSelector JSON or None,
        unavailable everywhere)``); ``timeout`` bounds one node's allocation.
        ``extended`` is the pod's claim for extended resources backed by DRA:
        ``(resources (name, backed), the claim's variants (the indices, among the
        backed ones, of the resources the nodes using it get from DRA, and its JSON;
        None when the claim is allocated already), the earlier claim has requests, the
        pod names no claim itself, (resource, DeviceClass) of the backed ones)``."""
    def compile_error(self, expression: str) -> str | None:
        """The compile error of a CEL selector; None when it compiles."""

@final
class DraAllocator:
    """DynamicResources' Filter of one pod for one attempt: pass it to
    ``Snapshot.schedule(..., dra=...)``; afterwards it holds what the attempt found."""

    def allocate(
        self, name: str, labels: dict[str, str], allocatable: dict[str, int] = ...
    ) -> tuple[str, list[str]]:
        """The Filter on one node (labels, allocatable amounts) outside an attempt:
        ``("allocated", [AllocationResult JSON per pending claim])``,
        ``("unallocatable", [])``, ``("unavailable", [])``, ``("unschedulable",
        [reason])`` or ``("error", [message])``; without the GIL."""
    def results_for(self, node: str) -> list[str] | None:
        """The allocations found for a feasible node (JSON per pending claim)."""
    def variant_for(self, node: str) -> int | None:
        """The index of the extended claim's variant allocated on ``node``."""
    def unavailable_claims(self) -> list[int]:
        """Indices of the allocated claims that were not available on some node."""
    @property
    def error(self) -> str | None:
        """The error that failed the attempt (a broken claim or class, a timeout)."""
    @property
    def invocations(self) -> int: ...
    @property
    def num_claims(self) -> int: ...

@final
class EvaluationCounts:
    """Running totals of ``scheduler_plugin_evaluation_total`` for one framework: the
    scheduling calls given them (``counts=``) add their attempts' plugin evaluations;
    the metrics read them at scrape time."""

    def __new__(cls) -> EvaluationCounts: ...
    def counts(self) -> list[tuple[str, str, int]]:
        """``(plugin, extension point, count)`` of the non-zero totals."""
    @property
    def scored(self) -> int:
        """How many nodes the counted attempts scored, in all."""

@final
class GangResult:
    """The outcome of :meth:`Snapshot.schedule_gang`."""

    @property
    def results(self) -> list[ScheduleResult]:
        """One result per member, in the order they were given."""
    @property
    def placed(self) -> int:
        """How many members fit."""
    @property
    def need(self) -> int:
        """How many members had to fit for the group to be placed."""
    @property
    def schedulable(self) -> bool:
        """At least ``need`` members (and at least one) fit."""

@final
class ScheduleResult:
    """The outcome of one attempt."""

    @property
    def node(self) -> str | None:
        """The chosen node, or None when no node is feasible."""
    @property
    def evaluated_nodes(self) -> int: ...
    @property
    def feasible_nodes(self) -> int: ...
    @property
    def num_all_nodes(self) -> int: ...
    @property
    def statuses(self) -> list[tuple[str, bool, str, list[str]]]:
        """``(node, unresolvable, plugin, reasons)`` of every rejected node, when no node
        was feasible."""
    @property
    def scores(self) -> list[tuple[str, int]]:
        """``(node, total)`` of every scored node, best first (only with ``explain``)."""
    @property
    def pre_filter_msg(self) -> str | None:
        """The message of a PreFilter that rejected the pod outright."""
    @property
    def pre_filter_plugins(self) -> list[str]:
        """The plugins whose PreFilter narrowed the nodes to a set of names."""
    @property
    def pre_filter_error(self) -> bool:
        """That PreFilter returned an error (not UnschedulableAndUnresolvable)."""
    @property
    def filter_error(self) -> tuple[str, str] | None:
        """``(plugin, message)`` of a Filter that returned an error (the attempt fails)."""
    @property
    def plugin_evaluations(self) -> list[tuple[str, str, int]]:
        """``(plugin, extension point, count)``: the attempt's non-zero plugin
        evaluations (upstream's ``scheduler_plugin_evaluation_total``)."""
    @property
    def scored_nodes(self) -> int:
        """How many nodes were scored (0: the attempt did not get to Score)."""
    def reason_counts(self) -> dict[str, int]:
        """How many nodes gave each reason."""
    def status_of(self, node: str) -> tuple[bool, str, list[str]] | None:
        """``(unresolvable, plugin, reasons)`` of one rejected node, else None."""
    def unschedulable_plugins(self) -> list[str]:
        """The plugins that rejected some node, and those of :attr:`pre_filter_plugins`."""
    @property
    def num_resolvable(self) -> int:
        """Rejected nodes that are not UnschedulableAndUnresolvable."""
    def resolvable_nodes(self) -> list[str]:
        """Their names, in examination order."""

#: One node of a traced attempt: ``(node, outcome, status, scores, total)``; outcome is
#: ``"feasible"``, ``"rejected"`` or ``"not-examined"``, status ``(unresolvable, plugin,
#: reasons)`` of a rejected node, scores ``(plugin, raw, normalized)`` per Score plugin.
_TracedRow = tuple[str, str, tuple[bool, str, list[str]] | None, list[tuple[str, int, int]], int]

@final
class AttemptTrace:
    """One attempt traced node by node (``Snapshot.explain_attempt``)."""

    @property
    def nodes(self) -> list[_TracedRow]:
        """Every node: the examined ones in examination order, then the nodes outside a
        PreFilter result, then the ones not examined."""
    @property
    def chosen(self) -> str | None:
        """The node the attempt would choose (the tie-break drawn from a copy of the
        snapshot's random state)."""
    @property
    def evaluated_nodes(self) -> int: ...
    @property
    def feasible_nodes(self) -> int: ...
    @property
    def num_all_nodes(self) -> int: ...
    @property
    def num_to_find(self) -> int:
        """``numFeasibleNodesToFind`` (every examinable node without sampling)."""
    @property
    def start_index(self) -> int: ...
    @property
    def scored(self) -> bool:
        """Whether Score ran (two or more feasible nodes)."""
    @property
    def nominated(self) -> bool:
        """The pod's nominated node passed every Filter and was chosen alone."""
    @property
    def pre_filter_msg(self) -> str | None: ...

@final
class AttemptState:
    """A snapshot's start index and random state (``Snapshot.attempt_state``)."""

@final
class PreemptionDryRun:
    """DefaultPreemption's dry run: candidates ``(node, [victim uid, ...],
    num_pdb_violations)``, victims most important first, non-violating candidates first."""

    @property
    def examined(self) -> int: ...
    def __len__(self) -> int: ...
    def candidates(self) -> list[tuple[str, list[str], int]]: ...
    def best(self) -> tuple[str, list[str], int] | None:
        """The best candidate by upstream's pickOneNodeForPreemption."""
    @property
    def statuses(self) -> list[tuple[str, bool, str, list[str]]]:
        """The nodes examined that are no candidate, only when there is no candidate."""
    @property
    def errors(self) -> list[str]: ...
    @property
    def plugin_evaluations(self) -> list[tuple[str, str, int]]:
        """``(plugin, "Filter", count)``: the dry run's Filter evaluations."""

@final
class Snapshot:
    """Nodes and the pods accounted on them, as columns over node slots."""

    def __new__(cls, seed: int | None = None) -> Snapshot: ...
    def upsert_node(
        self,
        name: str,
        allocatable: dict[str, int],
        labels: dict[str, str] | None = None,
        taints: list[tuple[str, str, str]] = ...,
        unschedulable: bool = False,
        images: list[tuple[list[str], int]] = ...,
        declared_features: list[str] = ...,
    ) -> None:
        """``declared_features``: the node's declared features among the registered
        ones (NodeDeclaredFeatures)."""
    def upsert_namespace(self, name: str, labels: dict[str, str] | None = None) -> None: ...
    def remove_namespace(self, name: str) -> bool: ...
    def remove_node(self, name: str) -> bool: ...
    def add_pod(self, pod: CompiledPod, node_name: str) -> None: ...
    def assume(self, pod: CompiledPod, node_name: str) -> None: ...
    def confirm(self, uid: str, node_name: str) -> bool: ...
    def remove_pod(self, uid: str) -> bool: ...
    def is_assumed(self, uid: str) -> bool | None: ...
    def schedule(
        self,
        pod: CompiledPod,
        profile: Profile,
        explain: bool = False,
        use_nomination: bool = True,
        dra: DraAllocator | None = None,
        counts: EvaluationCounts | None = None,
    ) -> ScheduleResult:
        """One attempt; a pod with ``status.nominatedNodeName`` is tried on that node
        first (unless ``use_nomination`` is false) and placed there when it fits.
        ``dra`` (DynamicResources' Filter) runs on each node after the built-in filters.
        With ``counts``, the attempt's plugin evaluations are added to them."""
    def explain_attempt(
        self,
        pod: CompiledPod,
        profile: Profile,
        sample: bool = True,
        use_nomination: bool = True,
        dra: DraAllocator | None = None,
    ) -> AttemptTrace:
        """One attempt traced node by node, exactly as ``schedule`` would run it (with
        ``sample``: the ``percentageOfNodesToScore`` stop from the current start index;
        without: every node), choosing as ``schedule`` would but moving neither the start
        index nor the random state. ``dra`` as for ``schedule``."""
    def attempt_state(self) -> AttemptState:
        """The start index and random state the next attempt begins from."""
    def restore_attempt_state(self, state: AttemptState) -> None:
        """Put back a state saved by ``attempt_state``."""
    def schedule_batch(
        self, pods: list[CompiledPod], profile: Profile, counts: EvaluationCounts | None = None
    ) -> list[ScheduleResult]:
        """Place pods in order as successive ``schedule`` calls would (each placed pod
        accounted before the next); accounting is undone before returning. With
        ``counts``, every attempt's plugin evaluations are added to them."""
    def schedule_gang(
        self,
        pods: list[CompiledPod],
        profile: Profile,
        need: int,
        nodes: list[str] | None = None,
    ) -> GangResult:
        """Place a pod group all-or-nothing: ``pods`` in order, each member that fits
        accounted on its node before the next is tried (its own nomination suspended
        meanwhile), within the nodes named by ``nodes`` when given (a placement); the
        group is schedulable when at least ``need`` members fit. Accounting and
        nominations are restored before returning."""
    def filter_node(
        self, pod: CompiledPod, profile: Profile, node_name: str
    ) -> tuple[bool, str, list[str]] | None:
        """PreFilter and Filter on one node: None when the pod fits, else
        ``(unresolvable, plugin, reasons)``."""
    def preemption_dry_run(
        self,
        pod: CompiledPod,
        profile: Profile,
        potential: ScheduleResult | list[str],
        offset: int,
        num_candidates: int,
        pdbs: list[tuple[str, dict[str, Any] | None, int, list[str]]],
        now: float,
        dra: DraAllocator | None = None,
        counts: EvaluationCounts | None = None,
    ) -> PreemptionDryRun:
        """DefaultPreemption's dry run over the potential nodes (a failed result's
        resolvable rejections, or names) from ``offset``; the snapshot is unchanged.
        ``dra`` is the attempt's DynamicResources Filter; with ``counts``, its Filter
        evaluations are added to them."""
    def pick_one_node_for_preemption(
        self, candidates: list[tuple[str, list[str], int]], now: float
    ) -> int | None:
        """Index of the best candidate by upstream's ranking; None for none."""
    def set_dra_extended_resources(self, names: list[str]) -> None:
        """The extended resource names some DeviceClass maps to: NodeResourcesFit
        leaves them to DynamicResources on nodes whose allocatable has none."""
    @property
    def dra_extended_resources(self) -> list[str]: ...
    def dra_extended_patterns(self, names: list[str]) -> list[list[int]]:
        """The distinct sets, over the nodes, of the indices into ``names`` a node must
        get from DRA (its allocatable has none of them), sorted."""
    def volume_binding_plan(
        self, request: VolumeBindingRequest, node_name: str
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int | None]]] | None:
        """VolumeBinding's plan on one node: ``([(claim, pv)], [(claim, capacity)])``
        (indices into the request); None when the node is unknown or does not fit."""
    def set_csi_node(
        self,
        name: str,
        limits: list[tuple[str, int]],
        migrated: list[str] = ...,
        drivers: list[str] = ...,
    ) -> None:
        """Node ``name``'s CSINode: ``(driver, allocatable count)``, migrated in-tree
        plugins, driver names (the node need not exist yet)."""
    def remove_csi_node(self, name: str) -> bool: ...
    def set_node_attachments(self, name: str, attachments: list[tuple[str, str]]) -> None:
        """``(attacher, volume handle)`` of the VolumeAttachments to node ``name``."""
    def set_claim_volume(self, key: str, volume: tuple[str, str] | None) -> None:
        """The ``(driver, volume handle)`` claim ``namespace/name`` counts as (None:
        none), for NodeVolumeLimits."""
    def set_result_reuse(self, enabled: bool) -> None:
        """Whether attempts reuse the per-node results of earlier attempts of pods alike
        (on by default); the results are the same either way."""
    def set_domain_views(self, enabled: bool) -> None:
        """Whether PodTopologySpread's PreFilter keeps per-domain counts up to date
        between attempts (on by default); the counts are the same either way."""
    @property
    def result_reuse_keys(self) -> int:
        """How many pod signatures' per-node results are kept."""
    def set_nominated(self, pod: CompiledPod, node_name: str) -> None: ...
    def clear_nominated(self, uid: str) -> bool: ...
    @property
    def num_nominated(self) -> int: ...
    def spread_domains(
        self, pod: CompiledPod, profile: Profile
    ) -> list[tuple[int, int, list[tuple[str, int]]]]:
        """PodTopologySpread's PreFilter state: per DoNotSchedule constraint, the
        minimum its Filter uses, the second smallest count and every domain's count
        ``(value, count)`` sorted by value."""
    def active_filters(self, pod: CompiledPod, profile: Profile) -> list[str]:
        """The Filter plugins that can reject some node for ``pod`` (the others are
        skipped for it), in profile order."""
    def explain(
        self, pod: CompiledPod, profile: Profile, dra: DraAllocator | None = None
    ) -> list[dict[str, Any]]:
        """Every node's Filter outcome and, for feasible nodes, each Score plugin's raw and
        normalized score and the weighted total (no sampling)."""
    @property
    def num_nodes(self) -> int: ...
    @property
    def num_pods(self) -> int: ...
    @property
    def generation(self) -> int: ...
    def node_names(self) -> list[str]: ...
    def requested(self, node: str, resource: str) -> int | None: ...
    def allocatable(self, node: str, resource: str) -> int | None: ...
    def resource_columns(
        self, resource: str
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def pod_counts(self) -> npt.NDArray[np.int64]: ...
