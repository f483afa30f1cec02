"""A scheduling profile: one ``schedulerName`` and the plugins that run for its pods.

The built-in Filter and Score plugins that have Rust kernels run as one call into
:class:`ksched._core.Profile`; the profile keeps their order (Filter order decides which
reason a node reports, as upstream stops at the first failing filter) and their weights.
DynamicResources' Filter runs in the same node loop, at its place in that order
(``dynamic_resources_at``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched import _core

DEFAULT_SCHEDULER_NAME = "default-scheduler"

#: v1.36's default Filter order and Score weights, restricted to the plugins that have
#: Rust kernels in this build.
DEFAULT_FILTERS: tuple[str, ...] = tuple(
    p
    for p in (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        # DynamicResources' Filter comes here (``DEFAULT_DYNAMIC_RESOURCES_AT``).
        "NodeDeclaredFeatures",
    )
    if p in _core.FILTER_PLUGINS
)
#: How many of the default filters come before DynamicResources' Filter.
DEFAULT_DYNAMIC_RESOURCES_AT: int = sum(1 for p in DEFAULT_FILTERS if p != "NodeDeclaredFeatures")
DEFAULT_SCORES: tuple[tuple[str, int], ...] = tuple(
    (p, w)
    for p, w in (
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    )
    if p in _core.SCORE_PLUGINS
)


@dataclass(slots=True)
class Profile:
    """A profile ready to schedule: its name and its compiled kernel configuration."""

    scheduler_name: str
    filters: tuple[str, ...]
    scores: tuple[tuple[str, int], ...]
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int = 0
    #: Python plugin instances (any extension point, see ksched.framework.interface), in
    #: configured order; None means v1.36's Python-side defaults (PrioritySort,
    #: SchedulingGates, DefaultBinder). Instances are bound to one scheduler.
    plugins: tuple[Any, ...] | None = None
    #: Topology-aware workload scheduling (TopologyAwareWorkloadScheduling gate): the
    #: profile's placementGenerate plugins and its placementScore plugins with weights.
    placement_generate: tuple[str, ...] = ()
    placement_score: tuple[tuple[str, int], ...] = ()
    #: How many of ``filters`` come before DynamicResources' Filter in the profile's
    #: Filter order (None: all of them).
    dynamic_resources_at: int | None = None
    #: ``(plugin, extension point)`` of the plugins enabled at PreFilter, Filter,
    #: PreScore and Score (``scheduler_plugin_evaluation_total``'s series); None: from
    #: the kernels and the Python plugins.
    evaluated: tuple[tuple[str, str], ...] | None = None
    kernels: _core.Profile = field(init=False)

    def __post_init__(self) -> None:
        pre_scores = pre_filters = None
        if self.evaluated is not None:
            pre_scores = [
                p
                for p, point in self.evaluated
                if point == "PreScore" and p in _core.PRE_SCORE_PLUGINS
            ]
            pre_filters = [
                p
                for p, point in self.evaluated
                if point == "PreFilter" and p in _core.PRE_FILTER_PLUGINS
            ]
        self.kernels = _core.Profile(
            list(self.filters),
            list(self.scores),
            {k: dict(v) for k, v in self.plugin_args.items()},
            self.percentage_of_nodes_to_score,
            self.dynamic_resources_at,
            pre_scores,
            pre_filters,
        )


def default_profile(
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    *,
    percentage_of_nodes_to_score: int = 0,
    plugin_args: Mapping[str, Mapping[str, Any]] | None = None,
    filters: Sequence[str] = DEFAULT_FILTERS,
    scores: Sequence[tuple[str, int]] = DEFAULT_SCORES,
) -> Profile:
    """The v1.36 default profile (as far as this build has kernels). With other
    ``filters``, DynamicResources' Filter runs before NodeDeclaredFeatures, or last."""
    filters = tuple(filters)
    dra_at = filters.index("NodeDeclaredFeatures") if "NodeDeclaredFeatures" in filters else None
    return Profile(
        scheduler_name,
        filters,
        tuple(scores),
        plugin_args or {},
        percentage_of_nodes_to_score,
        dynamic_resources_at=dra_at,
    )
