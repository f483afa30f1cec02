"""Validation of a defaulted ``KubeSchedulerConfiguration``, with upstream's wording.

Mirrors ``pkg/scheduler/apis/config/validation/validation.go`` and
``validation_pluginargs.go`` (v1.36) plus the component-base checks they call
(``ValidateClientConnectionConfiguration``, ``ValidateLeaderElectionConfiguration``).
Every check appends a :class:`~ksched.config.errors.FieldError` with the same field
path, type and detail upstream produces; nothing stops at the first error.

Some problems upstream only finds later, while building the framework
(``NewFramework``: unknown plugin, plugin that does not implement the extension point
it is enabled at, double registration, no queue-sort or bind plugin) or in client-go
(leader-election renewDeadline vs retryPeriod).  ksched reports them here, with the
upstream sentence where there is one, so ``ksched validate-config`` catches them
before start-up.  Unknown plugin names get the list of known names; plugins that
were removed get the config API version that dropped them, in upstream's
``was invalid in version ...`` wording.

Out-of-tree plugins are known names only when the caller passes them
(``extra_plugins``), normally from the plugin registry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ksched.config import errors as ferr
from ksched.config import plugins as names
from ksched.config.defaults import DEFAULT_FEATURE_GATES, FeatureGates
from ksched.config.duration import Duration
from ksched.config.errors import FieldError
from ksched.config.types import (
    API_VERSION,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    Extender,
    InterPodAffinityArgs,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginArgs,
    PluginSet,
    PodTopologySpreadArgs,
    ResourceSpec,
    UnknownArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

__all__ = ["validate", "validate_plugin_args"]

_SUPPORTED_SCORING_STRATEGIES: Final = (
    "LeastAllocated",
    "MostAllocated",
    "RequestedToCapacityRatio",
)
_JITTER_FACTOR: Final = 1.2  # client-go leaderelection.JitterFactor

# apimachinery util/validation: qualified names and label names.
_QNAME_CHAR: Final = "[A-Za-z0-9]"
_QNAME_EXT: Final = "[-A-Za-z0-9_.]"
_QUALIFIED_NAME: Final = re.compile(f"^({_QNAME_CHAR}{_QNAME_EXT}*)?{_QNAME_CHAR}$")
_DNS1123_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QNAME_ERR: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_DNS1123_ERR: Final = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``: messages for a bad ``[prefix/]name``."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN.match(prefix):
                errs.append(_DNS1123_ERR)
    else:
        return [
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _QUALIFIED_NAME.match(name):
        errs.append(_QNAME_ERR)
    return errs


def _label_name_errors(path: str, value: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelName``."""
    return [ferr.invalid(path, value, msg) for msg in _qualified_name_errors(value)]


# ------------------------------------------------------------------- component-base


def _validate_client_connection(cfg: KubeSchedulerConfiguration) -> list[FieldError]:
    cc = cfg.client_connection
    errs: list[FieldError] = []
    if cc.burst < 0:
        errs.append(ferr.invalid("clientConnection.burst", cc.burst, "must be non-negative"))
    return errs


def _validate_leader_election(cfg: KubeSchedulerConfiguration) -> list[FieldError]:
    le = cfg.leader_election
    p = "leaderElection"
    errs: list[FieldError] = []
    if not le.leader_elect:
        return errs
    if le.lease_duration.nanoseconds <= 0:
        errs.append(
            ferr.invalid(f"{p}.leaseDuration", le.lease_duration, "must be greater than zero")
        )
    if le.renew_deadline.nanoseconds <= 0:
        errs.append(
            ferr.invalid(f"{p}.renewDeadline", le.renew_deadline, "must be greater than zero")
        )
    if le.retry_period.nanoseconds <= 0:
        errs.append(ferr.invalid(f"{p}.retryPeriod", le.retry_period, "must be greater than zero"))
    if le.lease_duration.nanoseconds <= le.renew_deadline.nanoseconds:
        # Upstream reports renewDeadline's value at the leaseDuration path.
        errs.append(
            ferr.invalid(
                f"{p}.leaseDuration", le.renew_deadline, "must be greater than `RenewDeadline`"
            )
        )
    if le.renew_deadline.nanoseconds <= _JITTER_FACTOR * le.retry_period.nanoseconds:
        # client-go NewLeaderElector refuses this at start-up.
        errs.append(
            ferr.invalid(
                f"{p}.renewDeadline",
                le.renew_deadline,
                "renewDeadline must be greater than retryPeriod*JitterFactor",
            )
        )
    if not le.resource_lock:
        errs.append(ferr.required(f"{p}.resourceLock"))
    if not le.resource_namespace:
        errs.append(ferr.required(f"{p}.resourceNamespace"))
    if not le.resource_name:
        errs.append(ferr.required(f"{p}.resourceName"))
    return errs


