"""Defaulting of ``KubeSchedulerConfiguration`` v1, as kube-scheduler v1.36 does it.

Mirrors ``pkg/scheduler/apis/config/v1/defaults.go`` (``SetDefaults_*``) and
``default_plugins.go`` (``getDefaultPlugins``, ``applyFeatureGates``,
``mergePlugins``/``mergePluginSet``), plus component-base's
``RecommendedDefaultLeaderElectionConfiguration``.

The v1.36 default plugin set lives in ``multiPoint`` only; a user's plugin sets are
merged into it per extension point with upstream's rules: a re-configured default
keeps its position and takes the user's entry (weight included), custom plugins are
appended in the user's order, ``disabled`` removes defaults (``*`` removes all of
them at that point) and disabled names are carried along so the framework's
multiPoint expansion can skip them.

Which defaults apply depends on feature gates; :class:`FeatureGates` holds the v1.36
default of every gate that changes configuration defaults or validation, profiles or
the scheduler itself (from ``pkg/features/kube_features.go``'s versioned specs) so
tests can flip one. ``ksched run`` builds it from the command line's gates
(:meth:`ksched.config.features.FeatureGate.config_gates`, through :data:`GATE_FIELDS`);
every gate here is in :data:`ksched.config.features.ACTED_ON`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from ksched.config import plugins as names
from ksched.config.duration import Duration
from ksched.config.types import (
    API_VERSION,
    ARGS_TYPES,
    CoschedulingArgs,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    Plugin,
    PluginArgs,
    PluginConfig,
    Plugins,
    PluginSet,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    UnknownArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

__all__ = [
    "DEFAULT_FEATURE_GATES",
    "DEFAULT_SCHEDULER_NAME",
    "GATE_FIELDS",
    "FeatureGates",
    "default_args",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
    "set_defaults",
    "set_defaults_args",
]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE: Final = 0
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
DYNAMIC_RESOURCES_FILTER_TIMEOUT: Final = Duration.seconds(10)
DYNAMIC_RESOURCES_BINDING_TIMEOUT: Final = Duration.seconds(600)


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """Feature gates that change config defaults or validation, profiles or the
    scheduler (queue, batching, pod groups); v1.36 defaults."""

    dynamic_resource_allocation: bool = True  # GA in 1.34, locked on in 1.35
    dra_scheduler_filter_timeout: bool = True  # beta, on since 1.34
    dra_device_binding_conditions: bool = True  # beta, on since 1.36
    dra_resource_claim_device_status: bool = True  # beta, on since 1.33
    dra_extended_resource: bool = True  # beta, on since 1.36
    storage_capacity_scoring: bool = False  # alpha since 1.33 (beta only in 1.37)
    node_declared_features: bool = True  # beta, on since 1.36
    generic_workload: bool = False  # alpha since 1.35
    gang_scheduling: bool = False  # alpha since 1.35, needs GenericWorkload
    topology_aware_workload_scheduling: bool = False  # alpha since 1.36, needs GenericWorkload
    workload_aware_preemption: bool = False  # alpha since 1.36, needs GangScheduling
    opportunistic_batching: bool = True  # beta, on since 1.35
    scheduler_pop_from_backoff_q: bool = True  # beta, on since 1.33

    def with_(self, **changes: bool) -> FeatureGates:
        return replace(self, **changes)


DEFAULT_FEATURE_GATES: Final = FeatureGates()

#: Upstream gate name → :class:`FeatureGates` field.
GATE_FIELDS: Final[Mapping[str, str]] = {
    "DynamicResourceAllocation": "dynamic_resource_allocation",
    "DRASchedulerFilterTimeout": "dra_scheduler_filter_timeout",
    "DRADeviceBindingConditions": "dra_device_binding_conditions",
    "DRAResourceClaimDeviceStatus": "dra_resource_claim_device_status",
    "DRAExtendedResource": "dra_extended_resource",
    "StorageCapacityScoring": "storage_capacity_scoring",
    "NodeDeclaredFeatures": "node_declared_features",
    "GenericWorkload": "generic_workload",
    "GangScheduling": "gang_scheduling",
    "TopologyAwareWorkloadScheduling": "topology_aware_workload_scheduling",
    "WorkloadAwarePreemption": "workload_aware_preemption",
    "OpportunisticBatching": "opportunistic_batching",
    "SchedulerPopFromBackoffQ": "scheduler_pop_from_backoff_q",
}


def _resources_default() -> list[ResourceSpec]:
    return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


# ----------------------------------------------------------------- default plugins


def default_plugins(gates: FeatureGates = DEFAULT_FEATURE_GATES) -> Plugins:
    """``getDefaultPlugins()`` with ``applyFeatureGates`` for the given gates."""
    enabled = [
        Plugin(names.SCHEDULING_GATES),
        Plugin(names.PRIORITY_SORT),
        Plugin(names.NODE_UNSCHEDULABLE),
        Plugin(names.NODE_NAME),
        Plugin(names.TAINT_TOLERATION, 3),
        Plugin(names.NODE_AFFINITY, 2),
        Plugin(names.NODE_PORTS),
        Plugin(names.NODE_RESOURCES_FIT, 1),
        Plugin(names.VOLUME_RESTRICTIONS),
        Plugin(names.NODE_VOLUME_LIMITS),
        Plugin(names.VOLUME_BINDING),
        Plugin(names.VOLUME_ZONE),
        Plugin(names.POD_TOPOLOGY_SPREAD, 2),
        Plugin(names.INTER_POD_AFFINITY, 2),
        Plugin(names.DEFAULT_PREEMPTION),
        Plugin(names.NODE_RESOURCES_BALANCED_ALLOCATION, 1),
        Plugin(names.IMAGE_LOCALITY, 1),
        Plugin(names.DEFAULT_BINDER),
    ]
    if gates.dynamic_resource_allocation:
        # Before DefaultPreemption: deallocating an idle ResourceClaim in PostFilter is
        # better than evicting a pod that may be doing useful work.
        at = next(i for i, p in enumerate(enabled) if p.name == names.DEFAULT_PREEMPTION)
        enabled.insert(at, Plugin(names.DYNAMIC_RESOURCES, 2))
    if gates.node_declared_features:
        enabled.append(Plugin(names.NODE_DECLARED_FEATURES))
    if gates.gang_scheduling:
        enabled.append(Plugin(names.GANG_SCHEDULING))
    if gates.topology_aware_workload_scheduling:
        enabled.append(Plugin(names.TOPOLOGY_PLACEMENT_GENERATOR))
        enabled.append(Plugin(names.POD_GROUP_PODS_COUNT, 1))
    return Plugins(multi_point=PluginSet(enabled=enabled))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``: merge a user's plugin set into the default one."""
    disabled: list[Plugin] = [Plugin(p.name) for p in custom.disabled]
    disabled += [Plugin(p.name) for p in default.disabled]
    disabled_names = {p.name for p in disabled}
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if "*" not in disabled_names:
        for p in default.enabled:
            if p.name in disabled_names:
                continue
            if p.name in custom_by_name:
                # Re-configured default: keep its place, take the user's entry.
                idx, cp = custom_by_name[p.name]
                p = cp
                replaced.add(idx)
            enabled.append(copy.copy(p))
    # Custom plugins that replaced nothing are appended, duplicates included (the
    # framework reports those).
    enabled += [copy.copy(p) for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """``mergePlugins``: apply :func:`merge_plugin_set` to every extension point."""
    if custom is None:
        return default
    out = Plugins()
    for point in (*names.EXTENSION_POINTS, "multiPoint", *names.PLACEMENT_POINTS):
        out.set_point(point, merge_plugin_set(default.point(point), custom.point(point)))
    return out


def plugin_names(plugins: Plugins | None) -> list[str]:
    """Sorted names enabled at any extension point (upstream ``pluginsNames``)."""
    if plugins is None:
        return []
    found: set[str] = set()
    for point in ("multiPoint", *names.EXTENSION_POINTS, *names.PLACEMENT_POINTS):
        found.update(p.name for p in plugins.point(point).enabled)
    return sorted(found)


# --------------------------------------------------------------------- plugin args


def set_defaults_args(args: PluginArgs, gates: FeatureGates = DEFAULT_FEATURE_GATES) -> None:
    """Apply ``SetDefaults_<Plugin>Args`` in place (no-op for out-of-tree args)."""
    if isinstance(args, UnknownArgs):
        return
    args.api_version = API_VERSION
    args.kind = args.KIND
    if isinstance(args, DefaultPreemptionArgs):
        if args.min_candidate_nodes_percentage is None:
            args.min_candidate_nodes_percentage = 10
        if args.min_candidate_nodes_absolute is None:
            args.min_candidate_nodes_absolute = 100
    elif isinstance(args, InterPodAffinityArgs):
        if args.hard_pod_affinity_weight is None:
            args.hard_pod_affinity_weight = 1
    elif isinstance(args, CoschedulingArgs):
        # scheduler-plugins SetDefaults_CoschedulingArgs.
        if args.permit_waiting_time_seconds is None:
            args.permit_waiting_time_seconds = 60
        if args.pod_group_backoff_seconds is None:
            args.pod_group_backoff_seconds = 0
        if args.pod_group_reject_percentage is None:
            args.pod_group_reject_percentage = 10
    elif isinstance(args, VolumeBindingArgs):
        if args.bind_timeout_seconds is None:
            args.bind_timeout_seconds = 600
        if not args.shape and gates.storage_capacity_scoring:
            args.shape = [
                UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE),
                UtilizationShapePoint(100, 0),
            ]
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        if not args.resources:
            args.resources = _resources_default()
        for r in args.resources:
            if r.weight == 0:
                r.weight = 1
    elif isinstance(args, PodTopologySpreadArgs):
        if not args.defaulting_type:
            args.defaulting_type = "System"
    elif isinstance(args, NodeResourcesFitArgs):
        if args.scoring_strategy is None:
            args.scoring_strategy = ScoringStrategy("LeastAllocated", _resources_default())
        if not args.scoring_strategy.resources:
            args.scoring_strategy.resources = _resources_default()
        for r in args.scoring_strategy.resources:
            if r.weight == 0:
                r.weight = 1
    elif isinstance(args, DynamicResourcesArgs):
        if args.filter_timeout is None and gates.dra_scheduler_filter_timeout:
            args.filter_timeout = DYNAMIC_RESOURCES_FILTER_TIMEOUT
        if (
            args.binding_timeout is None
            and gates.dra_device_binding_conditions
            and gates.dra_resource_claim_device_status
        ):
            args.binding_timeout = DYNAMIC_RESOURCES_BINDING_TIMEOUT
    elif isinstance(args, NodeAffinityArgs):
        pass


