# ruff: noqa: RUF009  -- `jf` is dataclasses.field with the JSON name attached.
"""``kubescheduler.config.k8s.io/v1`` types as plain slotted dataclasses.

Each class mirrors one Go struct of ``staging/src/k8s.io/kube-scheduler/config/v1``
(``types.go``, ``types_pluginargs.go``) plus the two component-base structs it embeds
(``LeaderElectionConfiguration``, ``ClientConnectionConfiguration``).  Attributes are
snake_case; every dataclass field carries its upstream JSON name and its
``omitempty`` behaviour in the field metadata, and one generic encoder
(:func:`to_dict`) and one generic strict decoder (``decode.py``) read that metadata.
Keeping the wire names next to the attributes means a new upstream field is one line.

Pointer-ness matters for output: upstream ``*int32`` fields with ``omitempty`` are
omitted only when nil, value fields with ``omitempty`` are omitted when zero, and
struct fields are never omitted.  ``None`` here means "nil pointer / not set".

:func:`to_dict` renders what kube-scheduler's ``--write-config-to`` renders: the
internal config converted back to v1 and printed by sigs.k8s.io/yaml, which sorts
every mapping's keys.  Conversion from the internal type turns plugin weights into
non-nil pointers, so an unset weight prints as ``weight: 0`` exactly like upstream.

Core v1 API objects embedded in plugin args (``TopologySpreadConstraint``,
``NodeAffinity``) are kept as plain dicts: ksched's api package owns those types and
the config layer only validates the fields upstream validates here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

from ksched.config.duration import Duration

__all__ = [
    "API_VERSION",
    "ARGS_TYPES",
    "KIND",
    "ClientConnectionConfiguration",
    "CoschedulingArgs",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
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
    "to_dict",
]

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"

Omit = Literal["never", "nil", "empty"]


def jf(
    name: str,
    omit: Omit = "never",
    *,
    default: Any = None,
    factory: Any = None,
    go: str = "",
) -> Any:
    """A dataclass field with its upstream JSON name and omitempty behaviour.

    ``omit``: ``never`` (no omitempty), ``nil`` (pointer + omitempty: omitted when
    unset), ``empty`` (value + omitempty: omitted when zero/empty).  ``go`` names the
    upstream Go type for decode error messages (``int32``, ``int64``, ``float32``).
    """
    md = {"json": name, "omit": omit, "go": go}
    if factory is not None:
        return field(default_factory=factory, metadata=md)
    return field(default=default, metadata=md)


# --------------------------------------------------------------------------- plugins


@dataclass(slots=True)
class Plugin:
    """A plugin name and, for Score (and PlacementScore) plugins, its weight."""

    name: str = jf("name", default="")
    weight: int | None = jf("weight", "nil", go="int32")


@dataclass(slots=True)
class PluginSet:
    """Enabled and disabled plugins for one extension point (``*`` disables all)."""

    enabled: list[Plugin] = jf("enabled", "empty", factory=list)
    disabled: list[Plugin] = jf("disabled", "empty", factory=list)


@dataclass(slots=True)
class Plugins:
    """Plugin sets per extension point plus ``multiPoint`` (v1.36 field set)."""

    pre_enqueue: PluginSet = jf("preEnqueue", factory=PluginSet)
    queue_sort: PluginSet = jf("queueSort", factory=PluginSet)
    pre_filter: PluginSet = jf("preFilter", factory=PluginSet)
    filter: PluginSet = jf("filter", factory=PluginSet)
    post_filter: PluginSet = jf("postFilter", factory=PluginSet)
    pre_score: PluginSet = jf("preScore", factory=PluginSet)
    score: PluginSet = jf("score", factory=PluginSet)
    reserve: PluginSet = jf("reserve", factory=PluginSet)
    permit: PluginSet = jf("permit", factory=PluginSet)
    pre_bind: PluginSet = jf("preBind", factory=PluginSet)
    bind: PluginSet = jf("bind", factory=PluginSet)
    post_bind: PluginSet = jf("postBind", factory=PluginSet)
    multi_point: PluginSet = jf("multiPoint", factory=PluginSet)
    # Added in v1.36 behind TopologyAwareWorkloadScheduling (alpha, off by default).
    placement_generate: PluginSet = jf("placementGenerate", factory=PluginSet)
    placement_score: PluginSet = jf("placementScore", factory=PluginSet)

    def point(self, json_name: str) -> PluginSet:
        """The plugin set of an extension point by its JSON name (``"preFilter"``)."""
        ps: PluginSet = getattr(self, _PLUGINS_ATTR[json_name])
        return ps

    def set_point(self, json_name: str, value: PluginSet) -> None:
        setattr(self, _PLUGINS_ATTR[json_name], value)


_PLUGINS_ATTR: Final = {f.metadata["json"]: f.name for f in dataclasses.fields(Plugins)}

# ------------------------------------------------------------------------ plugin args


@dataclass(slots=True)
class _ArgsBase:
    """TypeMeta shared by every args type."""

    KIND: ClassVar[str] = ""
    PLUGIN: ClassVar[str] = ""

    api_version: str = jf("apiVersion", "empty", default="")
    kind: str = jf("kind", "empty", default="")


@dataclass(slots=True)
class DefaultPreemptionArgs(_ArgsBase):
    KIND: ClassVar[str] = "DefaultPreemptionArgs"
    PLUGIN: ClassVar[str] = "DefaultPreemption"

    min_candidate_nodes_percentage: int | None = jf(
        "minCandidateNodesPercentage", "nil", go="int32"
    )
    min_candidate_nodes_absolute: int | None = jf("minCandidateNodesAbsolute", "nil", go="int32")


@dataclass(slots=True)
class InterPodAffinityArgs(_ArgsBase):
    KIND: ClassVar[str] = "InterPodAffinityArgs"
    PLUGIN: ClassVar[str] = "InterPodAffinity"

    hard_pod_affinity_weight: int | None = jf("hardPodAffinityWeight", "nil", go="int32")
    ignore_preferred_terms_of_existing_pods: bool = jf(
        "ignorePreferredTermsOfExistingPods", default=False
    )


@dataclass(slots=True)
class ResourceSpec:
    name: str = jf("name", default="")
    weight: int = jf("weight", "empty", default=0, go="int64")


@dataclass(slots=True)
class UtilizationShapePoint:
    utilization: int = jf("utilization", default=0, go="int32")
    score: int = jf("score", default=0, go="int32")


@dataclass(slots=True)
class RequestedToCapacityRatioParam:
    shape: list[UtilizationShapePoint] = jf("shape", "empty", factory=list)


@dataclass(slots=True)
class ScoringStrategy:
    type: str = jf("type", "empty", default="")
    resources: list[ResourceSpec] = jf("resources", "empty", factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = jf(
        "requestedToCapacityRatio", "nil"
    )


@dataclass(slots=True)
class NodeResourcesFitArgs(_ArgsBase):
    KIND: ClassVar[str] = "NodeResourcesFitArgs"
    PLUGIN: ClassVar[str] = "NodeResourcesFit"

    ignored_resources: list[str] = jf("ignoredResources", "empty", factory=list)
    ignored_resource_groups: list[str] = jf("ignoredResourceGroups", "empty", factory=list)
    scoring_strategy: ScoringStrategy | None = jf("scoringStrategy", "nil")


@dataclass(slots=True)
class NodeResourcesBalancedAllocationArgs(_ArgsBase):
    KIND: ClassVar[str] = "NodeResourcesBalancedAllocationArgs"
    PLUGIN: ClassVar[str] = "NodeResourcesBalancedAllocation"

    resources: list[ResourceSpec] = jf("resources", "empty", factory=list)


@dataclass(slots=True)
class PodTopologySpreadArgs(_ArgsBase):
    KIND: ClassVar[str] = "PodTopologySpreadArgs"
    PLUGIN: ClassVar[str] = "PodTopologySpread"

    # core/v1 TopologySpreadConstraint objects, kept as dicts.
    default_constraints: list[dict[str, Any]] = jf("defaultConstraints", "empty", factory=list)
    defaulting_type: str = jf("defaultingType", "empty", default="")


@dataclass(slots=True)
class VolumeBindingArgs(_ArgsBase):
    KIND: ClassVar[str] = "VolumeBindingArgs"
    PLUGIN: ClassVar[str] = "VolumeBinding"

    bind_timeout_seconds: int | None = jf("bindTimeoutSeconds", "nil", go="int64")
    shape: list[UtilizationShapePoint] = jf("shape", "empty", factory=list)


@dataclass(slots=True)
class NodeAffinityArgs(_ArgsBase):
    KIND: ClassVar[str] = "NodeAffinityArgs"
    PLUGIN: ClassVar[str] = "NodeAffinity"

    # core/v1 NodeAffinity, kept as a dict.
    added_affinity: dict[str, Any] | None = jf("addedAffinity", "nil")


@dataclass(slots=True)
class DynamicResourcesArgs(_ArgsBase):
    KIND: ClassVar[str] = "DynamicResourcesArgs"
    PLUGIN: ClassVar[str] = "DynamicResources"

    # Upstream: `json:"filterTimeout"` (no omitempty) and `json:"bindingTimeout,omitempty"`.
    filter_timeout: Duration | None = jf("filterTimeout")
    binding_timeout: Duration | None = jf("bindingTimeout", "nil")


@dataclass(slots=True)
class CoschedulingArgs(_ArgsBase):
    """scheduler-plugins' ``CoschedulingArgs`` (registered in the same
    ``kubescheduler.config.k8s.io/v1`` scheme as the in-tree args)."""

    KIND: ClassVar[str] = "CoschedulingArgs"
    PLUGIN: ClassVar[str] = "Coscheduling"

    permit_waiting_time_seconds: int | None = jf("permitWaitingTimeSeconds", "nil", go="int64")
    pod_group_backoff_seconds: int | None = jf("podGroupBackoffSeconds", "nil", go="int64")
    pod_group_reject_percentage: int | None = jf("podGroupRejectPercentage", "nil", go="int32")


@dataclass(slots=True)
class UnknownArgs:
    """Args of an out-of-tree plugin: kept verbatim, like upstream's ``runtime.Unknown``."""

    raw: dict[str, Any] = field(default_factory=dict)


