"""One test per validation rule: exact upstream field path and wording.

Expected strings follow ``field.Error.Error()`` as produced by
``pkg/scheduler/apis/config/validation/validation.go`` and
``validation_pluginargs.go`` (and component-base's leader-election / client
connection checks); cases are named like upstream's ``validation_test.go`` tables.
"""

from __future__ import annotations

import pytest
from config_testlib import errors_of, load

from ksched.config import (
    ConfigError,
    Duration,
    DynamicResourcesArgs,
    KubeSchedulerConfiguration,
    known_plugin_names,
    set_defaults,
    validate,
)
from ksched.config.defaults import DEFAULT_FEATURE_GATES


def test_valid_default_config_has_no_errors() -> None:
    assert validate(set_defaults(KubeSchedulerConfiguration())) == []


# ------------------------------------------------------------------ top-level fields


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "parallelism: -1\n",
            "parallelism: Invalid value: -1: should be an integer value greater than zero",
            id="bad-parallelism-invalid-value",
        ),
        pytest.param(
            "percentageOfNodesToScore: 110\n",
            "percentageOfNodesToScore: Invalid value: 110: not in valid range [0-100]",
            id="bad-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "percentageOfNodesToScore: -1\n",
            "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
            id="negative-percentage-of-nodes-to-score",
        ),
        pytest.param(
            "podInitialBackoffSeconds: -1\n",
            "podInitialBackoffSeconds: Invalid value: -1: must be greater than 0",
            id="bad-initial-backoff",
        ),
        pytest.param(
            "podInitialBackoffSeconds: 20\n",
            "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to "
            "PodInitialBackoffSeconds",
            id="max-backoff-below-initial",
        ),
        pytest.param(
            "clientConnection:\n  burst: -10\n",
            "clientConnection.burst: Invalid value: -10: must be non-negative",
            id="negative-burst",
        ),
    ],
)
def test_top_level_rules(body: str, expected: str) -> None:
    assert errors_of(body) == [expected]


def test_initial_backoff_zero_is_defaulted_not_rejected() -> None:
    # podInitialBackoffSeconds: 0 is an explicit value (pointer set), so it is invalid.
    assert errors_of("podInitialBackoffSeconds: 0\n") == [
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
    ]


def test_qps_zero_takes_the_scheduler_default() -> None:
    assert load("clientConnection:\n  qps: 0\n").client_connection.qps == 50.0


# -------------------------------------------------------------------- leader election


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            "leaderElection:\n  resourceLock: configmaps\n",
            [
                'leaderElection.resourceLock: Invalid value: "configmaps": '
                'resourceLock value must be "leases"'
            ],
            id="bad-resource-lock-not-leases",
        ),
        pytest.param(
            "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n",
            [
                'leaderElection.leaseDuration: Invalid value: "10s": '
                "must be greater than `RenewDeadline`"
            ],
            id="lease-duration-not-greater-than-renew-deadline",
        ),
        pytest.param(
            "leaderElection:\n  renewDeadline: 2s\n  retryPeriod: 2s\n",
            [
                'leaderElection.renewDeadline: Invalid value: "2s": '
                "renewDeadline must be greater than retryPeriod*JitterFactor"
            ],
            id="renew-deadline-not-greater-than-retry-period-jitter",
        ),
        pytest.param(
            "leaderElection:\n  leaseDuration: -1s\n",
            [
                'leaderElection.leaseDuration: Invalid value: "-1s": must be greater than zero',
                'leaderElection.leaseDuration: Invalid value: "10s": '
                "must be greater than `RenewDeadline`",
            ],
            id="negative-lease-duration",
        ),
        pytest.param(
            "leaderElection:\n  retryPeriod: -2s\n",
            ['leaderElection.retryPeriod: Invalid value: "-2s": must be greater than zero'],
            id="negative-retry-period",
        ),
    ],
)
def test_leader_election_rules(body: str, expected: list[str]) -> None:
    assert errors_of(body) == expected


def test_leader_election_checks_skipped_when_not_electing() -> None:
    cfg = load("leaderElection:\n  leaderElect: false\n  leaseDuration: 1s\n  resourceLock: x\n")
    assert cfg.leader_election.leader_elect is False


# --------------------------------------------------------------------------- profiles


def test_no_profiles_after_defaulting_is_impossible_but_validated() -> None:
    cfg = set_defaults(KubeSchedulerConfiguration())
    cfg.profiles = []
    assert [str(e) for e in validate(cfg)] == ["profiles: Required value"]


