"""kube-scheduler's feature gates, with component-base's ``featuregate`` semantics.

Every gate kube-scheduler v1.36.5 registers is known (:data:`feature_gates_v1_36.SPECS`,
generated from the upstream binary's registry by ``hack/featuregates/generate.sh``):
its versioned specs give the default, the stage (ALPHA, BETA, GA, DEPRECATED) and
whether it is locked, at the emulated version (``--emulated-version``, 1.33 to 1.36)
and minimum compatibility version (``--min-compatibility-version``), exactly as
``featureSpecAtEmulationAndMinCompatVersion`` picks them.

:class:`FeatureGate` takes ``--feature-gates`` as upstream's flag does (``A=true,B=false``,
optionally prefixed ``kube:``, repeatable) and refuses what upstream refuses, with
upstream's words: an unknown gate (``unrecognized feature gate: X``), a locked one set
to the other value, a PreAlpha one, a malformed value, an unregistered component, and a
gate enabled while a gate it depends on is disabled. ``AllAlpha``/``AllBeta`` set every
alpha/beta gate not set explicitly. Setting a GA or deprecated gate is logged as
upstream logs it.

What ksched does with a gate is one table, :data:`ACTED_ON` (gate → what it switches in
ksched). A gate set explicitly that is not in it is accepted, as upstream accepts every
gate it knows, and logged once: ksched does not act on it (most of the 241 gates belong
to other components; kube-scheduler ignores them too). Components that honour a gate
add one line there and read it with :meth:`FeatureGate.enabled` (process-level
switches: leader election, endpoints, logs, authentication) or, for what configuration,
profiles and the scheduler read, through the :class:`FeatureGates` record that
:meth:`FeatureGate.config_gates` fills (its fields are :data:`GATE_FIELDS`, each of
which is in :data:`ACTED_ON`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from ksched import logs
from ksched.config.defaults import GATE_FIELDS, FeatureGates
from ksched.config.feature_gates_v1_36 import DEPENDENCIES, SPECS

__all__ = [
    "ACTED_ON",
    "BINARY_VERSION",
    "EMULATION_FLOOR",
    "FeatureGate",
    "FeatureGateError",
    "FeatureSpec",
    "Version",
    "parse_version",
]

log = logs.get_logger(__name__)

Version = tuple[int, int]

#: The Kubernetes version ksched follows (``DefaultKubeBinaryVersion``).
BINARY_VERSION: Final[Version] = (1, 36)
#: The lowest ``--emulated-version`` and ``--min-compatibility-version`` (binary - 3).
EMULATION_FLOOR: Final[Version] = (1, 33)
#: The one component kube-scheduler registers.
KUBE: Final = "kube"
ALL_ALPHA: Final = "AllAlpha"
ALL_BETA: Final = "AllBeta"

#: Gates ksched acts on: gate → what it switches. Every other gate is accepted and,
#: when set explicitly, logged as not acted on.
ACTED_ON: Final[dict[str, str]] = {
    "AllAlpha": "sets every alpha gate not set explicitly",
    "AllBeta": "sets every beta gate not set explicitly",
    "CoordinatedLeaderElection": "LeaseCandidate and coordinated leader election",
    "OpportunisticBatching": "batched placement of pods of one scheduling signature",
    "SchedulerPopFromBackoffQ": "popping from backoffQ when activeQ is empty",
    "ComponentFlagz": "the /flagz endpoint",
    "ComponentStatusz": "the /statusz endpoint",
    "LoggingBetaOptions": "--logging-format=json",
    "LoggingAlphaOptions": "--log-{text,json}-split-stream and --log-*-info-buffer-size",
    "RemoteRequestHeaderUID": "--requestheader-uid-headers (request-header authentication)",
    "DynamicResourceAllocation": "configuration defaults and validation (DynamicResources)",
    "DRASchedulerFilterTimeout": "DynamicResourcesArgs.filterTimeout validation",
    "DRADeviceBindingConditions": "DynamicResourcesArgs.bindingTimeout validation",
    "DRAResourceClaimDeviceStatus": "DynamicResourcesArgs.bindingTimeout validation",
    "DRAExtendedResource": "extended resources backed by DRA (NodeResourcesFit, DynamicResources)",
    "StorageCapacityScoring": "VolumeBinding's capacity score (VolumeBindingArgs.shape)",
    "NodeDeclaredFeatures": "the NodeDeclaredFeatures plugin (default plugin set, Filter, "
    "events) and UpdateNodeDeclaredFeature node events",
    "GenericWorkload": "the Workload/PodGroup API, pod group states and the group cycle",
    "GangScheduling": "the GangScheduling plugin in the default plugin set",
    "TopologyAwareWorkloadScheduling": "the placement plugins (topology-aware pod groups)",
    "WorkloadAwarePreemption": "refused at start: pod group preemption is not implemented",
}

_STAGES = ("ALPHA", "BETA", "GA", "DEPRECATED")


class FeatureGateError(ValueError):
    """``--feature-gates``, ``--emulated-version`` or ``--min-compatibility-version``
    cannot be applied; the message is upstream's."""


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """A gate at one emulated version."""

    default: bool
    #: ALPHA, BETA, GA, DEPRECATED, or PREALPHA (not available at that version).
    stage: str
    locked: bool
    since: Version


