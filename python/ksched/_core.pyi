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
    "SCORE_PLUGINS",
    "AttemptState",
    "AttemptTrace",
    "CompiledPod",
    "PreemptionDryRun",
    "Profile",
    "ScheduleResult",
    "Snapshot",
    "num_feasible_nodes_to_find",
]

#: Plugins with Rust Filter kernels, in no particular order.
FILTER_PLUGINS: Final[list[str]]
#: Plugins with Rust Score kernels.
SCORE_PLUGINS: Final[list[str]]

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
        topology_spread_constraints: list[dict[str, Any]] | None = None,
        default_spread_selector: dict[str, Any] | None = None,
        deleting: bool = False,
        start_time: float | None = None,
    ) -> CompiledPod: ...
    @property
    def uid(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def requests(self) -> dict[str, int]: ...
    @property
    def priority(self) -> int: ...
    @property
    def start_time(self) -> float | None:
        """``status.startTime`` in seconds since the epoch; None: not started."""
    @property
    def signature(self) -> bytes | None:
        """Equal for pods scheduling treats alike; None for a pod that names its node."""

@final
class Profile:
    """The Filter plugins (in order), Score plugins with weights, their args (upstream
    JSON shape, keyed by plugin name) and the effective percentageOfNodesToScore."""

    def __new__(
        cls,
        filters: list[str],
        scores: list[tuple[str, int]],
        plugin_args: dict[str, dict[str, object]] | None = None,
        percentage_of_nodes_to_score: int = 0,
    ) -> Profile: ...
    @property
    def filters(self) -> list[str]: ...
    @property
    def scores(self) -> list[tuple[str, int]]: ...
    @property
    def percentage_of_nodes_to_score(self) -> int: ...

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
    def reason_counts(self) -> dict[str, int]:
        """How many nodes gave each reason."""
    def status_of(self, node: str) -> tuple[bool, str, list[str]] | None:
        """``(unresolvable, plugin, reasons)`` of one rejected node, else None."""
    def unschedulable_plugins(self) -> list[str]:
        """The plugins that rejected some node."""
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
    ) -> None: ...
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
    ) -> ScheduleResult:
        """One attempt; a pod with ``status.nominatedNodeName`` is tried on that node
        first (unless ``use_nomination`` is false) and placed there when it fits."""
    def explain_attempt(
        self,
        pod: CompiledPod,
        profile: Profile,
        sample: bool = True,
        use_nomination: bool = True,
    ) -> AttemptTrace:
        """One attempt traced node by node, exactly as ``schedule`` would run it (with
        ``sample``: the ``percentageOfNodesToScore`` stop from the current start index;
        without: every node), choosing as ``schedule`` would but moving neither the start
        index nor the random state."""
    def attempt_state(self) -> AttemptState:
        """The start index and random state the next attempt begins from."""
    def restore_attempt_state(self, state: AttemptState) -> None:
        """Put back a state saved by ``attempt_state``."""
    def schedule_batch(self, pods: list[CompiledPod], profile: Profile) -> list[ScheduleResult]:
        """Place pods in order as successive ``schedule`` calls would (each placed pod
        accounted before the next); accounting is undone before returning."""
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
    ) -> PreemptionDryRun:
        """DefaultPreemption's dry run over the potential nodes (a failed result's
        resolvable rejections, or names) from ``offset``; the snapshot is unchanged."""
    def pick_one_node_for_preemption(
        self, candidates: list[tuple[str, list[str], int]], now: float
    ) -> int | None:
        """Index of the best candidate by upstream's ranking; None for none."""
    def set_nominated(self, pod: CompiledPod, node_name: str) -> None: ...
    def clear_nominated(self, uid: str) -> bool: ...
    @property
    def num_nominated(self) -> int: ...
    def explain(self, pod: CompiledPod, profile: Profile) -> list[dict[str, Any]]:
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