def test_duplicate_scheduler_name() -> None:
    body = "profiles:\n- schedulerName: a\n- schedulerName: a\n"
    # Upstream passes the *field.Path of the first profile as the value, which
    # encoding/json renders as {}.
    assert errors_of(body) == ["profiles[1].schedulerName: Duplicate value: {}"]


def test_empty_scheduler_name_with_several_profiles() -> None:
    body = "profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 5\n"
    assert errors_of(body) == ["profiles[1].schedulerName: Required value"]


def test_explicit_empty_scheduler_name() -> None:
    assert errors_of('profiles:\n- schedulerName: ""\n') == [
        "profiles[0].schedulerName: Required value"
    ]


def test_profile_percentage_of_nodes_to_score() -> None:
    body = "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: 101\n"
    assert errors_of(body) == [
        "profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"
    ]


def test_different_queue_sort_plugins() -> None:
    body = """\
    profiles:
    - schedulerName: a
    - schedulerName: b
      plugins:
        queueSort:
          enabled:
          - name: CustomSort
          disabled:
          - name: "*"
    """
    assert errors_of(body, extra=["CustomSort"]) == [
        'profiles[1].plugins.queueSort: Invalid value: {"Enabled":[{"Name":"CustomSort",'
        '"Weight":0}],"Disabled":[{"Name":"*","Weight":0}]}: must be the same for all profiles'
    ]


def test_different_queue_sort_args() -> None:
    body = """\
    profiles:
    - schedulerName: a
      plugins:
        queueSort:
          enabled: [{name: CustomSort}]
          disabled: [{name: "*"}]
      pluginConfig:
      - name: CustomSort
        args: {order: asc}
    - schedulerName: b
      plugins:
        queueSort:
          enabled: [{name: CustomSort}]
          disabled: [{name: "*"}]
      pluginConfig:
      - name: CustomSort
        args: {order: desc}
    """
    errs = errors_of(body, extra=["CustomSort"])
    assert len(errs) == 1
    assert errs[0].startswith("profiles[1].pluginConfig.args: Invalid value: ")
    assert errs[0].endswith(": queueSort must be the same for all profiles")


def test_only_one_queue_sort_plugin() -> None:
    body = """\
    profiles:
    - schedulerName: a
      plugins:
        queueSort:
          enabled: [{name: PrioritySort}, {name: CustomSort}]
    """
    assert errors_of(body, extra=["CustomSort"]) == [
        # What NewFramework would refuse, reported with the profile...
        "profiles[0].plugins.queueSort: Invalid value: 2: only one queue sort plugin required "
        'for profile with scheduler name "a", but got 2',
        # ...and upstream's validateCommonQueueSort check (its path spells "Enabled").
        "profiles[0].plugins.queueSort.Enabled: Invalid value: 2: "
        "only one queue sort plugin can be enabled",
    ]


# ---------------------------------------------------------------------------- plugins


def test_unknown_plugin_lists_known_ones() -> None:
    body = "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: PodAffinity\n"
    (err,) = errors_of(body)
    prefix = 'profiles[0].plugins.filter.enabled[0]: Invalid value: "PodAffinity": '
    assert err.startswith(
        prefix
        + "plugin does not exist; known plugins: CapacityScheduling, Coscheduling, DefaultBinder, "
    )
    assert ", InterPodAffinity, " in err and err.endswith(", VolumeZone")


def test_out_of_tree_plugin_known_through_registry_hook() -> None:
    body = "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: NetworkOverhead\n"
    assert "NetworkOverhead" in known_plugin_names(["NetworkOverhead"])
    # Paths index the defaulted config, as upstream's do (and as --write-config-to shows
    # it): the 20 v1.36 defaults come first in multiPoint.
    assert errors_of(body)[0].startswith(
        'profiles[0].plugins.multiPoint.enabled[20]: Invalid value: "NetworkOverhead": '
        "plugin does not exist"
    )
    load(body, extra=["NetworkOverhead"])  # no error once the registry knows it


