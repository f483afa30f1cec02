"""KubeSchedulerConfiguration v1: types, loading, defaults, validation.

ksched reads the same ``kubescheduler.config.k8s.io/v1`` file kube-scheduler v1.36
reads and must accept, reject and default it exactly as upstream does, so this
package mirrors ``pkg/scheduler/apis/config`` (types, ``v1`` defaults and default
plugins, ``validation``) and ``cmd/kube-scheduler/app/options`` (file loading,
``--write-config-to``).  Module map:

* ``types`` - the v1 structs as slotted dataclasses, with upstream JSON names;
* ``decode`` - strict decoding (unknown and repeated fields are errors);
* ``defaults`` - v1.36 defaults, default plugin set, plugin set merging, feature gates;
* ``plugins`` - built-in plugin names, their extension points, multiPoint expansion;
* ``validation`` - upstream's checks and wording, plus framework start-up checks;
* ``load`` - files in and out, ``ksched validate-config``.

Nothing here talks to the API server or imports the framework; the plugin registry
passes out-of-tree plugin names in (``extra_plugins``).
"""

from ksched.config.defaults import (
    DEFAULT_FEATURE_GATES,
    DEFAULT_SCHEDULER_NAME,
    FeatureGates,
    default_args,
    default_plugins,
    merge_plugin_set,
    merge_plugins,
    set_defaults,
)
from ksched.config.duration import Duration
from ksched.config.errors import ConfigError, FieldError
from ksched.config.load import (
    apply_extenders,
    decode_config_bytes,
    dump_yaml,
    effective_config,
    load_config,
    load_config_bytes,
    validate_config_main,
    write_config,
)
from ksched.config.plugins import (
    EXTENSION_POINTS,
    IN_TREE_PLUGINS,
    PLUGIN_EXTENSION_POINTS,
    REMOVED_PLUGINS,
    ExpansionError,
    expand_placement_plugins,
    expand_profile_plugins,
    known_plugin_names,
)
from ksched.config.types import (
    API_VERSION,
    ARGS_TYPES,
    KIND,
    ClientConnectionConfiguration,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    InterPodAffinityArgs,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    Plugin,
    PluginArgs,
    PluginConfig,
    Plugins,
    PluginSet,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UnknownArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from ksched.config.validation import validate, validate_plugin_args

__all__ = [
    "API_VERSION",
    "ARGS_TYPES",
    "DEFAULT_FEATURE_GATES",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "IN_TREE_PLUGINS",
    "KIND",
    "PLUGIN_EXTENSION_POINTS",
    "REMOVED_PLUGINS",
    "ClientConnectionConfiguration",
    "ConfigError",
    "DefaultPreemptionArgs",
    "Duration",
    "DynamicResourcesArgs",
    "ExpansionError",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "FeatureGates",
    "FieldError",
    "InterPodAffinityArgs",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "Plugin",
    "PluginArgs",
    "PluginConfig",
    "PluginSet",
    "Plugins",
    "PodTopologySpreadArgs",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UnknownArgs",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "apply_extenders",
    "decode_config_bytes",
    "default_args",
    "default_plugins",
    "dump_yaml",
    "effective_config",
    "expand_placement_plugins",
    "expand_profile_plugins",
    "known_plugin_names",
    "load_config",
    "load_config_bytes",
    "merge_plugin_set",
    "merge_plugins",
    "set_defaults",
    "validate",
    "validate_config_main",
    "validate_plugin_args",
    "write_config",
]