def default_args(plugin: str, gates: FeatureGates = DEFAULT_FEATURE_GATES) -> PluginArgs | None:
    """Defaulted args for a built-in plugin that has an args type, else ``None``."""
    t = ARGS_TYPES.get(plugin)
    if t is None:
        return None
    args = t()
    assert not isinstance(args, UnknownArgs)
    set_defaults_args(args, gates)  # type: ignore[arg-type]
    return args  # type: ignore[return-value]


# --------------------------------------------------------------------- the config


def _set_defaults_profile(prof: KubeSchedulerProfile, gates: FeatureGates) -> None:
    prof.plugins = merge_plugins(default_plugins(gates), prof.plugins)
    existing: set[str] = set()
    for pc in prof.plugin_config:
        existing.add(pc.name)
        if pc.args is not None:
            set_defaults_args(pc.args, gates)
    for name in plugin_names(prof.plugins):
        if name in existing:
            continue
        args = default_args(name, gates)
        if args is not None:
            prof.plugin_config.append(PluginConfig(name, args))


def set_defaults(
    cfg: KubeSchedulerConfiguration, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> KubeSchedulerConfiguration:
    """``SetDefaults_KubeSchedulerConfiguration``: fill every unset field in place."""
    if cfg.parallelism is None:
        cfg.parallelism = 16
    if not cfg.profiles:
        cfg.profiles.append(KubeSchedulerProfile())
    # A default name only when there is a single profile; validation requires
    # non-empty unique names otherwise.
    if len(cfg.profiles) == 1 and cfg.profiles[0].scheduler_name is None:
        cfg.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    for prof in cfg.profiles:
        _set_defaults_profile(prof, gates)
    if cfg.percentage_of_nodes_to_score is None:
        cfg.percentage_of_nodes_to_score = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE

    le = cfg.leader_election
    if not le.resource_lock:
        # Lease-based leader election (EndpointsLease until 1.20, Lease since).
        le.resource_lock = "leases"
    if not le.resource_namespace:
        le.resource_namespace = "kube-system"
    if not le.resource_name:
        le.resource_name = "kube-scheduler"

    cc = cfg.client_connection
    if not cc.content_type:
        cc.content_type = "application/vnd.kubernetes.protobuf"
    # The scheduler has its own opinion about QPS/Burst.
    if cc.qps == 0.0:
        cc.qps = 50.0
    if cc.burst == 0:
        cc.burst = 100

    # component-base RecommendedDefaultLeaderElectionConfiguration.
    if le.lease_duration.nanoseconds == 0:
        le.lease_duration = Duration.seconds(15)
    if le.renew_deadline.nanoseconds == 0:
        le.renew_deadline = Duration.seconds(10)
    if le.retry_period.nanoseconds == 0:
        le.retry_period = Duration.seconds(2)
    if le.leader_elect is None:
        le.leader_elect = True

    if cfg.pod_initial_backoff_seconds is None:
        cfg.pod_initial_backoff_seconds = 1
    if cfg.pod_max_backoff_seconds is None:
        cfg.pod_max_backoff_seconds = 10
    if cfg.enable_profiling is None:
        cfg.enable_profiling = True
    if cfg.enable_profiling and cfg.enable_contention_profiling is None:
        cfg.enable_contention_profiling = True
    return cfg
