"""From a loaded ``KubeSchedulerConfiguration`` to the scheduler's profile map.

One place, shared by ``ksched run`` and ``ksched simulate --config``, does what
upstream's ``profile.NewMap`` does: one framework :class:`~ksched.framework.profile.Profile`
per configured profile, keyed by ``schedulerName``. Every profile shares the
scheduler's one queue and one cache; :meth:`ksched.scheduler.Scheduler.handles` claims
the pods whose ``spec.schedulerName`` is a key of this map.

For each profile the plugin set is expanded as the framework does (multiPoint, per-point
overrides, disabled sets, effective Score weights: ``config.expand_profile_plugins``)
and split by where each plugin runs:

* built-in Filter/Score plugins with Rust kernels go into the profile's kernel
  configuration, in upstream order with their weights and ``pluginConfig`` args, and
  with the place of DynamicResources' Filter among them (:func:`kernel_filters`;
  NodeDeclaredFeatures only with its gate on);
* built-in plugins implemented in Python (PrioritySort, SchedulingGates, DefaultBinder,
  DefaultPreemption with its ``pluginConfig`` args:
  :func:`ksched.framework.builtins.default_plugins`) and out-of-tree plugins from the
  :class:`~ksched.framework.registry.Registry` become Python plugin instances. An
  out-of-tree plugin is created by its factory with its args and a handle, and wrapped
  so that it runs only at the extension points the profile enables it at, with the
  profile's Score weight;
* enabled plugins with no implementation in this build are reported once (logged).

The profile's ``percentageOfNodesToScore`` overrides the global one.

Known simplification: the Python plugins of a profile run in one order for every
extension point (first appearance in extension-point order), where upstream keeps one
list per point; only a profile that orders two Python plugins differently at two
points would notice.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ksched import _core
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    EXTENSION_POINTS,
    ExpansionError,
    FeatureGates,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    UnknownArgs,
    apply_extenders,
    expand_placement_plugins,
    expand_profile_plugins,
)
from ksched.config.types import to_dict
from ksched.framework.builtins import default_plugins
from ksched.framework.profile import Profile
from ksched.framework.registry import METHOD_POINTS, Registry, RegistryError, default_registry
from ksched.framework.runtime import EVALUATED_POINTS
from ksched.plugins.topology_placement import PLACEMENT_SCORERS, TOPOLOGY_PLACEMENT_GENERATOR
from ksched.plugins.workloads import WORKLOAD_PLUGINS

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

__all__ = [
    "ConfiguredPlugin",
    "ProfileError",
    "build_profiles",
    "implemented_plugin_names",
    "kernel_filters",
]

log = logging.getLogger(__name__)

DEFAULT_PREEMPTION = "DefaultPreemption"
VOLUME_BINDING = "VolumeBinding"
#: ``DefaultPreemptionArgs`` defaults (a profile with other values gets its own instance).
_DEFAULT_PREEMPTION_ARGS = {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}
#: ``VolumeBindingArgs.bindTimeoutSeconds``'s default.
_DEFAULT_BIND_TIMEOUT = 600

DYNAMIC_RESOURCES = "DynamicResources"
NODE_AFFINITY = "NodeAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
#: ``DynamicResourcesArgs`` defaults, as the config layer prints them.
_DEFAULT_DRA_ARGS = {"filterTimeout": "10s", "bindingTimeout": "10m0s"}
#: DynamicResources' Score weight in v1.36's default multiPoint set.
_DRA_WEIGHT = 2

#: Methods that come with an extension point's method (same plugin, same point).
_COMPANIONS = {
    "less": ("sort_key",),
    "score": ("normalize_score",),
    "reserve": ("unreserve",),
    "pre_bind": ("pre_bind_pre_flight",),
}


class ProfileError(Exception):
    """A profile cannot be built; the message names it."""


class _LateHandle:
    """The handle given to plugin factories before their scheduler exists.

    It forwards every member to the scheduler's handle once the framework calls
    ``setup``; before that every use raises. A profile's plugins belong to one
    scheduler.
    """

    __slots__ = ("_handle", "_profile")

    def __init__(self, profile: str) -> None:
        self._profile = profile
        self._handle: Handle | None = None

    def bind(self, handle: Handle) -> None:
        if self._handle is not None and self._handle is not handle:
            raise RuntimeError(
                f"the plugins of profile {self._profile!r} already belong to a scheduler; "
                "build the profiles again for another one"
            )
        self._handle = handle

    def __getattr__(self, attr: str) -> Any:
        # Every Handle member, forwarded: the Protocol grows with the framework.
        if self._handle is None:
            raise RuntimeError(
                f"the scheduler of profile {self._profile!r} is not built yet: use the "
                "handle from setup() or an extension point, not in the plugin factory"
            )
        return getattr(self._handle, attr)


class ConfiguredPlugin:
    """A plugin as one profile enabled it: the methods of the enabled extension points
    only, the profile's Score ``weight``, and ``setup`` binding the factory's handle.

    The framework finds a plugin's extension points by its methods, so this object
    carries exactly the enabled ones (bound methods of the plugin, no indirection per
    call); ``events_to_register`` is passed through.
    """

    def __init__(
        self,
        plugin: Any,
        points: Iterable[str],
        *,
        weight: int = 1,
        handle: _LateHandle | None = None,
    ) -> None:
        self.plugin = plugin
        self.name: str = plugin.name
        self.weight = weight
        self.points = frozenset(points)
        self._handle = handle
        for method, point in METHOD_POINTS.items():
            if point not in self.points or not callable(getattr(plugin, method, None)):
                continue
            for name in (method, *_COMPANIONS.get(method, ())):
                if callable(getattr(plugin, name, None)):
                    setattr(self, name, getattr(plugin, name))
        events = getattr(plugin, "events_to_register", None)
        if callable(events):
            self.events_to_register = events
        applies = getattr(plugin, "applies_to", None)
        if callable(applies):
            self.applies_to = applies
        if "preBind" in self.points and getattr(plugin, "pre_bind_parallel", False):
            self.pre_bind_parallel = True
        ignores = getattr(plugin, "ignores_pod", None)
        if callable(ignores):
            self.ignores_pod = ignores

    def setup(self, handle: Handle) -> None:
        if self._handle is not None:
            self._handle.bind(handle)
        setup = getattr(self.plugin, "setup", None)
        if callable(setup):
            setup(handle)

    def __repr__(self) -> str:
        return f"ConfiguredPlugin({self.name!r}, points={sorted(self.points)}, w={self.weight})"


def _implemented_points(plugin: Any) -> frozenset[str]:
    return frozenset(p for m, p in METHOD_POINTS.items() if callable(getattr(plugin, m, None)))


def _plain_args(prof: KubeSchedulerProfile, name: str) -> Mapping[str, Any] | None:
    for pc in prof.plugin_config:
        if pc.name != name or pc.args is None:
            continue
        if isinstance(pc.args, UnknownArgs):
            return dict(pc.args.raw)
        value = to_dict(pc.args)
        return value if isinstance(value, dict) else None
    return None


def _python_plugins(
    prof: KubeSchedulerProfile,
    points: Mapping[str, Sequence[tuple[str, int]]],
    registry: Registry,
    missing: dict[str, set[str]],
) -> tuple[Any, ...] | None:
    name = prof.scheduler_name or ""
    preemption_args = _plain_args(prof, DEFAULT_PREEMPTION)
    binding_args = _plain_args(prof, VOLUME_BINDING)
    dra_args = _plain_args(prof, DYNAMIC_RESOURCES)
    # The queueing hints of NodeAffinity and PodTopologySpread read their args.
    affinity_args = _plain_args(prof, NODE_AFFINITY)
    spread_args = _plain_args(prof, POD_TOPOLOGY_SPREAD)
    builtins = {
        p.name: p
        for p in default_plugins(
            plugin_args={
                DEFAULT_PREEMPTION: preemption_args,
                VOLUME_BINDING: binding_args,
                DYNAMIC_RESOURCES: dra_args,
                NODE_AFFINITY: affinity_args,
                POD_TOPOLOGY_SPREAD: spread_args,
            }
        )
    }
    default_args = all(
        (preemption_args or {}).get(k, v) == v for k, v in _DEFAULT_PREEMPTION_ARGS.items()
    ) and (binding_args or {}).get("bindTimeoutSeconds", _DEFAULT_BIND_TIMEOUT) in (
        None,
        _DEFAULT_BIND_TIMEOUT,
    )
    default_args = default_args and all(
        (dra_args or {}).get(k, v) == v for k, v in _DEFAULT_DRA_ARGS.items()
    )
    default_args = (
        default_args
        and not (affinity_args or {}).get("addedAffinity")
        and (spread_args or {}).get("defaultingType") != "List"
    )
    kernels = set(_core.FILTER_PLUGINS) | set(_core.SCORE_PLUGINS)
    enabled_at: dict[str, list[str]] = {}  # plugin -> points, in first-appearance order
    for point in EXTENSION_POINTS:
        for plugin, _ in points[point]:
            enabled_at.setdefault(plugin, []).append(point)
    weights = dict(points["score"])
    handle = _LateHandle(name)
    plugins: list[Any] = []
    restricted = False
    for plugin, at in enabled_at.items():
        factory = WORKLOAD_PLUGINS.get(plugin)
        if factory is not None:
            try:
                instance = factory(_plain_args(prof, plugin))
            except ValueError as exc:
                raise ProfileError(f"profile {name!r}: plugin {plugin}: {exc}") from exc
            plugins.append(ConfiguredPlugin(instance, at, weight=weights.get(plugin, 1)))
            restricted = True
        elif plugin in registry:
            try:
                args = _plain_args(prof, plugin)
                instance = registry.create(plugin, args, cast("Handle", handle))
            except RegistryError as exc:
                raise ProfileError(f"profile {name!r}: {exc}") from exc
            plugins.append(
                ConfiguredPlugin(instance, at, weight=weights.get(plugin, 1), handle=handle)
            )
            restricted = True
        elif plugin in builtins:
            instance = builtins[plugin]
            if "score" in at:
                instance.weight = weights.get(plugin, 1)
            if _implemented_points(instance) <= set(at):
                plugins.append(instance)
            else:
                plugins.append(ConfiguredPlugin(instance, at))
                restricted = True
        elif plugin not in kernels:
            missing.setdefault(plugin, set()).add(name)
    default_weight = weights.get(DYNAMIC_RESOURCES, _DRA_WEIGHT) == _DRA_WEIGHT
    if (
        not restricted
        and default_args
        and default_weight
        and {p.name for p in plugins} == set(builtins)
    ):
        return None  # exactly the Python-side defaults: let the framework make them
    return tuple(plugins)


def implemented_plugin_names(registry: Registry | None = None) -> frozenset[str]:
    """Every plugin name a profile of this build runs when enabled: the Rust kernels,
    the Python built-ins and ``registry``'s out-of-tree plugins (default: the installed
    ones). Any other enabled in-tree plugin is reported and does not run."""
    reg = registry if registry is not None else default_registry()
    builtins = {p.name for p in default_plugins()}
    return frozenset({*_core.FILTER_PLUGINS, *_core.SCORE_PLUGINS, *builtins, *reg.names()})


def _evaluated(
    points: Mapping[str, Sequence[tuple[str, int]]], registry: Registry
) -> tuple[tuple[str, str], ...]:
    """``(plugin, extension point)`` of the plugins upstream's framework instruments
    (``scheduler_plugin_evaluation_total``): those enabled at PreFilter, Filter,
    PreScore and Score that this build runs."""
    runs = implemented_plugin_names(registry) | set(WORKLOAD_PLUGINS)
    return tuple(
        (plugin, label)
        for point, label in EVALUATED_POINTS
        for plugin, _ in points[point]
        if plugin in runs
    )


def _kernel_args(prof: KubeSchedulerProfile, kept: set[str]) -> dict[str, Mapping[str, Any]]:
    args: dict[str, Mapping[str, Any]] = {}
    for pc in prof.plugin_config:
        if pc.name in kept and pc.args is not None:
            value = to_dict(pc.args)
            if isinstance(value, dict):
                args[pc.name] = value
    return args


def kernel_filters(
    enabled: Sequence[tuple[str, int]], gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> tuple[tuple[str, ...], int | None]:
    """The profile's Filter plugins that run in the Rust core, in order, and how many
    of them come before DynamicResources' Filter (None: it is not enabled, or last).

    NodeDeclaredFeatures without its gate is left out: upstream's plugin then skips
    PreFilter, passes every node and registers no events."""
    filters: list[str] = []
    dra_at: int | None = None
    for name, _ in enabled:
        if name == DYNAMIC_RESOURCES:
            dra_at = len(filters)
        elif name in _core.FILTER_PLUGINS:
            if name == NODE_DECLARED_FEATURES and not gates.node_declared_features:
                continue
            filters.append(name)
    if dra_at == len(filters):
        dra_at = None
    return tuple(filters), dra_at


def build_profiles(
    cfg: KubeSchedulerConfiguration,
    registry: Registry | None = None,
    *,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> dict[str, Profile]:
    """schedulerName → :class:`Profile` for every profile of ``cfg`` (loaded and valid).

    ``registry`` supplies the out-of-tree plugins (default: the installed ones,
    :func:`~ksched.framework.registry.default_registry`). Raises :class:`ProfileError`
    when a profile cannot be built (its plugin set, a plugin factory, its kernels).
    """
    if gates.workload_aware_preemption:
        raise ProfileError(
            "feature gate WorkloadAwarePreemption (pod group preemption) is not supported "
            "by this build of ksched; disable it"
        )
    reg = registry if registry is not None else default_registry()
    ext_points = reg.extension_points()
    if any(r.ignored_by_scheduler for e in cfg.extenders for r in e.managed_resources):
        # Upstream buildExtenders: the resources extenders manage and mark
        # ignoredByScheduler replace NodeResourcesFit's ignoredResources in every profile.
        cfg = copy.deepcopy(cfg)
        apply_extenders(cfg)
    profiles: dict[str, Profile] = {}
    missing: dict[str, set[str]] = {}
    for prof in cfg.profiles:
        name = prof.scheduler_name or ""
        try:
            points = expand_profile_plugins(prof, ext_points)
        except ExpansionError as exc:
            raise ProfileError(f"profile {name!r}: {exc}") from exc
        filters, dra_at = kernel_filters(points["filter"], gates)
        scores = tuple((p, w) for p, w in points["score"] if p in _core.SCORE_PLUGINS)
        kept = set(filters) | {p for p, _ in scores}
        # A PreFilter or PreScore enabled without its Filter/Score reads the args too
        # (InterPodAffinity's ignorePreferredTermsOfExistingPods decides its PreScore).
        kept |= {
            p
            for point in ("preFilter", "preScore")
            for p, _ in points[point]
            if p in _core.FILTER_PLUGINS or p in _core.SCORE_PLUGINS
        }
        plugins = _python_plugins(prof, points, reg, missing)
        pct = prof.percentage_of_nodes_to_score
        if pct is None:
            pct = cfg.percentage_of_nodes_to_score or 0
        generate: tuple[str, ...] = ()
        placement_score: tuple[tuple[str, int], ...] = ()
        if gates.topology_aware_workload_scheduling:
            try:
                placement = expand_placement_plugins(prof, ext_points)
            except ExpansionError as exc:
                raise ProfileError(f"profile {name!r}: {exc}") from exc
            generate = tuple(p for p, _ in placement["placementGenerate"])
            placement_score = tuple(placement["placementScore"])
            for p in generate:
                if p != TOPOLOGY_PLACEMENT_GENERATOR:
                    raise ProfileError(
                        f"profile {name!r}: placement generate plugin {p!r} is not "
                        "implemented in this build"
                    )
            for p, _ in placement_score:
                if p not in PLACEMENT_SCORERS:
                    raise ProfileError(
                        f"profile {name!r}: placement score plugin {p!r} is not "
                        "implemented in this build"
                    )
            kept |= {p for p, _ in placement_score}
        try:
            profiles[name] = Profile(
                name,
                filters,
                scores,
                _kernel_args(prof, kept),
                pct,
                plugins=plugins,
                placement_generate=generate,
                placement_score=placement_score,
                dynamic_resources_at=dra_at,
                evaluated=_evaluated(points, reg),
            )
        except ValueError as exc:
            raise ProfileError(f"profile {name!r}: {exc}") from exc
    if missing:
        log.warning(
            "enabled plugins not implemented in this build do not run: %s",
            "; ".join(f"{p} ({', '.join(sorted(n))})" for p, n in sorted(missing.items())),
        )
    if not profiles:
        raise ProfileError("the configuration has no profiles")
    return profiles