PluginArgs = (
    DefaultPreemptionArgs
    | InterPodAffinityArgs
    | NodeResourcesFitArgs
    | NodeResourcesBalancedAllocationArgs
    | PodTopologySpreadArgs
    | VolumeBindingArgs
    | NodeAffinityArgs
    | DynamicResourcesArgs
    | CoschedulingArgs
    | UnknownArgs
)

#: Plugin name -> its args type (upstream registers ``<Plugin>Args`` kinds in the scheme).
ARGS_TYPES: Final[dict[str, type[_ArgsBase]]] = {
    t.PLUGIN: t
    for t in (
        CoschedulingArgs,
        DefaultPreemptionArgs,
        DynamicResourcesArgs,
        InterPodAffinityArgs,
        NodeAffinityArgs,
        NodeResourcesBalancedAllocationArgs,
        NodeResourcesFitArgs,
        PodTopologySpreadArgs,
        VolumeBindingArgs,
    )
}


@dataclass(slots=True)
class PluginConfig:
    """Arguments for one plugin of a profile."""

    name: str = jf("name", default="")
    args: PluginArgs | None = jf("args", "nil")


# ------------------------------------------------------------------------ profile


@dataclass(slots=True)
class KubeSchedulerProfile:
    scheduler_name: str | None = jf("schedulerName", "nil")
    percentage_of_nodes_to_score: int | None = jf("percentageOfNodesToScore", "nil", go="int32")
    plugins: Plugins | None = jf("plugins", "nil")
    plugin_config: list[PluginConfig] = jf("pluginConfig", "empty", factory=list)


