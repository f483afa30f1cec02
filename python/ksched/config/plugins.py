"""Built-in plugin names, the extension points they implement, and multiPoint expansion.

Upstream the scheduler framework learns which extension points a plugin implements
by Go interface assertions on the plugin object (``framework.go``,
``expandMultiPointPlugins``).  ksched's config layer must answer the same question
before any plugin object exists (to validate and to print the expanded profile), so
the answer is written down here as a static table, :data:`PLUGIN_EXTENSION_POINTS`,
transcribed from the v1.36 plugin sources under
``pkg/scheduler/framework/plugins/*`` and the expected values in
``pkg/scheduler/apis/config/testing/defaults/defaults.go`` (``ExpandedPluginsV1``).
Out-of-tree plugins supply their own rows through the ``extension_points`` argument
(the plugin registry knows them).

:func:`expand_profile_plugins` reproduces the framework's rules:

* explicit per-point ``enabled`` lists are installed first; a plugin that does not
  implement the point or appears twice is an error (``updatePluginList``);
* then every ``multiPoint.enabled`` plugin is added to each point it implements,
  unless the point disables it or ``*``; a plugin that is also listed explicitly at
  that point keeps its explicit place (explicit overrides multiPoint), and the final
  order is: overridden plugins, then multiPoint plugins, then the other explicit ones;
* Score weights come from ``score.enabled`` first, then ``multiPoint.enabled``; a
  weight of 0 (or unset) means 1 (``getScoreWeights``).

The placement points of topology-aware workload scheduling (``placementGenerate``,
``placementScore``, alpha in v1.36) are expanded separately, by
:func:`expand_placement_plugins`, when the TopologyAwareWorkloadScheduling gate is on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ksched.config import errors as ferr
from ksched.config.types import KubeSchedulerProfile, Plugins, PluginSet

__all__ = [
    "BUILT_IN_PLUGINS",
    "EXTENSION_POINTS",
    "IN_TREE_PLUGINS",
    "PLUGIN_EXTENSION_POINTS",
    "REMOVED_PLUGINS",
    "SCHEDULER_PLUGINS_EXTENSION_POINTS",
    "ExpansionError",
    "expand_placement_plugins",
    "expand_profile_plugins",
    "known_plugin_names",
]

# Plugin names (pkg/scheduler/framework/plugins/names/names.go, v1.36).
PRIORITY_SORT: Final = "PrioritySort"
DEFAULT_BINDER: Final = "DefaultBinder"
DEFAULT_PREEMPTION: Final = "DefaultPreemption"
DYNAMIC_RESOURCES: Final = "DynamicResources"
IMAGE_LOCALITY: Final = "ImageLocality"
INTER_POD_AFFINITY: Final = "InterPodAffinity"
NODE_AFFINITY: Final = "NodeAffinity"
NODE_DECLARED_FEATURES: Final = "NodeDeclaredFeatures"
NODE_NAME: Final = "NodeName"
NODE_PORTS: Final = "NodePorts"
NODE_RESOURCES_BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
NODE_UNSCHEDULABLE: Final = "NodeUnschedulable"
NODE_VOLUME_LIMITS: Final = "NodeVolumeLimits"
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"
SCHEDULING_GATES: Final = "SchedulingGates"
TAINT_TOLERATION: Final = "TaintToleration"
VOLUME_BINDING: Final = "VolumeBinding"
VOLUME_RESTRICTIONS: Final = "VolumeRestrictions"
VOLUME_ZONE: Final = "VolumeZone"
GANG_SCHEDULING: Final = "GangScheduling"
TOPOLOGY_PLACEMENT_GENERATOR: Final = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT: Final = "PodGroupPodsCount"

#: Extension points in the order a pod meets them (JSON names of ``Plugins`` fields).
EXTENSION_POINTS: Final[tuple[str, ...]] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
#: Extension points added in v1.36 for topology-aware workload scheduling (alpha).
PLACEMENT_POINTS: Final[tuple[str, ...]] = ("placementGenerate", "placementScore")

#: Go interface name per extension point, as upstream's error messages spell it.
INTERFACE_NAMES: Final = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
    "placementGenerate": "PlacementGeneratePlugin",
    "placementScore": "PlacementScorePlugin",
}

#: Which extension points each in-tree plugin of v1.36 implements.
PLUGIN_EXTENSION_POINTS: Final[Mapping[str, frozenset[str]]] = {
    SCHEDULING_GATES: frozenset({"preEnqueue"}),
    PRIORITY_SORT: frozenset({"queueSort"}),
    NODE_UNSCHEDULABLE: frozenset({"filter"}),
    NODE_NAME: frozenset({"filter"}),
    TAINT_TOLERATION: frozenset({"filter", "preScore", "score"}),
    NODE_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    NODE_PORTS: frozenset({"preFilter", "filter"}),
    NODE_RESOURCES_FIT: frozenset({"preFilter", "filter", "preScore", "score", "placementScore"}),
    VOLUME_RESTRICTIONS: frozenset({"preFilter", "filter"}),
    NODE_VOLUME_LIMITS: frozenset({"preFilter", "filter"}),
    VOLUME_BINDING: frozenset({"preFilter", "filter", "preScore", "score", "reserve", "preBind"}),
    VOLUME_ZONE: frozenset({"preFilter", "filter"}),
    POD_TOPOLOGY_SPREAD: frozenset({"preFilter", "filter", "preScore", "score"}),
    INTER_POD_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    DYNAMIC_RESOURCES: frozenset(
        {"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"}
    ),
    DEFAULT_PREEMPTION: frozenset({"preEnqueue", "postFilter"}),
    NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({"preScore", "score"}),
    IMAGE_LOCALITY: frozenset({"score"}),
    DEFAULT_BINDER: frozenset({"bind"}),
    NODE_DECLARED_FEATURES: frozenset({"preFilter", "filter"}),
    # Registered in v1.36 but only useful behind alpha gates (GenericWorkload,
    # TopologyAwareWorkloadScheduling); listed so configs naming them validate.
    GANG_SCHEDULING: frozenset({"preEnqueue", "permit"}),
    TOPOLOGY_PLACEMENT_GENERATOR: frozenset({"placementGenerate"}),
    POD_GROUP_PODS_COUNT: frozenset({"placementScore"}),
}

#: Every plugin name the v1.36 in-tree registry knows.
IN_TREE_PLUGINS: Final[frozenset[str]] = frozenset(PLUGIN_EXTENSION_POINTS)

COSCHEDULING: Final = "Coscheduling"
CAPACITY_SCHEDULING: Final = "CapacityScheduling"
#: The kubernetes-sigs/scheduler-plugins plugins ksched builds in, as a
#: scheduler-plugins kube-scheduler binary registers them next to the in-tree ones.
SCHEDULER_PLUGINS_EXTENSION_POINTS: Final[Mapping[str, frozenset[str]]] = {
    COSCHEDULING: frozenset({"queueSort", "preFilter", "postFilter", "permit", "reserve"}),
    CAPACITY_SCHEDULING: frozenset({"preFilter", "postFilter", "reserve"}),
}
#: Every plugin name built into ksched (in-tree and scheduler-plugins).
BUILT_IN_PLUGINS: Final[frozenset[str]] = IN_TREE_PLUGINS | frozenset(
    SCHEDULER_PLUGINS_EXTENSION_POINTS
)

#: Plugins that existed once and were removed: name -> (the config API version from
#: which upstream rejects them, as in ``invalidPluginsByVersion`` of validation.go;
#: a note saying when they went and what replaces them).
REMOVED_PLUGINS: Final[Mapping[str, tuple[str, str]]] = {
    "NodeLabel": (
        "kubescheduler.config.k8s.io/v1beta2",
        "not available since Kubernetes v1.22, use NodeAffinity",
    ),
    "ServiceAffinity": (
        "kubescheduler.config.k8s.io/v1beta2",
        "not available since Kubernetes v1.22, use InterPodAffinity",
    ),
    "NodeResourcesLeastAllocated": (
        "kubescheduler.config.k8s.io/v1beta2",
        "not available since Kubernetes v1.22, use NodeResourcesFit with "
        "scoringStrategy.type LeastAllocated",
    ),
    "NodeResourcesMostAllocated": (
        "kubescheduler.config.k8s.io/v1beta2",
        "not available since Kubernetes v1.22, use NodeResourcesFit with "
        "scoringStrategy.type MostAllocated",
    ),
    "RequestedToCapacityRatio": (
        "kubescheduler.config.k8s.io/v1beta2",
        "not available since Kubernetes v1.22, use NodeResourcesFit with "
        "scoringStrategy.type RequestedToCapacityRatio",
    ),
    "NodePreferAvoidPods": (
        "kubescheduler.config.k8s.io/v1beta3",
        "not available since Kubernetes v1.23, use node taints",
    ),
    **{
        name: (
            "kubescheduler.config.k8s.io/v1",
            "removed in Kubernetes v1.32, NodeVolumeLimits covers these volumes via CSI",
        )
        for name in ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
    },
}


def known_plugin_names(extra: Iterable[str] = ()) -> frozenset[str]:
    """Built-in plugin names plus ``extra`` (out-of-tree names from the plugin registry)."""
    return BUILT_IN_PLUGINS | frozenset(extra)


class ExpansionError(Exception):
    """The framework would refuse to build this profile (upstream ``NewFramework`` error)."""


def _points_of(name: str, extension_points: Mapping[str, Iterable[str]]) -> frozenset[str] | None:
    if name in extension_points:
        return frozenset(extension_points[name])
    return PLUGIN_EXTENSION_POINTS.get(name) or SCHEDULER_PLUGINS_EXTENSION_POINTS.get(name)


def _expand(
    plugins: Plugins,
    extension_points: Mapping[str, Iterable[str]],
    path: str,
    points: tuple[str, ...] = EXTENSION_POINTS,
) -> tuple[dict[str, list[str]], list[ferr.FieldError]]:
    errs: list[ferr.FieldError] = []
    result: dict[str, list[str]] = {}
    multi = plugins.multi_point
    for point in points:
        iface = INTERFACE_NAMES[point]
        ps: PluginSet = plugins.point(point)
        explicit: list[str] = []
        for i, p in enumerate(ps.enabled):
            impl = _points_of(p.name, extension_points)
            ppath = f"{path}.{point}.enabled[{i}]"
            if impl is None:
                # Out-of-tree plugin without a table row: trust its explicit placement.
                impl = frozenset({point})
            if point not in impl:
                errs.append(
                    ferr.invalid(ppath, p.name, f'plugin "{p.name}" does not extend {iface} plugin')
                )
                continue
            if p.name in explicit:
                errs.append(
                    ferr.invalid(
                        ppath, p.name, f'plugin "{p.name}" already registered as "{iface}"'
                    )
                )
                continue
            explicit.append(p.name)
        disabled = {p.name for p in ps.disabled}
        if "*" in disabled:
            result[point] = explicit
            continue
        overrides: list[str] = []
        from_multi: list[str] = []
        for i, p in enumerate(multi.enabled):
            impl = _points_of(p.name, extension_points)
            if impl is None or point not in impl or p.name in disabled:
                continue
            if p.name in explicit:
                if p.name not in overrides:
                    overrides.append(p.name)
                continue
            if p.name in from_multi:
                errs.append(
                    ferr.invalid(
                        f"{path}.multiPoint.enabled[{i}]",
                        p.name,
                        f'plugin "{p.name}" already registered as "{iface}"',
                    )
                )
                continue
            from_multi.append(p.name)
        ordered = [n for n in explicit if n in overrides]
        ordered += from_multi
        ordered += [n for n in explicit if n not in overrides]
        result[point] = ordered
    return result, errs


def _score_weights(
    plugins: Plugins, score_plugins: list[str], point: str = "score"
) -> dict[str, int]:
    weights: dict[str, int] = {}
    for p in [*plugins.point(point).enabled, *plugins.multi_point.enabled]:
        if p.name not in score_plugins or p.name in weights:
            continue
        weights[p.name] = p.weight or 1
    return weights


def expansion_errors(
    profile: KubeSchedulerProfile,
    path: str,
    extension_points: Mapping[str, Iterable[str]] | None = None,
) -> list[ferr.FieldError]:
    """Errors the framework would raise while installing this profile's plugins."""
    if profile.plugins is None:
        return []
    _, errs = _expand(profile.plugins, extension_points or {}, path)
    return errs


