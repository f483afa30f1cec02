"""Defaults, plugin-set merging, multiPoint expansion and durations.

Merge cases mirror ``pkg/scheduler/apis/config/v1/default_plugins_test.go``
``TestMergePlugins``; argument defaults mirror ``defaults_test.go``
``TestPluginArgsDefaults``; expansion mirrors ``framework/runtime/framework_test.go``
``TestNewFrameworkMultiPointExpansion`` and ``apis/config/testing/defaults``
``ExpandedPluginsV1`` (with the v1.36 plugin set).
"""

from __future__ import annotations

import pytest
from config_testlib import load

from ksched.config import (
    DEFAULT_FEATURE_GATES,
    Duration,
    ExpansionError,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    Plugin,
    Plugins,
    PluginSet,
    ResourceSpec,
    ScoringStrategy,
    default_args,
    default_plugins,
    dump_yaml,
    expand_profile_plugins,
    merge_plugin_set,
    set_defaults,
)
from ksched.config.duration import format_duration, parse_duration


def _names(ps: PluginSet) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in ps.enabled]


# ---------------------------------------------------------------- default plugin set


def test_v136_default_multipoint_order_and_weights() -> None:
    assert _names(default_plugins().multi_point) == [
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),  # default_plugins.go applyDynamicResources
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
    ]


def test_feature_gates_change_the_default_set() -> None:
    off = DEFAULT_FEATURE_GATES.with_(
        dynamic_resource_allocation=False, node_declared_features=False
    )
    names = [p.name for p in default_plugins(off).multi_point.enabled]
    assert "DynamicResources" not in names and "NodeDeclaredFeatures" not in names
    on = DEFAULT_FEATURE_GATES.with_(generic_workload=True, gang_scheduling=True)
    assert default_plugins(on).multi_point.enabled[-1].name == "GangScheduling"
    # GenericWorkload alone adds nothing: upstream's applyGangScheduling reads the
    # GangScheduling gate.
    generic = DEFAULT_FEATURE_GATES.with_(generic_workload=True)
    assert "GangScheduling" not in [p.name for p in default_plugins(generic).multi_point.enabled]


# ------------------------------------------------------------------------- merging


def _ps(
    enabled: list[str | tuple[str, int]], disabled: tuple[str, ...] | list[str] = ()
) -> PluginSet:
    return PluginSet(
        enabled=[Plugin(e) if isinstance(e, str) else Plugin(*e) for e in enabled],
        disabled=[Plugin(d) for d in disabled],
    )


DEFAULT = _ps(["DefaultPlugin1", ("DefaultPlugin2", 2), "DefaultPlugin3"])


@pytest.mark.parametrize(
    ("custom", "enabled", "disabled"),
    [
        pytest.param(
            _ps(["CustomPlugin"]),
            [
                ("DefaultPlugin1", None),
                ("DefaultPlugin2", 2),
                ("DefaultPlugin3", None),
                ("CustomPlugin", None),
            ],
            [],
            id="AppendCustomPlugin",
        ),
        pytest.param(
            _ps(["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", "DefaultPlugin3"], ["*"]),
            [
                ("CustomPlugin", None),
                ("DefaultPlugin1", None),
                ("DefaultPlugin2", None),
                ("DefaultPlugin3", None),
            ],
            ["*"],
            id="InsertBeforeAllPlugins",
        ),
        pytest.param(
            _ps(["DefaultPlugin2", "DefaultPlugin1"], ["DefaultPlugin1", "DefaultPlugin2"]),
            [("DefaultPlugin3", None), ("DefaultPlugin2", None), ("DefaultPlugin1", None)],
            ["DefaultPlugin1", "DefaultPlugin2"],
            id="ReorderDefaultPlugins",
        ),
        pytest.param(
            _ps([("DefaultPlugin1", 2), "CustomPlugin"]),
            [
                ("DefaultPlugin1", 2),
                ("DefaultPlugin2", 2),
                ("DefaultPlugin3", None),
                ("CustomPlugin", None),
            ],
            [],
            id="CustomPluginOverrideDefaultPlugin",
        ),
        pytest.param(
            _ps([("DefaultPlugin2", 5), ("DefaultPlugin1", 4)]),
            [("DefaultPlugin1", 4), ("DefaultPlugin2", 5), ("DefaultPlugin3", None)],
            [],
            id="OrderPreserveAfterOverride",
        ),
        pytest.param(
            _ps(["CustomPlugin", ("DefaultPlugin2", 2), "CustomPlugin"]),
            [
                ("DefaultPlugin1", None),
                ("DefaultPlugin2", 2),
                ("DefaultPlugin3", None),
                ("CustomPlugin", None),
                ("CustomPlugin", None),
            ],
            [],
            id="RepeatedCustomPlugin",
        ),
        pytest.param(
            _ps([], ["DefaultPlugin2"]),
            [("DefaultPlugin1", None), ("DefaultPlugin3", None)],
            ["DefaultPlugin2"],
            id="disabled-default-plugin",
        ),
    ],
)
def test_merge_plugin_set(
    custom: PluginSet, enabled: list[tuple[str, int | None]], disabled: list[str]
) -> None:
    merged = merge_plugin_set(DEFAULT, custom)
    assert _names(merged) == enabled
    assert [p.name for p in merged.disabled] == disabled


# -------------------------------------------------------------------- args defaults