# ------------------------------------------------------------------------ extenders


@dataclass(slots=True)
class ExtenderManagedResource:
    name: str = jf("name", default="")
    ignored_by_scheduler: bool = jf("ignoredByScheduler", "empty", default=False)


@dataclass(slots=True)
class ExtenderTLSConfig:
    insecure: bool = jf("insecure", "empty", default=False)
    server_name: str = jf("serverName", "empty", default="")
    cert_file: str = jf("certFile", "empty", default="")
    key_file: str = jf("keyFile", "empty", default="")
    ca_file: str = jf("caFile", "empty", default="")
    # []byte fields travel as base64 text in JSON/YAML; kept as that text.
    cert_data: str = jf("certData", "empty", default="")
    key_data: str = jf("keyData", "empty", default="")
    ca_data: str = jf("caData", "empty", default="")


@dataclass(slots=True)
class Extender:
    url_prefix: str = jf("urlPrefix", default="")
    filter_verb: str = jf("filterVerb", "empty", default="")
    preempt_verb: str = jf("preemptVerb", "empty", default="")
    prioritize_verb: str = jf("prioritizeVerb", "empty", default="")
    weight: int = jf("weight", "empty", default=0, go="int64")
    bind_verb: str = jf("bindVerb", "empty", default="")
    enable_https: bool = jf("enableHTTPS", "empty", default=False)
    tls_config: ExtenderTLSConfig | None = jf("tlsConfig", "nil")
    # metav1.Duration is a struct: `omitempty` never drops it, so "0s" is printed.
    http_timeout: Duration = jf("httpTimeout", default=Duration(0))
    node_cache_capable: bool = jf("nodeCacheCapable", "empty", default=False)
    managed_resources: list[ExtenderManagedResource] = jf("managedResources", "empty", factory=list)
    ignorable: bool = jf("ignorable", "empty", default=False)