@pytest.mark.parametrize(
    ("plugin", "version", "note"),
    [
        ("NodeLabel", "v1beta2", "not available since Kubernetes v1.22, use NodeAffinity"),
        (
            "ServiceAffinity",
            "v1beta2",
            "not available since Kubernetes v1.22, use InterPodAffinity",
        ),
        ("NodePreferAvoidPods", "v1beta3", "not available since Kubernetes v1.23, use node taints"),
        (
            "EBSLimits",
            "v1",
            "removed in Kubernetes v1.32, NodeVolumeLimits covers these volumes via CSI",
        ),
        (
            "GCEPDLimits",
            "v1",
            "removed in Kubernetes v1.32, NodeVolumeLimits covers these volumes via CSI",
        ),
        (
            "AzureDiskLimits",
            "v1",
            "removed in Kubernetes v1.32, NodeVolumeLimits covers these volumes via CSI",
        ),
        (
            "CinderLimits",
            "v1",
            "removed in Kubernetes v1.32, NodeVolumeLimits covers these volumes via CSI",
        ),
    ],
)
def test_removed_plugins(plugin: str, version: str, note: str) -> None:
    body = f"profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: {plugin}\n"
    # kube-scheduler v1.36 prints core/v1's group version ("v1") for its own list.
    shown = version if version == "v1" else f"kubescheduler.config.k8s.io/{version}"
    assert errors_of(body) == [
        f'profiles[0].plugins.filter.enabled[0]: Invalid value: "{plugin}": was invalid in version '
        f'"{shown}" (KubeSchedulerConfiguration is version '
        f'"kubescheduler.config.k8s.io/v1"); {note}'
    ]


def test_removed_plugin_in_plugin_config() -> None:
    body = "profiles:\n- pluginConfig:\n  - name: NodeLabel\n    args: {presentLabels: [a]}\n"
    assert errors_of(body) == [
        'profiles[0].pluginConfig[0]: Invalid value: "NodeLabel": was invalid in version '
        '"kubescheduler.config.k8s.io/v1beta2" (KubeSchedulerConfiguration is version '
        '"kubescheduler.config.k8s.io/v1")'
    ]


def test_duplicate_plugin_config() -> None:
    body = "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n  - name: VolumeBinding\n"
    assert errors_of(body) == ['profiles[0].pluginConfig[1]: Duplicate value: "VolumeBinding"']


def test_plugin_enabled_at_a_point_it_does_not_implement() -> None:
    body = "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: PrioritySort\n"
    assert errors_of(body) == [
        'profiles[0].plugins.filter.enabled[0]: Invalid value: "PrioritySort": '
        'plugin "PrioritySort" does not extend FilterPlugin plugin'
    ]


def test_plugin_registered_twice_at_a_point() -> None:
    body = (
        "profiles:\n- plugins:\n    score:\n      enabled: [{name: "
        "ImageLocality}, {name: ImageLocality}]\n"
    )
    assert errors_of(body) == [
        'profiles[0].plugins.score.enabled[1]: Invalid value: "ImageLocality": '
        'plugin "ImageLocality" already registered as "ScorePlugin"'
    ]


def test_no_bind_plugin() -> None:
    body = "profiles:\n- plugins:\n    bind:\n      disabled: [{name: DefaultBinder}]\n"
    assert errors_of(body) == [
        "profiles[0].plugins.bind: Required value: at least one bind plugin is needed for "
        'profile with scheduler name "default-scheduler"'
    ]


def test_no_queue_sort_plugin() -> None:
    body = "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: PrioritySort}]\n"
    assert errors_of(body) == [
        "profiles[0].plugins.queueSort: Invalid value: 0: only one queue sort plugin required "
        'for profile with scheduler name "default-scheduler", but got 0'
    ]


# ------------------------------------------------------------------------- extenders


def test_extender_weight_required_with_prioritize_verb() -> None:
    body = "extenders:\n- urlPrefix: http://e\n  prioritizeVerb: prioritize\n  weight: -2\n"
    assert errors_of(body) == [
        "extenders[0].weight: Invalid value: -2: must have a positive weight applied to it"
    ]


def test_only_one_binder_extender() -> None:
    body = (
        "extenders:\n- {urlPrefix: http://a, bindVerb: bind}\n- "
        "{urlPrefix: http://b, bindVerb: bind}\n"
    )
    assert errors_of(body) == [
        'extenders: Invalid value: "found 2 extenders implementing '
        'bind": only one extender can implement bind'
    ]