def test_plugin_args_defaults() -> None:
    fit = default_args("NodeResourcesFit")
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy == ScoringStrategy(
        "LeastAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    )
    assert fit.kind == "NodeResourcesFitArgs"
    assert default_args("ImageLocality") is None  # no args type
    assert default_args("SomeOutOfTreePlugin") is None


def test_zero_resource_weights_default_to_one() -> None:
    body = """\
    profiles:
    - pluginConfig:
      - name: NodeResourcesBalancedAllocation
        args: {resources: [{name: cpu}, {name: example.com/gpu, weight: 0}]}
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 0}]}}
    """
    pcs = {pc.name: pc.args for pc in load(body).profiles[0].plugin_config}
    bal = pcs["NodeResourcesBalancedAllocation"]
    fit = pcs["NodeResourcesFit"]
    assert isinstance(bal, NodeResourcesBalancedAllocationArgs)
    assert [(r.name, r.weight) for r in bal.resources] == [("cpu", 1), ("example.com/gpu", 1)]
    assert isinstance(fit, NodeResourcesFitArgs) and fit.scoring_strategy is not None
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [("cpu", 1)]


def test_plugin_config_appended_only_for_enabled_plugins_in_name_order() -> None:
    cfg = load("profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: VolumeBinding}]\n")
    assert [pc.name for pc in cfg.profiles[0].plugin_config] == [
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
    ]


# ------------------------------------------------------------------ global defaults


def test_global_defaults() -> None:
    cfg = set_defaults(KubeSchedulerConfiguration())
    le, cc = cfg.leader_election, cfg.client_connection
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == (True, True)
    assert cfg.delay_cache_until_active is False
    assert le.leader_elect is True
    assert (str(le.lease_duration), str(le.renew_deadline), str(le.retry_period)) == (
        "15s",
        "10s",
        "2s",
    )
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "kube-scheduler",
    )
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/vnd.kubernetes.protobuf")
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]


def test_profiling_off_leaves_contention_profiling_off() -> None:
    cfg = load("enableProfiling: false\n")
    assert cfg.enable_contention_profiling is None
    assert "enableContentionProfiling: false\n" in dump_yaml(cfg)


def test_scheduler_name_defaulted_only_for_a_single_profile() -> None:
    cfg = set_defaults(
        KubeSchedulerConfiguration(profiles=[KubeSchedulerProfile(), KubeSchedulerProfile()])
    )
    assert [p.scheduler_name for p in cfg.profiles] == [None, None]


# ------------------------------------------------------------------------ expansion


def _profile(plugins: Plugins) -> KubeSchedulerProfile:
    cfg = set_defaults(
        KubeSchedulerConfiguration(profiles=[KubeSchedulerProfile("p", plugins=plugins)])
    )
    return cfg.profiles[0]


def test_explicit_point_overrides_multipoint_and_goes_first() -> None:
    # TestNewFrameworkMultiPointExpansion "Override MultiPoint plugins weights"-style:
    # an explicit score entry keeps its weight and runs before the multiPoint ones.
    prof = _profile(Plugins(score=_ps([("PodTopologySpread", 9)])))
    score = expand_profile_plugins(prof)["score"]
    assert score[0] == ("PodTopologySpread", 9)
    assert ("TaintToleration", 3) in score and len({n for n, _ in score}) == len(score)


def test_multipoint_plugin_disabled_at_one_point() -> None:
    prof = _profile(Plugins(pre_score=_ps([], ["TaintToleration"])))
    points = expand_profile_plugins(prof)
    assert "TaintToleration" not in [n for n, _ in points["preScore"]]
    assert ("TaintToleration", 3) in points["score"]
    assert "TaintToleration" in [n for n, _ in points["filter"]]


def test_star_disables_multipoint_expansion_for_a_point() -> None:
    prof = _profile(Plugins(filter=_ps(["NodeName"], ["*"])))
    assert expand_profile_plugins(prof)["filter"] == [("NodeName", 0)]


def test_score_weight_zero_means_one() -> None:
    prof = _profile(Plugins(multi_point=_ps([("TaintToleration", 0)])))
    assert ("TaintToleration", 1) in expand_profile_plugins(prof)["score"]


def test_double_registration_through_multipoint_is_an_error() -> None:
    prof = _profile(Plugins(multi_point=_ps(["CustomPlugin", "CustomPlugin"])))
    with pytest.raises(
        ExpansionError, match='plugin "CustomPlugin" already registered as "FilterPlugin"'
    ):
        expand_profile_plugins(prof, {"CustomPlugin": ["filter"]})


def test_out_of_tree_extension_points_come_from_the_caller() -> None:
    prof = _profile(Plugins(multi_point=_ps([("MyScore", 5)])))
    points = expand_profile_plugins(prof, {"MyScore": ["preScore", "score"]})
    assert points["score"][-1] == ("MyScore", 5)
    assert points["preScore"][-1] == ("MyScore", 0)
    assert "MyScore" not in [n for n, _ in expand_profile_plugins(prof)["score"]]


# ------------------------------------------------------------------------ durations


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (15 * 10**9, "15s"),
        (600 * 10**9, "10m0s"),
        (3600 * 10**9, "1h0m0s"),
        (1_500_000_000, "1.5s"),
        (500_000_000, "500ms"),
        (1500, "1.5µs"),
        (7, "7ns"),
        (-2 * 10**9, "-2s"),
    ],
)
def test_duration_text_matches_go(ns: int, text: str) -> None:
    assert format_duration(ns) == text
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", ["1h30m", "90m", "5400s", "1.5h"])
def test_duration_parse_forms(text: str) -> None:
    assert parse_duration(text) == 5400 * 10**9
    assert str(Duration.parse(text)) == "1h30m0s"


@pytest.mark.parametrize("text", ["", "10", "1x", "s", "1.5.3s"])
def test_duration_parse_errors(text: str) -> None:
    with pytest.raises(ValueError, match="time: "):
        parse_duration(text)