_PREALPHA = FeatureSpec(False, "PREALPHA", False, (0, 0))

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``k8s.io/apimachinery/pkg/util/version.Parse`` for ``major.minor[.patch]``."""
    m = _VERSION.match(text.strip())
    if m is None:
        raise FeatureGateError(f'could not parse "{text}" as version')
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _v(text: str) -> Version:
    major, _, minor = text.partition(".")
    return int(major), int(minor)


def _fmt(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def _minus_one(v: Version) -> Version:
    return (v[0], v[1] - 1) if v[1] > 0 else v


def spec_at(name: str, emulation: Version, min_compat: Version | None = None) -> FeatureSpec:
    """``featureSpecAtEmulationAndMinCompatVersion`` of gate ``name``."""
    floor = min_compat if min_compat is not None else _minus_one(emulation)
    for since, default, stage, locked, min_c in reversed(SPECS[name]):
        v = _v(since)
        if v > emulation:
            continue
        if min_c and floor < _v(min_c):
            continue
        return FeatureSpec(default, stage, locked, v)
    return _PREALPHA


def _parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class FeatureGate:
    """The feature gates of one ``ksched run``/``kube-scheduler`` process."""

    def __init__(self, *, emulation: Version = BINARY_VERSION, min_compat: Version | None = None):
        self.emulation = emulation
        self.min_compat = (
            min_compat if min_compat is not None else max(_minus_one(emulation), EMULATION_FLOOR)
        )
        #: Gates set explicitly (after ``AllAlpha``/``AllBeta`` expansion).
        self._enabled: dict[str, bool] = {}
        #: What the flags asked for, as given.
        self._raw: dict[str, bool] = {}
        self._logged_unused = False

    # ---- flags -----------------------------------------------------------------

    @classmethod
    def from_flags(
        cls,
        feature_gates: Iterable[str] = (),
        *,
        emulated_version: Iterable[str] = (),
        min_compatibility_version: Iterable[str] = (),
    ) -> FeatureGate:
        """Upstream ``ComponentGlobalsRegistry.Set`` then ``Validate``: the values of
        ``--emulated-version``, ``--min-compatibility-version`` and every
        ``--feature-gates`` occurrence (``[component:]Name=bool`` pairs). Raises
        :class:`FeatureGateError` with upstream's message."""
        emulation = _version_flag(emulated_version) or BINARY_VERSION
        min_compat = _version_flag(min_compatibility_version)
        gate = cls(emulation=emulation, min_compat=min_compat)
        errs = gate.validate_versions()
        by_component: dict[str, list[str]] = {}
        for value in feature_gates:
            for pair in value.split(","):
                if not pair:
                    continue
                comp, sep, rest = pair.partition(":")
                if not sep:
                    comp, rest = "", pair
                by_component.setdefault(comp.strip(), []).append(rest.strip())
        if "" in by_component and KUBE in by_component:
            raise FeatureGateError(
                "set kube feature gates with default empty prefix or kube: prefix "
                "consistently, do not mix use"
            )
        for comp, values in by_component.items():
            if comp not in ("", KUBE):
                raise FeatureGateError(f"component not registered: {comp}")
            gate.set(",".join(values))
        if errs:
            raise FeatureGateError(", ".join(errs))
        return gate

    def validate_versions(self) -> list[str]:
        errs = []
        if self.emulation > BINARY_VERSION or self.emulation < EMULATION_FLOOR:
            errs.append(
                f"emulation version {_fmt(self.emulation)} is not between "
                f"[{_fmt(EMULATION_FLOOR)}, {_fmt(BINARY_VERSION)}]"
            )
        if self.min_compat > self.emulation or self.min_compat < EMULATION_FLOOR:
            errs.append(
                f"minCompatibilityVersion version {_fmt(self.min_compat)} is not between "
                f"[{_fmt(EMULATION_FLOOR)}, {_fmt(self.emulation)}]"
            )
        return errs

    def set(self, value: str) -> None:
        """``featureGate.Set``: ``A=true,B=false``."""
        parsed: dict[str, bool] = {}
        for s in value.split(","):
            if not s:
                continue
            k, sep, v = s.partition("=")
            k = k.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {k}")
            v = v.strip()
            try:
                parsed[k] = _parse_bool(v)
            except ValueError as exc:
                raise FeatureGateError(f"invalid value of {k}={v}, err: {exc}") from None
        self.set_from_map(parsed)

    def set_from_map(self, values: Mapping[str, bool]) -> None:
        """``SetFromMap``: validate the gates asked for so far and keep them; raises
        :class:`FeatureGateError` (nothing changes then)."""
        raw = {**self._raw, **values}
        enabled: dict[str, bool] = {}
        errs: list[str] = []
        for k, v in raw.items():
            if k not in SPECS:
                raise FeatureGateError(f"unrecognized feature gate: {k}")
            spec = self.spec(k)
            if spec.locked and spec.default != v:
                errs.append(
                    f"cannot set feature gate {k} to {_gobool(v)}, feature is locked to "
                    f"{_gobool(spec.default)}"
                )
                continue
            if k in (ALL_ALPHA, ALL_BETA):
                stage = "ALPHA" if k == ALL_ALPHA else "BETA"
                for other in SPECS:
                    if other in (ALL_ALPHA, ALL_BETA) or other in enabled:
                        continue
                    if self.spec(other).stage == stage and other not in raw:
                        enabled[other] = v
                enabled[k] = v
                continue
            if spec.stage == "PREALPHA":
                errs.append(
                    f"cannot set feature gate {k} to {_gobool(v)}, feature is PreAlpha at "
                    f"emulated version {_fmt(self.emulation)}.0, min compatibility version "
                    f"{_fmt(self.min_compat)}.0"
                )
                continue
            enabled[k] = v
            if k in values and spec.stage == "DEPRECATED":
                log.info(
                    "Warning: setting deprecated feature gate. It will be removed in a future "
                    "release.",
                    featureGate=k,
                    value=v,
                )
            elif k in values and spec.stage == "GA":
                log.info(
                    "Warning: setting GA feature gate. It will be removed in a future release.",
                    featureGate=k,
                    value=v,
                )
        if not errs:
            for feature, deps in sorted(DEPENDENCIES.items()):
                if not _enabled(feature, enabled, self):
                    continue
                disabled = [d for d in deps if not _enabled(d, enabled, self)]
                if disabled:
                    errs.append(
                        f"{feature} is enabled, but depends on features that are disabled: "
                        f"[{' '.join(disabled)}]"
                    )
        if errs:
            raise FeatureGateError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        self._raw = raw
        self._enabled = enabled

    # ---- queries ---------------------------------------------------------------

    def spec(self, name: str) -> FeatureSpec:
        return spec_at(name, self.emulation, self.min_compat)

    def enabled(self, name: str) -> bool:
        """Whether the gate is on; a gate kube-scheduler does not know is a
        programming error (upstream panics)."""
        if name in self._enabled:
            return self._enabled[name]
        if name not in SPECS:
            raise KeyError(f"feature {name!r} is not registered in FeatureGate")
        return self.spec(name).default

    def explicitly_set(self, name: str) -> bool:
        return name in self._raw

    def all(self) -> dict[str, FeatureSpec]:
        """``GetAll``: every gate available at the emulated version."""
        out = {}
        for name in SPECS:
            spec = self.spec(name)
            if spec.stage != "PREALPHA":
                out[name] = spec
        return out

    def explicit(self) -> dict[str, bool]:
        """The gates the flags set (``AllAlpha``/``AllBeta`` expanded), sorted."""
        return dict(sorted(self._enabled.items()))

    def not_acted_on(self) -> list[str]:
        """Gates set explicitly that ksched accepts but does not act on."""
        return [name for name in sorted(self._raw) if name not in ACTED_ON]

    def log_not_acted_on(self) -> None:
        """Log, once, every gate set explicitly that ksched does not act on."""
        if self._logged_unused:
            return
        self._logged_unused = True
        for name in self.not_acted_on():
            log.warning(
                "Feature gate accepted but not acted on by ksched",
                featureGate=name,
                value=self._raw[name],
            )

    def known_features(self) -> list[str]:
        """``KnownFeatures``: the ``--feature-gates`` help lines (alpha and beta gates),
        sorted, each ``kube:``-prefixed as the registry's flag lists them."""
        known = []
        for name, specs in SPECS.items():
            if name in (ALL_ALPHA, ALL_BETA):
                _, default, stage, _, _ = specs[0]
                known.append(f"{name}=true|false ({stage} - default={_gobool(default)})")
                continue
            spec = self.spec(name)
            text = _help(name, spec)
            compat = spec_at(name, self.emulation, self.emulation)
            if compat == spec:
                if text:
                    known.append(text)
                continue
            parts = [text] if text else []
            compat_text = _help(name, compat)
            if compat_text:
                min_c = next(
                    (m for since, *_, m in SPECS[name] if _v(since) == compat.since and m), ""
                )
                parts.append(f"{compat_text} if --min-compatibility-version>={min_c}")
            if parts:
                known.append(", or ".join(parts))
        return sorted(f"{KUBE}:{line}" for line in known)

    def config_gates(self) -> FeatureGates:
        """The :class:`FeatureGates` record configuration defaulting and validation, the
        profiles and the scheduler read (every gate of :data:`GATE_FIELDS`)."""
        return FeatureGates(**{field: self.enabled(name) for name, field in GATE_FIELDS.items()})

    def __str__(self) -> str:
        """``featureGate.String``: the gates set, ``A=true,B=false``, sorted."""
        return ",".join(f"{k}={_gobool(v)}" for k, v in sorted(self._enabled.items()))