# ------------------------------------------------------------- component-base embeds


@dataclass(slots=True)
class LeaderElectionConfiguration:
    """component-base ``config/v1alpha1.LeaderElectionConfiguration``."""

    leader_elect: bool | None = jf("leaderElect")
    lease_duration: Duration = jf("leaseDuration", default=Duration(0))
    renew_deadline: Duration = jf("renewDeadline", default=Duration(0))
    retry_period: Duration = jf("retryPeriod", default=Duration(0))
    resource_lock: str = jf("resourceLock", default="")
    resource_name: str = jf("resourceName", default="")
    resource_namespace: str = jf("resourceNamespace", default="")


@dataclass(slots=True)
class ClientConnectionConfiguration:
    """component-base ``config/v1alpha1.ClientConnectionConfiguration``."""

    kubeconfig: str = jf("kubeconfig", default="")
    accept_content_types: str = jf("acceptContentTypes", default="")
    content_type: str = jf("contentType", default="")
    qps: float = jf("qps", default=0.0, go="float32")
    burst: int = jf("burst", default=0, go="int32")


# ------------------------------------------------------------------------ top level


@dataclass(slots=True)
class KubeSchedulerConfiguration:
    """The whole ``KubeSchedulerConfiguration`` document."""

    api_version: str = jf("apiVersion", "empty", default=API_VERSION)
    kind: str = jf("kind", "empty", default=KIND)
    parallelism: int | None = jf("parallelism", "nil", go="int32")
    leader_election: LeaderElectionConfiguration = jf(
        "leaderElection", factory=LeaderElectionConfiguration
    )
    client_connection: ClientConnectionConfiguration = jf(
        "clientConnection", factory=ClientConnectionConfiguration
    )
    # DebuggingConfiguration is embedded inline upstream.
    enable_profiling: bool | None = jf("enableProfiling", "nil")
    enable_contention_profiling: bool | None = jf("enableContentionProfiling", "nil")
    percentage_of_nodes_to_score: int | None = jf("percentageOfNodesToScore", "nil", go="int32")
    pod_initial_backoff_seconds: int | None = jf("podInitialBackoffSeconds", "nil", go="int64")
    pod_max_backoff_seconds: int | None = jf("podMaxBackoffSeconds", "nil", go="int64")
    profiles: list[KubeSchedulerProfile] = jf("profiles", "empty", factory=list)
    extenders: list[Extender] = jf("extenders", "empty", factory=list)
    delay_cache_until_active: bool = jf("delayCacheUntilActive", "empty", default=False)

    def to_dict(self) -> dict[str, Any]:
        """The document as upstream's ``--write-config-to`` would print it."""
        out = to_dict(self)
        assert isinstance(out, dict)
        return out

    def profile(self, scheduler_name: str) -> KubeSchedulerProfile:
        """The profile whose ``schedulerName`` is ``scheduler_name``."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        raise KeyError(scheduler_name)


# ------------------------------------------------------------------------ encoding


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return value is False
    if isinstance(value, int | float):
        return value == 0
    if isinstance(value, str | list | dict):
        return len(value) == 0
    return False  # structs (dataclasses, Duration) are never "empty" for encoding/json


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def to_dict(obj: Any) -> Any:
    """Encode a config object the way Go's ``encoding/json`` + sigs.k8s.io/yaml would.

    Keys are sorted (sigs.k8s.io/yaml round-trips through a map), durations become
    Go duration text, unset plugin weights become ``0`` (internal->v1 conversion).
    """
    if obj is None or isinstance(obj, str | bool | int):
        return obj
    if isinstance(obj, float):
        return int(obj) if obj.is_integer() else obj
    if isinstance(obj, Duration):
        return str(obj)
    if isinstance(obj, UnknownArgs):
        return _sorted(obj.raw)
    if isinstance(obj, list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return _sorted(obj)
    if isinstance(obj, Plugin):
        return {"name": obj.name, "weight": obj.weight or 0}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            if "json" not in f.metadata:
                continue
            value = getattr(obj, f.name)
            omit = f.metadata["omit"]
            if omit == "nil" and value is None:
                continue
            if omit == "empty" and _is_empty(value):
                continue
            out[f.metadata["json"]] = to_dict(value)
        return {k: out[k] for k in sorted(out)}
    raise TypeError(f"cannot encode {type(obj).__name__}")