def expand_profile_plugins(
    profile: KubeSchedulerProfile,
    extension_points: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """Per-extension-point plugin lists a framework builds from a (defaulted) profile.

    Returns ``{"preFilter": [("NodeAffinity", 0), ...], "score": [("TaintToleration", 3),
    ...], ...}`` with every point of :data:`EXTENSION_POINTS`.  The weight is the
    effective Score weight for the ``score`` point and 0 elsewhere.  Raises
    :class:`ExpansionError` when the framework would reject the profile.
    ``extension_points`` adds rows for out-of-tree plugins.
    """
    if profile.plugins is None:
        return {point: [] for point in EXTENSION_POINTS}
    expanded, errs = _expand(profile.plugins, extension_points or {}, "plugins")
    if errs:
        raise ExpansionError(ferr.aggregate_message(errs))
    weights = _score_weights(profile.plugins, expanded["score"])
    out: dict[str, list[tuple[str, int]]] = {}
    for point in EXTENSION_POINTS:
        if point == "score":
            out[point] = [(n, weights.get(n, 1)) for n in expanded[point]]
        else:
            out[point] = [(n, 0) for n in expanded[point]]
    return out


def expand_placement_plugins(
    profile: KubeSchedulerProfile,
    extension_points: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """:func:`expand_profile_plugins` for the placement points of topology-aware
    workload scheduling (``placementGenerate``, ``placementScore`` with the effective
    weights, upstream ``getValidScoreWeights`` over ``placementScore`` then
    ``multiPoint``). Raises :class:`ExpansionError` as the framework would."""
    if profile.plugins is None:
        return {point: [] for point in PLACEMENT_POINTS}
    expanded, errs = _expand(profile.plugins, extension_points or {}, "plugins", PLACEMENT_POINTS)
    if errs:
        raise ExpansionError(ferr.aggregate_message(errs))
    if len(expanded["placementGenerate"]) > 1:
        raise ExpansionError(
            "at most one placement generate plugin is allowed for profile with scheduler "
            f'name "{profile.scheduler_name or ""}"'
        )
    weights = _score_weights(profile.plugins, expanded["placementScore"], "placementScore")
    return {
        "placementGenerate": [(n, 0) for n in expanded["placementGenerate"]],
        "placementScore": [(n, weights.get(n, 1)) for n in expanded["placementScore"]],
    }
