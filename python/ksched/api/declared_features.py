"""Node declared features (KEP-5328): the feature registry of kube-scheduler v1.36.5.

A port of ``k8s.io/component-helpers/nodedeclaredfeatures`` v0.36.5 as far as
scheduling reads it. The kubelet publishes, in ``node.status.declaredFeatures``, the
features of the registry its configuration enables (a sorted list; kube-apiserver
refuses an unsorted one or a duplicate). The NodeDeclaredFeatures plugin infers from a
pod's spec which of them the pod needs and keeps the pod off nodes that do not declare
them all. This module holds the data half (pure, no I/O), like the component-helpers
library does for the kubelet, the apiserver and the scheduler alike:

* :data:`REGISTRY`, ``features.AllFeatures`` sorted by name as ``Framework.New`` sorts
  it: each feature's name, the kubelet feature gates it depends on
  (``Requirements().EnabledFeatureGates``, what a node needs to declare it), its
  ``InferForScheduling`` rule and its ``MaxVersion``. In v1.36.5 two features constrain
  scheduling: ``RestartAllContainersOnContainerExits`` (a container or init container
  with a ``restartPolicyRules`` entry whose action is ``RestartAllContainers``) and
  ``UserNamespacesHostNetworkSupport`` (``hostNetwork: true`` with ``hostUsers:
  false``). The in-place resize features (``InPlacePodLevelResourcesVerticalScaling``,
  ``InPlacePodVerticalScalingInitContainers``) and ``ExtendWebSocketsToKubelet`` never
  do: their ``InferForScheduling`` is false, and their ``InferForUpdate`` (a resize of
  pod-level resources or of a non-sidecar init container, compared between the old and
  the new spec) is read by the apiserver's and kubelet's admission of updates, never by
  the scheduler, so it is not part of this port. Which feature gates are on in the
  scheduler does not change the inference: upstream asks the features' rules only.
* :func:`infer_for_pod_scheduling` (``Framework.InferForPodScheduling`` with a
  ``PodInfo`` holding only the spec, as the plugin builds it): the sorted names of the
  features the pod needs, for the target version :data:`SCHEDULER_VERSION` (a feature
  whose ``MaxVersion`` is below it is no longer required). Malformed fields raise
  :class:`~ksched.api._parse.FieldError` with their path, so a pod is rejected as
  invalid naming the field (the apiserver would never store one).
* :func:`try_map` (``FeatureMapper.TryMap``): the registry features among a node's
  declared list, by upstream's merge walk over two sorted lists, which is what the
  scheduler's NodeInfo keeps; unknown names are dropped (no pod can require them).
* :class:`Version`: ``k8s.io/apimachinery/pkg/util/version`` parsing and ordering
  (semantic with a pre-release, else generic), hand-written because the comparison of
  pre-release identifiers and of generic versions of unequal length is upstream's own
  (neither PEP 440 ``packaging`` nor SemVer libraries order ``1.30`` and ``1.30.0``
  or ``0.0.0-alpha.2.39+049eafd34dfbd2`` the way ``GreaterThan`` does).

The per-node half, the subset test of the pod's features against each node's, is a
bitset kernel in the Rust core (``rust/plugins/node_declared_features.rs``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ksched.api._parse import expected

__all__ = [
    "EXTEND_WEBSOCKETS_TO_KUBELET",
    "IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING",
    "IN_PLACE_POD_VERTICAL_SCALING_INIT_CONTAINERS",
    "REGISTRY",
    "RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS",
    "SCHEDULER_VERSION",
    "USER_NAMESPACES_HOST_NETWORK_SUPPORT",
    "Feature",
    "Version",
    "declared_features",
    "infer_for_pod_scheduling",
    "try_map",
]

RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS: Final = "RestartAllContainersOnContainerExits"
IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING: Final = "InPlacePodLevelResourcesVerticalScaling"
IN_PLACE_POD_VERTICAL_SCALING_INIT_CONTAINERS: Final = "InPlacePodVerticalScalingInitContainers"
EXTEND_WEBSOCKETS_TO_KUBELET: Final = "ExtendWebSocketsToKubelet"
USER_NAMESPACES_HOST_NETWORK_SUPPORT: Final = "UserNamespacesHostNetworkSupport"

#: ``v1.ContainerRestartRuleActionRestartAllContainers``.
ACTION_RESTART_ALL_CONTAINERS: Final = "RestartAllContainers"


# ---------------------------------------------------------------------------- versions

#: ``versionMatchRE`` and ``extraMatchRE`` (Go's ``(.*)*`` captures the whole rest,
#: which Python spells ``(.*)``).
_VERSION_RE: Final = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$", re.DOTALL)
_EXTRA_RE: Final = re.compile(
    r"^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$"
)
_NUMERIC: Final = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Version:
    """A version as ``k8s.io/apimachinery/pkg/util/version`` holds it."""

    components: tuple[int, ...]
    semver: bool
    pre_release: str = ""
    build_metadata: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        """``version.Parse``: semantic (three components, optional pre-release and
        build metadata) when that parses, else generic (two or more components, the
        rest ignored). Raises ``ValueError`` naming the text."""
        try:
            return cls._parse(text, semver=True)
        except ValueError:
            return cls._parse(text, semver=False)

    @classmethod
    def _parse(cls, text: str, *, semver: bool) -> Version:
        m = _VERSION_RE.match(text)
        if m is None:
            raise ValueError(f"could not parse {text!r} as version")
        numbers, extra = m.group(1), m.group(2) or ""
        parts = numbers.split(".")
        if (semver and len(parts) != 3) or (not semver and len(parts) < 2):
            raise ValueError(f"illegal version string {text!r}")
        for i, p in enumerate(parts):
            if (i == 0 or semver) and p.startswith("0") and p != "0":
                raise ValueError(f"illegal zero-prefixed version component {p!r} in {text!r}")
        pre = build = ""
        if semver and extra:
            em = _EXTRA_RE.match(extra)
            if em is None:
                raise ValueError(
                    f"could not parse pre-release/metadata ({extra}) in version {text!r}"
                )
            pre, build = em.group(1) or "", em.group(2) or ""
            for p in pre.split("."):
                if _NUMERIC.fullmatch(p) and p.startswith("0") and p != "0":
                    raise ValueError(f"illegal zero-prefixed version component {p!r} in {text!r}")
        return cls(tuple(int(p) for p in parts), semver, pre, build)

    def compare(self, other: Version) -> int:
        """``compareInternal``: -1, 0 or 1."""
        a, b = self.components, other.components
        for x, y in zip(a, b, strict=False):
            if x != y:
                return 1 if x > y else -1
        if len(b) < len(a) and any(a[len(b) :]):
            return 1
        if len(a) < len(b) and any(b[len(a) :]):
            return -1
        if not self.semver or not other.semver:
            return 0
        if self.pre_release == other.pre_release:
            return 0
        if not self.pre_release:
            return 1
        if not other.pre_release:
            return -1
        vp, op = self.pre_release.split("."), other.pre_release.split(".")
        for p, q in zip(vp, op, strict=False):
            if _NUMERIC.fullmatch(p) and _NUMERIC.fullmatch(q):
                if int(p) != int(q):
                    return 1 if int(p) > int(q) else -1
                continue
            if p != q:
                return 1 if p > q else -1
        if len(op) < len(vp):
            return 1
        if len(vp) < len(op):
            return -1
        return 0

    def greater_than(self, other: Version) -> bool:
        return self.compare(other) > 0


#: The version kube-scheduler infers requirements for (upstream: its own binary's
#: ``version.Get()``; ksched stands in for v1.36.5).
SCHEDULER_VERSION: Final = Version.parse("1.36.5")


# ----------------------------------------------------------------------- the registry

PodSpec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Feature:
    """One registered feature (upstream ``types.Feature``, as scheduling reads it)."""

    name: str
    #: ``Requirements().EnabledFeatureGates``: the kubelet gates it depends on.
    feature_gates: tuple[str, ...]
    #: ``InferForScheduling``: whether scheduling the pod (its spec) needs the feature.
    infer_for_scheduling: Callable[[PodSpec], bool]
    #: ``MaxVersion``: past it the feature is everywhere and no longer required.
    max_version: Version | None = None


def _rules_restart_all(containers: object, path: str) -> bool:
    if containers is None:
        return False
    if type(containers) is not list:
        raise expected(path, "an array", containers)
    for i, c in enumerate(containers):
        if type(c) is not dict:
            raise expected(f"{path}[{i}]", "an object", c)
        rules = c.get("restartPolicyRules")
        if rules is None:
            continue
        rp = f"{path}[{i}].restartPolicyRules"
        if type(rules) is not list:
            raise expected(rp, "an array", rules)
        for j, rule in enumerate(rules):
            if type(rule) is not dict:
                raise expected(f"{rp}[{j}]", "an object", rule)
            action = rule.get("action")
            if action is not None and type(action) is not str:
                raise expected(f"{rp}[{j}].action", "a string", action)
            if action == ACTION_RESTART_ALL_CONTAINERS:
                return True
    return False


def _restart_all_containers(spec: PodSpec) -> bool:
    """``restartAllContainersFeature.InferForScheduling``: some container, then some
    init container, has a restart rule with the RestartAllContainers action."""
    return _rules_restart_all(spec.get("containers"), "spec.containers") or _rules_restart_all(
        spec.get("initContainers"), "spec.initContainers"
    )


def _user_namespaces_host_network(spec: PodSpec) -> bool:
    """``userNamespacesHostNetworkFeature.InferForScheduling``: host network together
    with a user namespace (``hostUsers`` set to false, not merely absent)."""
    host_network = spec.get("hostNetwork")
    if host_network is not None and type(host_network) is not bool:
        raise expected("spec.hostNetwork", "a boolean", host_network)
    host_users = spec.get("hostUsers")
    if host_users is not None and type(host_users) is not bool:
        raise expected("spec.hostUsers", "a boolean", host_users)
    return host_network is True and host_users is False


def _never(spec: PodSpec) -> bool:
    """The features that only matter for pod updates or connections, not placement."""
    return False


#: ``features.AllFeatures`` of v0.36.5, sorted by name (``Framework.New``).
REGISTRY: Final[tuple[Feature, ...]] = tuple(
    sorted(
        (
            Feature(
                RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS,
                (RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS,),
                _restart_all_containers,
            ),
            Feature(
                IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING,
                (IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING,),
                _never,
            ),
            Feature(EXTEND_WEBSOCKETS_TO_KUBELET, (EXTEND_WEBSOCKETS_TO_KUBELET,), _never),
            Feature(
                IN_PLACE_POD_VERTICAL_SCALING_INIT_CONTAINERS,
                (IN_PLACE_POD_VERTICAL_SCALING_INIT_CONTAINERS,),
                _never,
            ),
            Feature(
                USER_NAMESPACES_HOST_NETWORK_SUPPORT,
                (USER_NAMESPACES_HOST_NETWORK_SUPPORT,),
                _user_namespaces_host_network,
            ),
        ),
        key=lambda f: f.name,
    )
)


def infer_for_pod_scheduling(
    spec: PodSpec,
    target: Version | None = SCHEDULER_VERSION,
    registry: Sequence[Feature] = REGISTRY,
) -> tuple[str, ...]:
    """``Framework.InferForPodScheduling``: the names (sorted, as the registry) of the
    features scheduling ``spec`` requires at version ``target``.

    Raises ``ValueError("target version cannot be nil")`` without a target, and
    :class:`~ksched.api._parse.FieldError` for a malformed field the rules read."""
    if target is None:
        raise ValueError("target version cannot be nil")
    # Every pod is parsed through here: the default registry is sorted already and
    # most pods need nothing, so the common answer allocates nothing.
    features = registry if registry is REGISTRY else sorted(registry, key=lambda f: f.name)
    out: tuple[str, ...] = ()
    for f in features:
        if f.max_version is not None and target.greater_than(f.max_version):
            continue
        if f.infer_for_scheduling(spec):
            out = (*out, f.name)
    return out


def try_map(declared: Iterable[str], registry: Sequence[Feature] = REGISTRY) -> tuple[str, ...]:
    """``FeatureMapper.TryMap``: the registered features among ``declared`` (sorted,
    as kube-apiserver validates ``status.declaredFeatures``), by upstream's merge walk
    of the two sorted lists; unknown names are skipped."""
    names = sorted(f.name for f in registry)
    given = list(declared)
    out: list[str] = []
    i = j = 0
    while i < len(given) and j < len(names):
        if given[i] == names[j]:
            out.append(names[j])
            i += 1
            j += 1
        elif given[i] < names[j]:
            i += 1
        else:
            j += 1
    return tuple(out)


def declared_features(value: object, path: str = "status.declaredFeatures") -> tuple[str, ...]:
    """``status.declaredFeatures`` as given (strings), ``()`` when absent or null."""
    if value is None:
        return ()
    if type(value) is not list:
        raise expected(path, "an array", value)
    for i, v in enumerate(value):
        if type(v) is not str:
            raise expected(f"{path}[{i}]", "a string", v)
    return tuple(value)
