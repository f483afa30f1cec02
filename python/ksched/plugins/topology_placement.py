"""Topology-aware workload scheduling (TopologyAwareWorkloadScheduling gate, v1.36):
the placement plugins of a pod group cycle.

A *placement* is a set of nodes a pod group is tried on as a whole (upstream
``fwk.Placement``). With the gate on, the pod group cycle (:mod:`ksched.schedule_group`)
asks the profile's placementGenerate plugin for placements, runs the group's algorithm
restricted to each, and when several succeed ranks them with the placementScore
plugins (each normalized to 0-100 where it normalizes, weighted, summed; ties broken at
random). The plugins, as upstream:

* **TopologyPlacementGenerator** (``framework/plugins/topologyaware``): for a PodGroup
  with ``spec.schedulingConstraints.topology[0].key``, one placement per value of that
  node label (nodes without it are in none), only the domain of the group's members
  already scheduled when there are some; without a constraint, all nodes.
* **PodGroupPodsCount** (``framework/plugins/podgrouppodscount``): the group's
  scheduled members plus the members the placement takes; normalized by the largest.
* **NodeResourcesFit** (its ``ScorePlacement``): MostAllocated over the placement's
  nodes taken together, with the members' requests added, on the profile's
  ``scoringStrategy.resources`` and weights (non-zero requests for cpu and memory).

Placements are generated in the order their domain first appears among the nodes
(upstream: Go's map order, random), which only matters for which placement's statuses
a group that fits none reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ksched.api.pod import Pod
from ksched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name
from ksched.framework.status import Code, Status

if TYPE_CHECKING:
    from ksched.api.workloads import PodGroup
    from ksched.framework.interface import Handle

__all__ = [
    "PLACEMENT_SCORERS",
    "POD_GROUP_PODS_COUNT",
    "TOPOLOGY_PLACEMENT_GENERATOR",
    "Placement",
    "PlacementAssignments",
    "generate_placements",
    "score_placements",
]

TOPOLOGY_PLACEMENT_GENERATOR: Final = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT: Final = "PodGroupPodsCount"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
MAX_SCORE: Final = 100
ERR_NO_PLACEMENTS: Final = "no feasible placements found"
ERR_NOTHING_ASSIGNED: Final = (
    "no pods from pod group are assigned to any of the candidate placements"
)


@dataclass(slots=True)
class Placement:
    """A set of nodes (examination order); ``name`` is the topology domain."""

    name: str
    nodes: list[str]


@dataclass(slots=True)
class PlacementAssignments:
    """A successful placement and the members it takes (``PodGroupAssignments``)."""

    placement: Placement
    proposed: list[Pod] = field(default_factory=list)


def generate_placements(
    h: Handle,
    group: PodGroup | None,
    namespace: str,
    name: str,
    nodes: list[str],
    scheduled: Sequence[Pod] | None,
) -> list[Placement] | Status:
    """TopologyPlacementGenerator's ``GeneratePlacements`` from all ``nodes``
    (upstream ``RunPlacementGeneratePlugins`` turns an empty list into "no feasible
    placements found"). ``scheduled`` is the group's scheduled members (None: the group
    has no state)."""
    if group is None:
        return Status(
            Code.ERROR,
            f'podgroup.scheduling.k8s.io "{name}" not found',
            plugin=TOPOLOGY_PLACEMENT_GENERATOR,
        )
    key = group.topology_key
    parent = Placement("", nodes)
    if key is None:
        return [parent]
    if scheduled is None:
        return Status(
            Code.ERROR,
            f"pod group state not found for pod group {namespace}/{name}",
            plugin=TOPOLOGY_PLACEMENT_GENERATOR,
        )
    required: str | None = None
    for pod in scheduled:
        info = h.node_info(pod.node_name) if pod.node_name else None
        err = ""
        if info is None or info.node is None:
            err = (
                f"getting node for pod {pod.namespace}/{pod.name}: nodeinfo not found for "
                f'node name "{pod.node_name}"'
            )
        else:
            domain = info.node.labels.get(key)
            if domain is None:
                err = f"no topology domain found for pod {pod.namespace}/{pod.name}"
            elif required is not None and required != domain:
                err = f"more than 1 domain found for pod group: {required}, {domain}"
            else:
                required = domain
        if err:
            return Status(
                Code.ERROR,
                f"cannot determine domain for already scheduled pods: {err}",
                plugin=TOPOLOGY_PLACEMENT_GENERATOR,
            )
    by_domain: dict[str, list[str]] = {}
    for node in nodes:
        info = h.node_info(node)
        domain = info.node.labels.get(key) if info.node is not None else None
        if domain is None or (required is not None and domain != required):
            continue
        by_domain.setdefault(domain, []).append(node)
    return [Placement(d, ns) for d, ns in by_domain.items()]


# ---- placement scoring ----------------------------------------------------------------------

#: ``(handle, profile args, group's scheduled count, assignments) -> raw score``.
Scorer = Callable[[Any, Mapping[str, Mapping[str, Any]], int, PlacementAssignments], int]


def _pods_count(
    h: Any, args: Mapping[str, Mapping[str, Any]], scheduled: int, a: PlacementAssignments
) -> int:
    return scheduled + len(a.proposed)


def _normalize_pods_count(scores: list[int]) -> Status | None:
    top = max(scores, default=0)
    if top == 0:
        return Status(Code.ERROR, ERR_NOTHING_ASSIGNED, plugin=POD_GROUP_PODS_COUNT)
    for i, s in enumerate(scores):
        scores[i] = s * MAX_SCORE // top
    return None


def _non_zero_request(pod: Pod, resource: str) -> int:
    if resource == CPU:
        return pod.non_zero_cpu
    if resource == MEMORY:
        return pod.non_zero_memory
    return int(pod.requests.get(resource, 0))


def _fit_placement(
    h: Any, args: Mapping[str, Mapping[str, Any]], scheduled: int, a: PlacementAssignments
) -> int:
    """``resourceAllocationScorer.scorePlacement`` with the MostAllocated scorer."""
    fit = args.get(NODE_RESOURCES_FIT) or {}
    strategy = fit.get("scoringStrategy") or {}
    specs = strategy.get("resources") or [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]
    names = [str(r.get("name")) for r in specs]
    weights = [int(r.get("weight") or 1) for r in specs]
    requested = [sum(_non_zero_request(p, r) for p in a.proposed) for r in names]
    allocatable = [0] * len(names)
    for node in a.placement.nodes:
        info = h.node_info(node)
        if info.node is None:
            continue
        pods = [cp.pod for cp in h.pods_on_node(node)]
        for i, r in enumerate(names):
            if requested[i] == 0 and is_scalar_resource_name(r):
                continue
            alloc = int(info.node.allocatable.get(r, 0))
            if r in (CPU, MEMORY):
                used = sum(_non_zero_request(p, r) for p in pods)
            elif r == EPHEMERAL_STORAGE or (
                is_scalar_resource_name(r) and r in info.node.allocatable
            ):
                used = sum(int(p.requests.get(r, 0)) for p in pods)
            else:
                alloc, used = 0, 0  # not a resource the scorer reads
            if alloc == 0:
                continue
            allocatable[i] += alloc
            requested[i] += used
    score = weight_sum = 0
    for i in range(len(names)):
        if allocatable[i] == 0:
            continue
        req = min(requested[i], allocatable[i])
        score += req * MAX_SCORE // allocatable[i] * weights[i]
        weight_sum += weights[i]
    return score // weight_sum if weight_sum else 0


#: placementScore plugins: raw scorer and optional normalizer.
PLACEMENT_SCORERS: Final[
    Mapping[str, tuple[Scorer, Callable[[list[int]], Status | None] | None]]
] = {
    POD_GROUP_PODS_COUNT: (_pods_count, _normalize_pods_count),
    NODE_RESOURCES_FIT: (_fit_placement, None),
}


def score_placements(
    h: Any,
    plugins: Sequence[tuple[str, int]],
    args: Mapping[str, Mapping[str, Any]],
    scheduled: int,
    candidates: Sequence[PlacementAssignments],
) -> list[int] | Status:
    """Upstream ``RunPlacementScorePlugins``: each candidate's weighted total."""
    totals = [0] * len(candidates)
    for name, weight in plugins:
        scorer, normalize = PLACEMENT_SCORERS[name]
        scores = [scorer(h, args, scheduled, c) for c in candidates]
        if normalize is not None:
            s = normalize(scores)
            if s is not None:
                return Status(
                    Code.ERROR,
                    "running NormalizePlacementScore on PlacementScore plugins: plugin "
                    f'"{name}" failed with: {s.message}',
                )
        for i, score in enumerate(scores):
            if not 0 <= score <= MAX_SCORE:
                return Status(
                    Code.ERROR,
                    "applying score defaultWeights on PlacementScore plugins: plugin "
                    f'"{name}" returns an invalid score {score}, it should in the range of '
                    f"[0, {MAX_SCORE}] after normalizing",
                )
            totals[i] += score * weight
    return totals