# ------------------------------------------------------------------------- top level


def _validate_percentage(path: str, value: int | None) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [ferr.invalid(path, value, "not in valid range [0-100]")]
    return []


def validate(
    cfg: KubeSchedulerConfiguration,
    *,
    extra_plugins: Iterable[str] = (),
    extension_points: Mapping[str, Iterable[str]] | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> list[FieldError]:
    """Every problem of a defaulted config (``ValidateKubeSchedulerConfiguration``).

    ``extra_plugins`` are out-of-tree plugin names the caller's registry knows;
    ``extension_points`` optionally says which extension points those implement.
    """
    errs: list[FieldError] = []
    errs += _validate_client_connection(cfg)
    errs += _validate_leader_election(cfg)
    le = cfg.leader_election
    if le.leader_elect and le.resource_lock != "leases":
        errs.append(
            ferr.invalid(
                "leaderElection.resourceLock",
                le.resource_lock,
                'resourceLock value must be "leases"',
            )
        )
    if cfg.parallelism is None or cfg.parallelism <= 0:
        errs.append(
            ferr.invalid(
                "parallelism", cfg.parallelism or 0, "should be an integer value greater than zero"
            )
        )
    known = names.known_plugin_names(extra_plugins)
    ext_points = dict(extension_points or {})
    if not cfg.profiles:
        errs.append(ferr.required("profiles"))
    else:
        seen: dict[str, int] = {}
        for i, prof in enumerate(cfg.profiles):
            path = f"profiles[{i}]"
            errs += _validate_profile(path, prof, known, ext_points, gates)
            sname = prof.scheduler_name or ""
            if sname in seen:
                errs.append(
                    ferr.duplicate(
                        f"{path}.schedulerName",
                        ferr.PathValue(f"profiles[{seen[sname]}].schedulerName"),
                    )
                )
            seen[sname] = i
        errs += _validate_common_queue_sort(cfg.profiles)
    errs += _validate_percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score)
    initial = cfg.pod_initial_backoff_seconds or 0
    maximum = cfg.pod_max_backoff_seconds or 0
    if initial <= 0:
        errs.append(ferr.invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    if maximum < initial:
        errs.append(
            ferr.invalid(
                "podMaxBackoffSeconds",
                maximum,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    errs += _validate_extenders("extenders", cfg.extenders)
    return errs


def _validate_profile(
    path: str,
    prof: KubeSchedulerProfile,
    known: frozenset[str],
    ext_points: dict[str, Iterable[str]],
    gates: FeatureGates,
) -> list[FieldError]:
    errs: list[FieldError] = []
    if not prof.scheduler_name:
        errs.append(ferr.required(f"{path}.schedulerName"))
    errs += _validate_percentage(
        f"{path}.percentageOfNodesToScore", prof.percentage_of_nodes_to_score
    )
    errs += _validate_plugin_names(path, prof, known)
    errs += _validate_plugin_config(path, prof, gates)
    if prof.plugins is not None and not errs:
        errs += names.expansion_errors(prof, f"{path}.plugins", ext_points)
        if not errs:
            errs += _validate_framework_shape(path, prof, ext_points)
    return errs


def _removed_detail(name: str) -> str:
    version, _release = names.REMOVED_PLUGINS[name]
    if version == API_VERSION:
        # Upstream's list names core/v1's SchemeGroupVersion (validation.go imports
        # k8s.io/api/core/v1 as v1), so kube-scheduler v1.36 prints "v1" here.
        version = "v1"
    return (
        f'was invalid in version "{version}" '
        f'(KubeSchedulerConfiguration is version "{API_VERSION}")'
    )


def _validate_plugin_names(
    path: str, prof: KubeSchedulerProfile, known: frozenset[str]
) -> list[FieldError]:
    if prof.plugins is None:
        return []
    errs: list[FieldError] = []
    listing = ", ".join(sorted(known))
    for point in (*names.EXTENSION_POINTS, *names.PLACEMENT_POINTS, "multiPoint"):
        ps: PluginSet = prof.plugins.point(point)
        for j, p in enumerate(ps.enabled):
            ppath = f"{path}.plugins.{point}.enabled[{j}]"
            if p.name in names.REMOVED_PLUGINS:
                _v, note = names.REMOVED_PLUGINS[p.name]
                errs.append(
                    ferr.invalid(
                        ppath,
                        p.name,
                        _removed_detail(p.name) + f"; {note}",
                    )
                )
            elif p.name not in known:
                errs.append(
                    ferr.invalid(ppath, p.name, f"plugin does not exist; known plugins: {listing}")
                )
    return errs


def _validate_framework_shape(
    path: str, prof: KubeSchedulerProfile, ext_points: dict[str, Iterable[str]]
) -> list[FieldError]:
    """Checks ``NewFramework`` makes after installing the plugins."""
    expanded = names.expand_profile_plugins(prof, ext_points)
    errs: list[FieldError] = []
    n = len(expanded["queueSort"])
    if n != 1:
        errs.append(
            ferr.invalid(
                f"{path}.plugins.queueSort",
                n,
                "only one queue sort plugin required for profile with scheduler name "
                f'"{prof.scheduler_name}", but got {n}',
            )
        )
    if not expanded["bind"]:
        errs.append(
            ferr.required(
                f"{path}.plugins.bind",
                "at least one bind plugin is needed for profile with scheduler name "
                f'"{prof.scheduler_name}"',
            )
        )
    return errs


def _validate_plugin_config(
    path: str, prof: KubeSchedulerProfile, gates: FeatureGates
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, pc in enumerate(prof.plugin_config):
        pcpath = f"{path}.pluginConfig[{i}]"
        if pc.name in seen:
            errs.append(ferr.duplicate(pcpath, pc.name))
        else:
            seen.add(pc.name)
        if pc.name in names.REMOVED_PLUGINS:
            errs.append(ferr.invalid(pcpath, pc.name, _removed_detail(pc.name)))
        elif pc.args is not None:
            errs += validate_plugin_args(f"{pcpath}.args", pc.args, gates)
    return errs


def _validate_common_queue_sort(profiles: list[KubeSchedulerProfile]) -> list[FieldError]:
    errs: list[FieldError] = []
    first = profiles[0]
    canon = first.plugins.queue_sort if first.plugins is not None else PluginSet()
    qs_name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        errs.append(
            ferr.invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    qs_args: Any = None
    for pc in first.plugin_config:
        if qs_name and pc.name == qs_name:
            qs_args = pc.args
    for i in range(1, len(profiles)):
        prof = profiles[i]
        curr = prof.plugins.queue_sort if prof.plugins is not None else PluginSet()
        if _plugin_set_key(canon) != _plugin_set_key(curr):
            errs.append(
                ferr.invalid(
                    f"profiles[{i}].plugins.queueSort", curr, "must be the same for all profiles"
                )
            )
        for pc in prof.plugin_config:
            if pc.name == qs_name and pc.args != qs_args:
                errs.append(
                    ferr.invalid(
                        f"profiles[{i}].pluginConfig.args",
                        pc.args,
                        "queueSort must be the same for all profiles",
                    )
                )
    return errs


def _plugin_set_key(ps: PluginSet) -> tuple[Any, ...]:
    return (
        tuple((p.name, p.weight or 0) for p in ps.enabled),
        tuple(p.name for p in ps.disabled),
    )


# ------------------------------------------------------------------------- extenders


def _extended_resource_name_errors(path: str, name: str) -> list[FieldError]:
    msgs = _qualified_name_errors(name)
    if msgs:
        return [ferr.invalid(path, name, m) for m in msgs]
    # v1helper.IsExtendedResourceName: not kubernetes.io/, has a domain prefix, and
    # "requests.<name>" is a qualified name too.
    is_extended = (
        "/" in name
        and not name.startswith("kubernetes.io/")
        and ".kubernetes.io/" not in name
        and not name.startswith("requests.")
        and not _qualified_name_errors("requests." + name)
    )
    if not is_extended:
        return [ferr.invalid(path, name, "is an invalid extended resource name")]
    return []


def _validate_extenders(path: str, extenders: list[Extender]) -> list[FieldError]:
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        epath = f"{path}[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(
                ferr.invalid(
                    f"{epath}.weight", ext.weight, "must have a positive weight applied to it"
                )
            )
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            rpath = f"{epath}.managedResources[{j}].name"
            errs += _extended_resource_name_errors(rpath, res.name)
            if res.name in managed:
                errs.append(
                    ferr.invalid(rpath, res.name, "duplicate extender managed resource name")
                )
            managed.add(res.name)
    if binders > 1:
        errs.append(
            ferr.invalid(
                path,
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return errs


# ----------------------------------------------------------------------- plugin args


def _validate_function_shape(path: str, shape: list[UtilizationShapePoint]) -> list[FieldError]:
    if not shape:
        return [ferr.required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                ferr.invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errs.append(
                ferr.invalid(
                    f"{path}[{i}].utilization", point.utilization, "not in valid range [0, 100]"
                )
            )
        if not 0 <= point.score <= 10:
            errs.append(
                ferr.invalid(f"{path}[{i}].score", point.score, "not in valid range [0, 10]")
            )
    return errs


def _validate_resources(path: str, resources: list[ResourceSpec]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, r in enumerate(resources):
        if r.weight <= 0 or r.weight > 100:
            errs.append(
                ferr.invalid(
                    f"{path}[{i}].weight",
                    r.weight,
                    f"resource weight of {r.name} not in valid range (0, 100]",
                )
            )
    return errs


def _v_default_preemption(path: str, a: DefaultPreemptionArgs) -> list[FieldError]:
    errs: list[FieldError] = []
    pct = a.min_candidate_nodes_percentage or 0
    absolute = a.min_candidate_nodes_absolute or 0
    ppath, apath = f"{path}.minCandidateNodesPercentage", f"{path}.minCandidateNodesAbsolute"
    if not 0 <= pct <= 100:
        errs.append(ferr.invalid(ppath, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(ferr.invalid(apath, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(
            ferr.invalid(ppath, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        errs.append(
            ferr.invalid(
                apath, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        )
    return errs


def _v_inter_pod_affinity(path: str, a: InterPodAffinityArgs) -> list[FieldError]:
    w = a.hard_pod_affinity_weight or 0
    if not 0 <= w <= 100:
        return [ferr.invalid(f"{path}.hardPodAffinityWeight", w, "not in valid range [0, 100]")]
    return []


def _v_pod_topology_spread(path: str, a: PodTopologySpreadArgs) -> list[FieldError]:
    errs: list[FieldError] = []
    dt = a.defaulting_type
    if dt not in ("System", "List"):
        errs.append(ferr.not_supported(f"{path}.defaultingType", dt, ["System", "List"]))
    elif dt == "System" and a.default_constraints:
        errs.append(
            ferr.invalid(f"{path}.defaultingType", dt, "when .defaultConstraints are not empty")
        )
    cpath = f"{path}.defaultConstraints"
    for i, c in enumerate(a.default_constraints):
        p = f"{cpath}[{i}]"
        max_skew = c.get("maxSkew", 0)
        if not isinstance(max_skew, int) or max_skew <= 0:
            errs.append(ferr.invalid(f"{p}.maxSkew", max_skew, "not in valid range (0, inf)"))
        key = c.get("topologyKey", "") or ""
        if not key:
            errs.append(ferr.required(f"{p}.topologyKey", "can not be empty"))
        else:
            errs += _label_name_errors(f"{p}.topologyKey", str(key))
        action = c.get("whenUnsatisfiable", "") or ""
        if not action:
            errs.append(ferr.required(f"{p}.whenUnsatisfiable", "can not be empty"))
        elif action not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                ferr.not_supported(
                    f"{p}.whenUnsatisfiable", action, ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        if c.get("labelSelector") is not None:
            errs.append(
                ferr.forbidden(
                    f"{p}.labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        for other in a.default_constraints[:i]:
            if other.get("topologyKey") == c.get("topologyKey") and other.get(
                "whenUnsatisfiable"
            ) == c.get("whenUnsatisfiable"):
                errs.append(ferr.duplicate(f"{cpath}[{i}]", f"{{{key}, {action}}}"))
                break
    return errs


def _v_balanced_allocation(path: str, a: NodeResourcesBalancedAllocationArgs) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, r in enumerate(a.resources):
        if r.name in seen:
            errs.append(ferr.duplicate(f"{path}.resources[{i}].name", r.name))
        else:
            seen.add(r.name)
        if r.weight != 1:
            errs.append(ferr.invalid(f"{path}.resources[{i}].weight", r.weight, "must be 1"))
    return errs


_NODE_SELECTOR_OPS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_SELECTOR_OPS: Final = ("In", "NotIn")
_LABEL_VALUE: Final = re.compile(f"^(({_QNAME_CHAR}{_QNAME_EXT}*)?{_QNAME_CHAR})?$")
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
    "or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_INT64: Final = re.compile(r"^[+-]?[0-9]+$")


def _label_value_errors(value: str) -> list[str]:
    """``content.IsLabelValue``."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.match(value):
        errs.append(_LABEL_VALUE_ERR)
    return errs


def _is_int64(value: str) -> bool:
    return bool(_INT64.match(value)) and -(1 << 63) <= int(value) < (1 << 63)


def _v_selector_requirements(path: str, reqs: Any) -> list[FieldError]:
    """component-helpers ``nodeSelectorRequirementsAsSelector`` and apimachinery's
    ``labels.NewRequirement``: one message per key or value, parts joined by "; "."""
    errs: list[FieldError] = []
    for k, req in enumerate(reqs or []):
        rpath = f"{path}[{k}]"
        if not isinstance(req, dict):
            errs.append(ferr.invalid(rpath, req, "must be an object"))
            continue
        op = req.get("operator", "")
        if op not in _NODE_SELECTOR_OPS:
            errs.append(ferr.not_supported(f"{rpath}.operator", op, list(_NODE_SELECTOR_OPS)))
            continue
        key = str(req.get("key", ""))
        values = [str(v) for v in req.get("values") or []]
        if msgs := _qualified_name_errors(key):
            errs.append(ferr.invalid(f"{rpath}.key", key, "; ".join(msgs)))
        vpath = f"{rpath}.values"
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    ferr.invalid(
                        vpath, values, "for 'in', 'notin' operators, values set can't be empty"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    ferr.invalid(
                        vpath, values, "values set must be empty for exists and does not exist"
                    )
                )
        else:
            if len(values) != 1:
                errs.append(
                    ferr.invalid(
                        vpath, values, "for 'Gt', 'Lt' operators, exactly one value is required"
                    )
                )
            for i, v in enumerate(values):
                if not _is_int64(v):
                    errs.append(
                        ferr.invalid(
                            f"{vpath}[{i}]",
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )
                    )
        for i, v in enumerate(values):
            if msgs := _label_value_errors(v):
                errs.append(ferr.invalid(f"{vpath}[{i}][{key}]", v, "; ".join(msgs)))
    return errs


def _v_field_requirements(path: str, reqs: Any) -> list[FieldError]:
    """component-helpers ``nodeSelectorRequirementsAsFieldSelector``."""
    errs: list[FieldError] = []
    for k, req in enumerate(reqs or []):
        rpath = f"{path}[{k}]"
        if not isinstance(req, dict):
            errs.append(ferr.invalid(rpath, req, "must be an object"))
            continue
        op = req.get("operator", "")
        values = [str(v) for v in req.get("values") or []]
        if op not in _FIELD_SELECTOR_OPS:
            errs.append(ferr.not_supported(f"{rpath}.operator", op, list(_FIELD_SELECTOR_OPS)))
        elif len(values) != 1:
            errs.append(ferr.invalid(f"{rpath}.values", values, "must have one element"))
    return errs


def _v_node_selector_term(path: str, term: Any) -> list[FieldError]:
    if not isinstance(term, dict):
        return [ferr.invalid(path, term, "must be an object")]
    errs: list[FieldError] = []
    if term.get("matchExpressions"):
        errs += _v_selector_requirements(f"{path}.matchExpressions", term["matchExpressions"])
    if term.get("matchFields"):
        errs += _v_field_requirements(f"{path}.matchFields", term["matchFields"])
    return errs


def _is_empty_term(term: Any) -> bool:
    return (
        isinstance(term, dict) and not term.get("matchExpressions") and not term.get("matchFields")
    )


def _v_node_affinity(path: str, a: NodeAffinityArgs) -> list[FieldError]:
    """``ValidateNodeAffinityArgs``: parse the selectors as the plugin will
    (``nodeaffinity.NewNodeSelector``, ``NewPreferredSchedulingTerms``); empty terms and
    zero-weight preferred terms are skipped, as there."""
    aff = a.added_affinity
    if not aff:
        return []
    errs: list[FieldError] = []
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    rpath = f"{path}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if isinstance(req, dict):
        for j, term in enumerate(req.get("nodeSelectorTerms") or []):
            if not _is_empty_term(term):
                errs += _v_node_selector_term(f"{rpath}.nodeSelectorTerms[{j}]", term)
    pref = aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ppath = f"{path}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for j, item in enumerate(pref):
        if not isinstance(item, dict):
            continue
        term = item.get("preference") or {}
        if not item.get("weight") or _is_empty_term(term):
            continue
        # Upstream's path omits ".preference" (newNodeSelectorTerm gets the item's path).
        errs += _v_node_selector_term(f"{ppath}[{j}]", term)
    return errs


def _v_volume_binding(path: str, a: VolumeBindingArgs, gates: FeatureGates) -> list[FieldError]:
    errs: list[FieldError] = []
    timeout = a.bind_timeout_seconds or 0
    if timeout < 0:
        errs.append(
            ferr.invalid(
                f"{path}.bindTimeoutSeconds",
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    if gates.storage_capacity_scoring:
        errs += _validate_function_shape(f"{path}.shape", a.shape)
    elif a.shape:
        errs.append(
            ferr.invalid(
                f"{path}.shape",
                a.shape,
                "unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )
        )
    return errs


def _v_node_resources_fit(path: str, a: NodeResourcesFitArgs) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, res in enumerate(a.ignored_resources):
        errs += _label_name_errors(f"{path}.ignoredResources[{i}]", res)
    for i, group in enumerate(a.ignored_resource_groups):
        gpath = f"{path}.ignoredResourceGroups[{i}]"
        if "/" in group:
            errs.append(ferr.invalid(gpath, group, "resource group name can't contain '/'"))
        errs += _label_name_errors(gpath, group)
    s = a.scoring_strategy
    spath = f"{path}.scoringStrategy"
    if s is None:
        errs.append(ferr.required(spath, "ScoringStrategy field is required"))
        return errs
    if s.type not in _SUPPORTED_SCORING_STRATEGIES:
        errs.append(
            ferr.not_supported(f"{spath}.type", s.type, list(_SUPPORTED_SCORING_STRATEGIES))
        )
    errs += _validate_resources(f"{spath}.resources", s.resources)
    rpath = f"{spath}.requestedToCapacityRatio"
    if s.type == "RequestedToCapacityRatio":
        if s.requested_to_capacity_ratio is None:
            errs.append(
                ferr.required(rpath, "must be specified when type is RequestedToCapacityRatio")
            )
        else:
            errs += _validate_function_shape(f"{rpath}.shape", s.requested_to_capacity_ratio.shape)
    elif s.requested_to_capacity_ratio is not None:
        errs.append(ferr.forbidden(rpath, "must be nil when type is not RequestedToCapacityRatio"))
    return errs


def _v_dynamic_resources(
    path: str, a: DynamicResourcesArgs, gates: FeatureGates
) -> list[FieldError]:
    errs: list[FieldError] = []
    if gates.dra_scheduler_filter_timeout:
        if a.filter_timeout is not None and a.filter_timeout.nanoseconds < 0:
            errs.append(
                ferr.invalid(f"{path}.filterTimeout", a.filter_timeout, "must be zero or positive")
            )
    elif a.filter_timeout is not None:
        errs.append(
            ferr.forbidden(
                f"{path}.filterTimeout", "DRASchedulingFilterTimeout feature gate is disabled"
            )
        )
    if gates.dra_device_binding_conditions and gates.dra_resource_claim_device_status:
        if a.binding_timeout is not None and a.binding_timeout < Duration.seconds(1):
            errs.append(
                ferr.invalid(
                    f"{path}.bindingTimeout", a.binding_timeout, "must be at least 1 second"
                )
            )
    elif a.binding_timeout is not None:
        errs.append(
            ferr.forbidden(
                f"{path}.bindingTimeout",
                "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
                "feature gate is disabled",
            )
        )
    return errs


def validate_plugin_args(
    path: str, args: PluginArgs, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> list[FieldError]:
    """Validate one plugin's (defaulted) args, as ``Validate<Plugin>Args`` would."""
    if isinstance(args, UnknownArgs):
        return []
    if isinstance(args, DefaultPreemptionArgs):
        return _v_default_preemption(path, args)
    if isinstance(args, InterPodAffinityArgs):
        return _v_inter_pod_affinity(path, args)
    if isinstance(args, PodTopologySpreadArgs):
        return _v_pod_topology_spread(path, args)
    if isinstance(args, NodeResourcesBalancedAllocationArgs):
        return _v_balanced_allocation(path, args)
    if isinstance(args, NodeAffinityArgs):
        return _v_node_affinity(path, args)
    if isinstance(args, VolumeBindingArgs):
        return _v_volume_binding(path, args, gates)
    if isinstance(args, NodeResourcesFitArgs):
        return _v_node_resources_fit(path, args)
    if isinstance(args, DynamicResourcesArgs):
        return _v_dynamic_resources(path, args, gates)
    return []
