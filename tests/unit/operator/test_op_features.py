"""Feature gates as component-base's featuregate and ComponentGlobalsRegistry handle
them: upstream's table of gates, its refusals word for word, versions, AllAlpha/AllBeta,
and what configuration defaulting and validation read."""

from __future__ import annotations

import logging

import pytest

from ksched.config.feature_gates_v1_36 import SPECS
from ksched.config.features import ACTED_ON, FeatureGate, FeatureGateError, spec_at


def gate(*values: str, emulated: tuple[str, ...] = (), min_compat: tuple[str, ...] = ()):
    return FeatureGate.from_flags(
        list(values), emulated_version=emulated, min_compatibility_version=min_compat
    )


@pytest.mark.parametrize(
    ("values", "kwargs", "error"),
    [
        pytest.param(["Foo=true"], {}, "unrecognized feature gate: Foo", id="unknown"),
        pytest.param(
            ["SchedulerQueueingHints=false"],
            {},
            "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
            id="locked",
        ),
        pytest.param(
            ["GangScheduling=true"],
            {},
            "GangScheduling is enabled, but depends on "
            "features that are disabled: [GenericWorkload]",
            id="dependency",
        ),
        pytest.param(["X"], {}, "missing bool value for X", id="no-value"),
        pytest.param(
            ["AllAlpha=yes"],
            {},
            'invalid value of AllAlpha=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
            id="bad-bool",
        ),
        pytest.param(["wardle:A=true"], {}, "component not registered: wardle", id="component"),
        pytest.param(
            ["A=true", "kube:B=true"],
            {},
            "set kube feature gates with default empty "
            "prefix or kube: prefix consistently, do not mix use",
            id="mixed",
        ),
        pytest.param(
            [], {"emulated": ("1.35.1",)}, "patch version not allowed, got: kube=1.35.1", id="patch"
        ),
        pytest.param(
            [],
            {"emulated": ("1.32",)},
            "emulation version 1.32 is not between "
            "[1.33, 1.36], minCompatibilityVersion version 1.33 is not between "
            "[1.33, 1.32]",
            id="too-old",
        ),
        pytest.param(
            [],
            {"emulated": ("1.35",), "min_compat": ("1.36",)},
            "minCompatibilityVersion version 1.36 is not between [1.33, 1.35]",
            id="min-above-emulated",
        ),
        pytest.param(
            [],
            {"emulated": ("wardle=1.2",)},
            "component not registered: wardle",
            id="version-component",
        ),
    ],
)
def test_refusals_are_upstreams(values: list[str], kwargs: dict, error: str) -> None:
    with pytest.raises(FeatureGateError) as exc:
        gate(*values, **kwargs)
    assert str(exc.value).replace("1.36.0", "1.36") == error


def test_every_gate_kube_scheduler_registers_is_known_with_default_and_stage() -> None:
    g = FeatureGate()
    assert len(SPECS) == 241
    assert g.spec("CoordinatedLeaderElection").stage == "BETA"
    assert g.enabled("CoordinatedLeaderElection") is False
    assert g.spec("SchedulerQueueingHints").stage == "GA"
    assert g.spec("SchedulerQueueingHints").locked
    assert g.enabled("OpportunisticBatching") is True
    assert g.enabled("StorageCapacityScoring") is False
    # The help lists the 149 alpha and beta gates, AllAlpha and AllBeta included.
    known = g.known_features()
    assert len(known) == 149
    assert "kube:StorageCapacityScoring=true|false (ALPHA - default=false)" in known
    assert all(name in SPECS for name in ACTED_ON)


def test_emulated_version_picks_the_specs_of_that_release() -> None:
    older = gate(emulated=("1.34",))
    # A gate introduced in 1.35 does not exist at 1.34.
    introduced = next(n for n, specs in SPECS.items() if specs[0][0] == "1.35")
    assert spec_at(introduced, (1, 34)).stage == "PREALPHA"
    assert introduced not in older.all()
    with pytest.raises(FeatureGateError, match=r"PreAlpha at emulated version 1\.34\.0"):
        gate(f"{introduced}=true", emulated=("1.34",))
    assert (older.emulation, older.min_compat) == ((1, 34), (1, 33))


def test_all_alpha_and_all_beta_set_the_gates_not_set_explicitly() -> None:
    g = gate("AllBeta=false,OpportunisticBatching=true")
    assert g.enabled("OpportunisticBatching") is True  # explicit wins
    assert g.enabled("SchedulerPopFromBackoffQ") is False  # beta, turned off
    assert g.enabled("CoordinatedLeaderElection") is False
    g = gate("AllAlpha=true")
    assert g.enabled("GangScheduling") and g.enabled("GenericWorkload")
    assert g.enabled("CoordinatedLeaderElection") is False  # beta: untouched


def test_config_reads_the_gates_that_change_defaults_and_validation() -> None:
    g = gate("StorageCapacityScoring=true,GenericWorkload=true")
    cg = g.config_gates()
    assert cg.storage_capacity_scoring and cg.generic_workload and cg.node_declared_features
    assert cg.dynamic_resource_allocation
    # Turning off a gate others depend on is refused, as upstream refuses it.
    with pytest.raises(FeatureGateError, match="depends on features that are disabled"):
        gate("NodeDeclaredFeatures=false")


def test_gates_ksched_does_not_act_on_are_accepted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    g = gate("KubeletInUserNamespace=true,CoordinatedLeaderElection=true")
    assert g.not_acted_on() == ["KubeletInUserNamespace"]
    with caplog.at_level(logging.WARNING):
        g.log_not_acted_on()
        g.log_not_acted_on()
    lines = [r for r in caplog.records if "not acted on" in r.getMessage()]
    assert [r.getMessage() for r in lines] == ["Feature gate accepted but not acted on by ksched"]
    assert [r.klog_kv[1] for r in lines] == [  # type: ignore[attr-defined]
        (("featureGate", "KubeletInUserNamespace"), ("value", True))
    ]


def test_ga_and_deprecated_gates_set_explicitly_are_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        gate("SchedulerQueueingHints=true")
    assert any("setting GA feature gate" in r.getMessage() for r in caplog.records)