def _enabled(name: str, enabled: Mapping[str, bool], gate: FeatureGate) -> bool:
    if name in enabled:
        return enabled[name]
    return gate.spec(name).default


def _help(name: str, spec: FeatureSpec) -> str:
    if spec.stage in ("GA", "DEPRECATED", "PREALPHA"):
        return ""
    return f"{name}=true|false ({spec.stage} - default={_gobool(spec.default)})"


def _gobool(v: bool) -> str:
    return "true" if v else "false"


def _version_flag(values: Iterable[str]) -> Version | None:
    """``toVersionMap`` for the ``kube`` component: ``1.35`` or ``kube=1.35``."""
    found: tuple[int, int, int] | None = None
    for item in values:
        comp, sep, text = item.partition("=")
        if not sep:
            comp, text = KUBE, item
        comp = comp.strip()
        ver = parse_version(text)
        if ver[2] != 0:
            raise FeatureGateError(
                f"patch version not allowed, got: {comp}={ver[0]}.{ver[1]}.{ver[2]}"
            )
        if comp != KUBE:
            raise FeatureGateError(f"component not registered: {comp}")
        if found is not None:
            raise FeatureGateError(
                f"duplicate version flag, {comp}={found[0]}.{found[1]}.0 and "
                f"{comp}={ver[0]}.{ver[1]}.0"
            )
        found = ver
    return None if found is None else (found[0], found[1])