def test_extender_managed_resources() -> None:
    body = """\
    extenders:
    - urlPrefix: http://a
      managedResources:
      - name: example.com/foo
      - name: example.com/foo
      - name: memory
      - name: bad name/x
    """
    assert errors_of(body) == [
        'extenders[0].managedResources[1].name: Invalid value: "example.com/foo": '
        "duplicate extender managed resource name",
        'extenders[0].managedResources[2].name: Invalid value: "memory": '
        "is an invalid extended resource name",
        'extenders[0].managedResources[3].name: Invalid value: "bad name/x": prefix part a '
        "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]


# ----------------------------------------------------------------------- plugin args


def _args(plugin: str, args: str) -> str:
    return f"profiles:\n- pluginConfig:\n  - name: {plugin}\n    args: {args}\n"


P = "profiles[0].pluginConfig[0].args"
R = f"{P}.scoringStrategy.requestedToCapacityRatio.shape"


@pytest.mark.parametrize(
    ("plugin", "args", "expected"),
    [
        pytest.param(
            "DefaultPreemption",
            "{minCandidateNodesPercentage: 101}",
            [f"{P}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"],
            id="DefaultPreemption-percentage-out-of-range",
        ),
        pytest.param(
            "DefaultPreemption",
            "{minCandidateNodesAbsolute: -1}",
            [f"{P}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
            id="DefaultPreemption-negative-absolute",
        ),
        pytest.param(
            "DefaultPreemption",
            "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}",
            [
                f"{P}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesAbsolute",
                f"{P}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
                "time as minCandidateNodesPercentage",
            ],
            id="DefaultPreemption-both-zero",
        ),
        pytest.param(
            "InterPodAffinity",
            "{hardPodAffinityWeight: 101}",
            [f"{P}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"],
            id="InterPodAffinity-weight-out-of-range",
        ),
        pytest.param(
            "PodTopologySpread",
            "{defaultingType: Foo}",
            [f'{P}.defaultingType: Unsupported value: "Foo": supported values: "System", "List"'],
            id="PodTopologySpread-unsupported-defaulting-type",
        ),
        pytest.param(
            "PodTopologySpread",
            "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule}]}",
            [
                f'{P}.defaultingType: Invalid value: "System": when '
                f".defaultConstraints are not empty"
            ],
            id="PodTopologySpread-system-defaulting-with-constraints",
        ),
        pytest.param(
            "PodTopologySpread",
            "{defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: '',"
            " whenUnsatisfiable: Sometimes, labelSelector: {}}]}",
            [
                f"{P}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
                f"{P}.defaultConstraints[0].topologyKey: Required value: can not be empty",
                f'{P}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": '
                'supported values: "DoNotSchedule", "ScheduleAnyway"',
                f"{P}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define "
                "a selector, as they deduced for each pod",
            ],
            id="PodTopologySpread-bad-constraint",
        ),
        pytest.param(
            "PodTopologySpread",
            "{defaultingType: List, defaultConstraints: ["
            "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule},"
            "{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}",
            [f'{P}.defaultConstraints[1]: Duplicate value: "{{zone, DoNotSchedule}}"'],
            id="PodTopologySpread-repeated-constraint",
        ),
        pytest.param(
            "NodeResourcesBalancedAllocation",
            "{resources: [{name: cpu, weight: 2}, {name: cpu, weight: 1}]}",
            [
                f"{P}.resources[0].weight: Invalid value: 2: must be 1",
                f'{P}.resources[1].name: Duplicate value: "cpu"',
            ],
            id="NodeResourcesBalancedAllocation-weight-and-duplicate",
        ),
        pytest.param(
            "VolumeBinding",
            "{bindTimeoutSeconds: -10}",
            [
                f"{P}.bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, "
                "should not be a negative value"
            ],
            id="VolumeBinding-negative-timeout",
        ),
        pytest.param(
            "VolumeBinding",
            "{shape: [{utilization: 0, score: 0}]}",
            [
                f'{P}.shape: Invalid value: [{{"Utilization":0,"Score":0}}]: unexpected field '
                "`shape`, remove it or "
                "turn on the feature gate StorageCapacityScoring"
            ],
            id="VolumeBinding-shape-without-feature-gate",
        ),
        pytest.param(
            "NodeResourcesFit",
            "{ignoredResources: ['-bad'], ignoredResourceGroups: [example.com/x]}",
            [
                f'{P}.ignoredResources[0]: Invalid value: "-bad": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
                "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                f'{P}.ignoredResourceGroups[0]: Invalid value: "example.com/x": resource group '
                "name can't contain '/'",
            ],
            id="NodeResourcesFit-ignored-resources",
        ),
        pytest.param(
            "NodeResourcesFit",
            "{scoringStrategy: {type: Invalid}}",
            [
                f'{P}.scoringStrategy.type: Unsupported value: "Invalid": supported values: '
                '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
            id="NodeResourcesFit-unsupported-strategy",
        ),
        pytest.param(
            "NodeResourcesFit",
            "{scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}}",
            [
                f"{P}.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight "
                "of cpu not in valid range (0, 100]"
            ],
            id="NodeResourcesFit-resource-weight-out-of-range",
        ),
        pytest.param(
            "NodeResourcesFit",
            "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio:"
            " {shape: [{utilization: 50, score: 11}, {utilization: 10, score: -1}]}}}",
            [
                f"{R}[1].utilization: Invalid value: 10: values must be sorted in increasing order",
                f"{R}[0].score: Invalid value: 11: not in valid range [0, 10]",
                f"{R}[1].score: Invalid value: -1: not in valid range [0, 10]",
            ],
            id="NodeResourcesFit-bad-shape",
        ),
        pytest.param(
            "NodeResourcesFit",
            "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {}}}",
            [f"{R}: Required value: at least one point must be specified"],
            id="NodeResourcesFit-empty-shape",
        ),
        pytest.param(
            "NodeAffinity",
            "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:"
            " [{matchExpressions: [{key: zone, operator: Foo, values: [a]}]}]}}}",
            [
                f"{P}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": '
                'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
            ],
            id="NodeAffinity-bad-operator",
        ),
        pytest.param(
            "DynamicResources",
            "{filterTimeout: -1s}",
            [f'{P}.filterTimeout: Invalid value: "-1s": must be zero or positive'],
            id="DynamicResources-negative-filter-timeout",
        ),
        pytest.param(
            "DynamicResources",
            "{bindingTimeout: 500ms}",
            [f'{P}.bindingTimeout: Invalid value: "500ms": must be at least 1 second'],
            id="DynamicResources-short-binding-timeout",
        ),
    ],
)
def test_plugin_args_rules(plugin: str, args: str, expected: list[str]) -> None:
    assert errors_of(_args(plugin, args)) == expected


def test_volume_binding_shape_with_storage_capacity_scoring() -> None:
    gates = DEFAULT_FEATURE_GATES.with_(storage_capacity_scoring=True)
    body = _args("VolumeBinding", "{shape: [{utilization: 101, score: 1}]}")
    assert errors_of(body, gates=gates) == [
        f"{P}.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]"
    ]
    cfg = load("", gates=gates)
    vb = next(pc.args for pc in cfg.profiles[0].plugin_config if pc.name == "VolumeBinding")
    assert vb is not None and [(p.utilization, p.score) for p in vb.shape] == [(0, 10), (100, 0)]  # type: ignore[union-attr]


def test_dynamic_resources_fields_forbidden_when_gates_off() -> None:
    gates = DEFAULT_FEATURE_GATES.with_(
        dra_scheduler_filter_timeout=False, dra_device_binding_conditions=False
    )
    body = _args("DynamicResources", "{filterTimeout: 5s, bindingTimeout: 5s}")
    assert errors_of(body, gates=gates) == [
        f"{P}.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled",
        f"{P}.bindingTimeout: Forbidden: DRADeviceBindingConditions or "
        "DRAResourceClaimDeviceStatus feature gate is disabled",
    ]
    args = DynamicResourcesArgs()
    from ksched.config.defaults import set_defaults_args

    set_defaults_args(args, gates)
    assert args.filter_timeout is None and args.binding_timeout is None
    set_defaults_args(args)
    assert args.filter_timeout == Duration.seconds(10) and args.binding_timeout == Duration.seconds(
        600
    )


# ------------------------------------------------------------------------ aggregation


def test_all_errors_are_aggregated_in_one_message() -> None:
    body = (
        "parallelism: 0\npercentageOfNodesToScore: 200\nprofiles:\n- "
        "schedulerName: a\n- schedulerName: a\n"
    )
    with pytest.raises(ConfigError) as info:
        load(body)
    err = info.value
    assert [e.field for e in err.errors] == [
        "parallelism",
        "profiles[1].schedulerName",
        "percentageOfNodesToScore",
    ]
    assert str(err) == (
        "test.yaml: [parallelism: Invalid value: 0: should be an integer value greater than zero, "
        "profiles[1].schedulerName: Duplicate value: {}, "
        "percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]]"
    )
