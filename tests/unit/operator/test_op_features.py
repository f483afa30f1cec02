"""Feature gates as component-base's featuregate and ComponentGlobalsRegistry handle
them: upstream's table of gates, its refusals word for word, versions, AllAlpha/AllBeta,
and what configuration defaulting and validation read."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest

from ksched.config import DEFAULT_FEATURE_GATES, FeatureGates
from ksched.config.defaults import GATE_FIELDS
from ksched.config.feature_gates_v1_36 import SPECS
from ksched.config.features import ACTED_ON, FeatureGate, FeatureGateError, spec_at
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster


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


# ---- one table: what ksched acts on, and where it reads it -------------------------------


def test_the_scheduler_record_comes_from_acted_on_gates_with_upstreams_defaults() -> None:
    assert set(GATE_FIELDS) <= set(ACTED_ON)
    assert {f.name for f in dataclasses.fields(FeatureGates)} == set(GATE_FIELDS.values())
    # The record's hand-written defaults are the registry's v1.36 defaults.
    assert FeatureGate().config_gates() == DEFAULT_FEATURE_GATES


@pytest.mark.parametrize(
    ("flags", "field", "want"),
    [
        pytest.param(
            "GenericWorkload=true,GangScheduling=true", "gang_scheduling", True, id="gang"
        ),
        pytest.param(
            "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
            "topology_aware_workload_scheduling",
            True,
            id="topology-aware",
        ),
        pytest.param(
            "GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true",
            "workload_aware_preemption",
            True,
            id="workload-aware-preemption",
        ),
        pytest.param("OpportunisticBatching=false", "opportunistic_batching", False, id="batching"),
        pytest.param(
            "SchedulerPopFromBackoffQ=false", "scheduler_pop_from_backoff_q", False, id="backoffq"
        ),
        pytest.param(
            "StorageCapacityScoring=true", "storage_capacity_scoring", True, id="capacity"
        ),
    ],
)
def test_each_gate_of_the_record_follows_the_flag(flags: str, field: str, want: bool) -> None:
    assert getattr(gate(flags).config_gates(), field) is want
    assert getattr(DEFAULT_FEATURE_GATES, field) is not want


@pytest.mark.parametrize(
    ("flags", "batch_size", "pop_from_backoff"),
    [
        pytest.param("", 32, True, id="defaults"),
        pytest.param("OpportunisticBatching=false", 1, True, id="no-batching"),
        pytest.param("SchedulerPopFromBackoffQ=false", 32, False, id="no-pop-from-backoffq"),
    ],
)
def test_the_scheduler_switches_batching_and_backoffq_popping_by_the_gates(
    flags: str, batch_size: int, pop_from_backoff: bool
) -> None:
    gates = gate(*([flags] if flags else [])).config_gates()
    sched = Scheduler(
        InMemoryCluster(), {"default-scheduler": default_profile()}, feature_gates=gates
    )
    assert (sched.batch_size, sched.queue.pop_from_backoff) == (batch_size, pop_from_backoff)


def test_the_readme_lists_exactly_the_gates_ksched_acts_on() -> None:
    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    start = text.index("The gates ksched acts on")
    paragraph = text[start : text.index("\n\n", start)]
    listed = set(re.findall(r"`([A-Z][A-Za-z0-9]+)`", paragraph))
    assert listed == set(ACTED_ON)
