"""NodeDeclaredFeatures: upstream's test tables, and component-helpers' inference tables.

Ported from pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go
(TestPreFilter, TestFilter, TestEnqueueExtensionsNodeUpdate, TestEnqueueExtensionsPodUpdate)
and from k8s.io/component-helpers/nodedeclaredfeatures (framework_test.go
TestInferForPodScheduling and TestMatchNode, featureset_test.go TestFeatureMapper, and each
feature's Requirements/InferForScheduling tests). Upstream's mock features become
:class:`Feature` rows with a fixed rule; the cases upstream needs mocks for that cannot
arise here are named where they are left out.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched._core import CompiledPod, Profile, Snapshot
from ksched.api.declared_features import (
    REGISTRY,
    SCHEDULER_VERSION,
    Feature,
    Version,
    infer_for_pod_scheduling,
    try_map,
)
from ksched.api.errors import InvalidObjectError
from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import NODE, POD, ActionType, QueueingHint
from ksched.config import DEFAULT_FEATURE_GATES
from ksched.plugins import node_declared_features as ndf
from ksched.profiles import kernel_filters
from ksched.sim.workloads import make_node
from tests.helpers import parsed_pod
from tests.plugins.harness import Obj, cluster, container, explain, node, pod, statuses

PLUGIN = "NodeDeclaredFeatures"
UNSATISFIED = ("UnschedulableAndUnresolvable", "node(s) didn't match Pod's required features")
RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def mock(name: str, infer: bool, max_version: str | None = None) -> Feature:
    """upstream createMockFeature: a feature whose InferForScheduling always answers
    ``infer``."""
    return Feature(
        name,
        ("test-gate",),
        lambda spec: infer,
        None if max_version is None else Version.parse(max_version),
    )


def compiled(required: list[str]) -> CompiledPod:
    return CompiledPod(
        "uid-p",
        "default",
        "p",
        requests={"cpu": 100},
        non_zero_cpu=100,
        non_zero_memory=0,
        required_features=required,
    )


def snap_with(declared: dict[str, list[str]]) -> Snapshot:
    snap = Snapshot(1)
    for name, features in declared.items():
        snap.upsert_node(name, {"cpu": 4000, "pods": 110}, declared_features=features)
    return snap


# ---- PreFilter ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("registry", "version", "want"),
    [
        pytest.param(
            [mock("TestFeature1", True), mock("TestFeature2", False)],
            "1.35.0",
            ("TestFeature1",),
            id="pod-with-feature-requirements",
        ),
        pytest.param(
            [mock("TestFeature1", True, "1.38.0"), mock("TestFeature2", True, "1.38.0")],
            "1.35.0",
            ("TestFeature1", "TestFeature2"),
            id="pod-with-multiple-feature-requirements",
        ),
        pytest.param(
            [mock("TestFeature1", False), mock("TestFeature2", False)],
            "1.35.0",
            (),
            id="pod-with-no-requirements",
        ),
        pytest.param(
            [mock("TestFeature1", True, "1.33.0"), mock("TestFeature2", False)],
            "1.34.0",
            (),
            id="feature-not-required-version-greater-than-max-version",
        ),
    ],
)
def test_pre_filter_inference(registry: list[Feature], version: str, want: tuple[str, ...]):
    assert infer_for_pod_scheduling({}, Version.parse(version), registry) == want


@pytest.mark.parametrize(
    ("required", "active"),
    [
        pytest.param([RESTART_ALL], True, id="pod-with-feature-requirements-runs-the-filter"),
        pytest.param([], False, id="pod-with-no-requirements-is-a-skip"),
    ],
)
def test_pre_filter_skip(required: list[str], active: bool):
    """A pod that requires nothing skips the Filter (upstream PreFilter returns Skip)."""
    snap = snap_with({"n": []})
    assert (PLUGIN in snap.active_filters(compiled(required), Profile([PLUGIN], []))) is active


@pytest.mark.parametrize(
    ("gate", "want"),
    [
        pytest.param(True, ("NodeUnschedulable", PLUGIN), id="plugin-enabled"),
        pytest.param(False, ("NodeUnschedulable",), id="plugin-disabled"),
    ],
)
def test_plugin_disabled_without_the_gate(gate: bool, want: tuple[str, ...]):
    """upstream "plugin disabled": with the gate off the plugin skips PreFilter and
    passes Filter, so it is not among the kernels' filters at all."""
    gates = DEFAULT_FEATURE_GATES.with_(node_declared_features=gate)
    filters, _ = kernel_filters([("NodeUnschedulable", 0), (PLUGIN, 0)], gates)
    assert filters == want


# ---- Filter -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "required", "want"),
    [
        pytest.param(["FeatureA", "FeatureB"], ["FeatureA"], None, id="node-matches-requirements"),
        pytest.param(
            ["FeatureB"], ["FeatureA"], UNSATISFIED, id="node-does-not-match-requirements"
        ),
        pytest.param(
            ["FeatureA", "FeatureB", "FeatureC"],
            ["FeatureA", "FeatureC"],
            None,
            id="node-with-multiple-features-pod-requires-subset",
        ),
        pytest.param([], ["FeatureA"], UNSATISFIED, id="node-has-no-declared-features"),
        pytest.param(
            ["FeatureA"],
            ["FeatureA", "FeatureB"],
            UNSATISFIED,
            id="node-with-some-but-not-all-required-features",
        ),
        # upstream TestMatchNode's rows, through the same kernel.
        pytest.param(
            ["feature-a", "feature-b", "feature-c"],
            ["feature-a", "feature-b"],
            None,
            id="match-all-features-match",
        ),
        pytest.param(
            ["feature-a", "feature-c"],
            ["feature-a", "feature-b"],
            UNSATISFIED,
            id="match-some-features-missing",
        ),
        pytest.param(
            ["feature-c"], ["feature-a", "feature-b"], UNSATISFIED, id="match-all-features-missing"
        ),
        pytest.param(["feature-a", "feature-b", "feature-c"], [], None, id="match-no-requirements"),
    ],
)
def test_filter(declared: list[str], required: list[str], want: object):
    snap = snap_with({"node-1": declared})
    result = snap.explain(compiled(required), Profile([PLUGIN], []))
    got = {e["node"]: e for e in result}
    status = got["node-1"]["status"]
    if want is None:
        assert status is None
    else:
        assert (status["code"], status["reasons"][0]) == want
        assert status["plugin"] == PLUGIN


def test_filter_of_a_profile_without_the_plugin_passes():
    """upstream "plugin disabled" (Filter): a profile without the plugin never rejects."""
    snap = snap_with({"node-1": ["FeatureA", "FeatureB"]})
    result = snap.explain(compiled(["FeatureC"]), Profile(["NodeUnschedulable"], []))
    assert [e["status"] for e in result] == [None]


# upstream "Error getting pre-filter state" has no counterpart: the kernels compute the
# state and the Filter in one call, so the state cannot be missing.


@pytest.mark.parametrize(
    ("nodes", "incoming", "want"),
    [
        pytest.param(
            [node("with", declared_features=[RESTART_ALL]), node("without")],
            pod(
                containers=[
                    container(restart_policy="Never", restart_rules=["RestartAllContainers"])
                ]
            ),
            {"with": None, "without": UNSATISFIED},
            id="restart-all-containers-rule-needs-the-feature",
        ),
        pytest.param(
            [node("with", declared_features=[USERNS_HOST_NETWORK]), node("without")],
            pod(containers=[container()], host_network=True, host_users=False),
            {"with": None, "without": UNSATISFIED},
            id="user-namespace-with-host-network-needs-the-feature",
        ),
        pytest.param(
            [node("with", declared_features=[RESTART_ALL]), node("without")],
            pod(containers=[container(restart_policy="Never", restart_rules=["Restart"])]),
            {"with": None, "without": None},
            id="plain-restart-rule-needs-nothing",
        ),
        pytest.param(
            [node("other", declared_features=["ExtendWebSocketsToKubelet"])],
            pod(
                containers=[container()],
                init_containers=[
                    container(
                        name="i", restart_policy="Always", restart_rules=["RestartAllContainers"]
                    )
                ],
                host_network=True,
                host_users=False,
            ),
            {"other": UNSATISFIED},
            id="both-features-needed-node-declares-another",
        ),
    ],
)
def test_filter_of_parsed_pods(nodes: list[Obj], incoming: Obj, want: dict[str, object]):
    """The whole path: the pod's spec, parsed as the scheduler parses it, to a verdict."""
    got = explain(cluster(nodes), incoming, [PLUGIN])
    assert statuses(got) == want


# ---- queueing hints -----------------------------------------------------------------------


def parsed_node(declared: list[str] | None) -> Node:
    return Node.from_dict(make_node("node-1", declared_features=declared))


ADD = "add"


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(ADD, ["FeatureA"], QUEUE, id="node-add-with-feature"),
        pytest.param(ADD, None, QUEUE, id="derived-node-add-without-features"),
        pytest.param(None, ["FeatureA"], QUEUE, id="node-update-features-added"),
        pytest.param(["FeatureA"], ["FeatureA"], SKIP, id="node-update-features-unchanged"),
        pytest.param(
            ["FeatureA", "FeatureB"], ["FeatureA"], QUEUE, id="derived-node-update-removed"
        ),
        pytest.param([], None, SKIP, id="derived-node-update-empty-and-absent-are-equal"),
    ],
)
def test_hint_node_change(old: Any, new: list[str] | None, want: QueueingHint):
    old_node = None if old == ADD else parsed_node(old)
    assert ndf.after_node_change(parsed_pod("test-pod"), old_node, parsed_node(new)) is want


def restart_all(name: str, uid: str) -> Pod:
    spec = {
        "containers": [container(restart_policy="Never", restart_rules=["RestartAllContainers"])]
    }
    return parsed_pod(name, uid=uid, extra_spec=spec)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(
            parsed_pod("test-pod", uid="123"),
            restart_all("test-pod", "123"),
            QUEUE,
            id="pod-update-adds-requirement",
        ),
        pytest.param(
            restart_all("test-pod", "123"),
            parsed_pod("test-pod", uid="123"),
            QUEUE,
            id="pod-update-removes-requirement",
        ),
        pytest.param(
            parsed_pod("test-pod", uid="123"),
            parsed_pod("test-pod", uid="123", labels={"foo": "bar"}),
            SKIP,
            id="pod-update-with-no-change-in-requirements",
        ),
        pytest.param(
            restart_all("another-test-pod", "456"),
            parsed_pod("another-test-pod", uid="456"),
            SKIP,
            id="updated-pod-not-the-same-as-target-pod",
        ),
    ],
)
def test_hint_pod_update(old: Pod, new: Pod, want: QueueingHint):
    target = parsed_pod("test-pod", uid="123")
    assert ndf.after_pod_update(target, old, new) is want


# upstream "Infer returns error" needs a nil component version; ksched's is a constant.


def test_events_to_register():
    regs = ndf.events_to_register()
    assert [(r.event.resource, r.event.action) for r in regs] == [
        (NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (POD, ActionType.UPDATE),
    ]
    assert all(r.hint is not None for r in regs)


def test_reason_text_matches_the_kernel():
    snap = snap_with({"n": []})
    result = snap.schedule(compiled(["X"]), Profile([PLUGIN], []))
    assert [r for _, _, _, reasons in result.statuses for r in reasons] == [
        ndf.ERR_REASON_UNSATISFIED
    ]


# ---- component-helpers: the registry and each feature's inference ---------------------------


def test_registry_is_upstreams_sorted_with_its_gates():
    """features.AllFeatures sorted by name (Framework.New), each Requirements() naming
    exactly its own gate (TestRequirements / TestFeatureRequirementsConsistency)."""
    assert [(f.name, f.feature_gates, f.max_version) for f in REGISTRY] == [
        ("ExtendWebSocketsToKubelet", ("ExtendWebSocketsToKubelet",), None),
        (
            "InPlacePodLevelResourcesVerticalScaling",
            ("InPlacePodLevelResourcesVerticalScaling",),
            None,
        ),
        (
            "InPlacePodVerticalScalingInitContainers",
            ("InPlacePodVerticalScalingInitContainers",),
            None,
        ),
        ("RestartAllContainersOnContainerExits", ("RestartAllContainersOnContainerExits",), None),
        ("UserNamespacesHostNetworkSupport", ("UserNamespacesHostNetworkSupport",), None),
    ]


def restart_rule_container(name: str, action: str = "RestartAllContainers") -> Obj:
    return container(name=name, image="image", restart_policy="Never", restart_rules=[action])


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {
                "initContainers": [restart_rule_container("container")],
                "containers": [{"name": "name", "image": "image"}],
            },
            True,
            id="init-container-with-rules",
        ),
        pytest.param(
            {
                "initContainers": [{"name": "name", "image": "image"}],
                "containers": [restart_rule_container("container")],
            },
            True,
            id="regular-container-with-rules",
        ),
        pytest.param(
            {
                "initContainers": [{"name": "name", "image": "image"}],
                "containers": [{"name": "name2", "image": "image"}],
            },
            False,
            id="no-rules",
        ),
        pytest.param(
            {"containers": [restart_rule_container("c", action="Restart")]},
            False,
            id="derived-restart-action-is-not-restart-all",
        ),
    ],
)
def test_restart_all_containers_infer_for_scheduling(spec: Obj, want: bool):
    feature = next(f for f in REGISTRY if f.name == RESTART_ALL)
    assert feature.infer_for_scheduling(spec) is want


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({"hostNetwork": True, "hostUsers": False}, True, id="host-network-userns"),
        pytest.param({"hostNetwork": True}, False, id="host-users-unset"),
        pytest.param({"hostNetwork": True, "hostUsers": True}, False, id="host-users-true"),
        pytest.param({"hostUsers": False}, False, id="userns-without-host-network"),
        pytest.param({}, False, id="neither"),
    ],
)
def test_user_namespaces_host_network_infer_for_scheduling(spec: Obj, want: bool):
    feature = next(f for f in REGISTRY if f.name == USERNS_HOST_NETWORK)
    assert feature.infer_for_scheduling(spec) is want


@pytest.mark.parametrize(
    "name",
    [
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "ExtendWebSocketsToKubelet",
    ],
)
def test_update_only_features_are_never_inferred_for_scheduling(name: str):
    """ "InferForScheduling should always be false", even for a pod that resizes would
    concern (pod-level resources, resources on a non-sidecar init container)."""
    spec = {
        "resources": {"requests": {"cpu": "1"}},
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
        "containers": [{"name": "c"}],
    }
    feature = next(f for f in REGISTRY if f.name == name)
    assert feature.infer_for_scheduling(spec) is False
    assert infer_for_pod_scheduling(spec) == ()


PODLEVEL = [
    Feature("PodLevelResources", ("pod-level-resources",), lambda s: s.get("resources") is not None)
]
PODLEVEL_MAX = [
    Feature(
        "PodLevelResources",
        ("pod-level-resources",),
        lambda s: s.get("resources") is not None,
        Version.parse("1.30.0"),
    )
]
WITH = {"resources": {"requests": {"cpu": "500m"}}}


@pytest.mark.parametrize(
    ("registry", "spec", "target", "want"),
    [
        pytest.param(
            PODLEVEL, WITH, "1.30.0", ("PodLevelResources",), id="pod-with-feature-inferred"
        ),
        pytest.param(PODLEVEL, {}, "1.30.0", (), id="pod-without-feature"),
        pytest.param(
            PODLEVEL_MAX, WITH, "1.31.0", (), id="feature-universally-available-not-inferred"
        ),
        pytest.param(
            PODLEVEL_MAX,
            WITH,
            "0.0.0-alpha.2.39+049eafd34dfbd2",
            ("PodLevelResources",),
            id="pre-release-target-version",
        ),
        pytest.param(PODLEVEL_MAX, WITH, "1.40.0", (), id="exceeds-max-version"),
    ],
)
def test_infer_for_pod_scheduling(
    registry: list[Feature], spec: Obj, target: str, want: tuple[str, ...]
):
    assert infer_for_pod_scheduling(spec, Version.parse(target), registry) == want


def test_infer_for_pod_scheduling_needs_a_target_version():
    with pytest.raises(ValueError, match="target version cannot be nil"):
        infer_for_pod_scheduling(WITH, None, PODLEVEL)


ABCD = [mock(n, False) for n in ("a", "b", "c", "d")]


@pytest.mark.parametrize(
    ("given", "want"),
    [
        pytest.param([], (), id="empty-input"),
        pytest.param(["a"], ("a",), id="single-valid-feature"),
        pytest.param(["a", "c"], ("a", "c"), id="multiple-valid-features"),
        pytest.param(["a", "b", "c", "d"], ("a", "b", "c", "d"), id="all-features"),
        pytest.param(["0", "a"], ("a",), id="unknown-feature-start"),
        pytest.param(["a", "ab", "b"], ("a", "b"), id="unknown-feature-middle"),
        pytest.param(["d", "e"], ("d",), id="unknown-feature-end"),
        # Derived: the merge walk assumes sorted input (kube-apiserver enforces it); an
        # unsorted list loses what the walk has passed, as upstream's TryMap does.
        pytest.param(["d", "a"], ("d",), id="derived-unsorted-input-as-the-merge-walk-reads-it"),
    ],
)
def test_try_map(given: list[str], want: tuple[str, ...]):
    assert try_map(given, ABCD) == want


def test_try_map_keeps_only_registered_features():
    declared = ["ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits", "Vendor/x"]
    assert try_map(declared) == ("ExtendWebSocketsToKubelet", RESTART_ALL)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        pytest.param("1.36.5", "1.36.4", 1, id="patch"),
        pytest.param("1.36.5", "1.36.5", 0, id="equal"),
        pytest.param("1.30", "1.30.0", 0, id="generic-equals-semantic-with-zero"),
        pytest.param("1.30.1", "1.30", 1, id="more-non-zero-components"),
        pytest.param("1.30.0-alpha.1", "1.30.0", -1, id="pre-release-before-release"),
        pytest.param("1.30.0-alpha.2", "1.30.0-alpha.10", -1, id="numeric-identifiers"),
        pytest.param("1.30.0-beta", "1.30.0-alpha.1", 1, id="alphanumeric-identifiers"),
        pytest.param("1.30.0-alpha", "1.30.0-alpha.1", -1, id="fewer-identifiers-first"),
        pytest.param("v1.30.0+build.1", "1.30.0", 0, id="build-metadata-ignored"),
    ],
)
def test_version_order(a: str, b: str, want: int):
    assert Version.parse(a).compare(Version.parse(b)) == want
    assert Version.parse(b).compare(Version.parse(a)) == -want


@pytest.mark.parametrize("text", ["", "x.y", "1", "01.2.3"])
def test_version_parse_errors(text: str):
    with pytest.raises(ValueError):
        Version.parse(text)


def test_scheduler_version_is_the_release_ksched_follows():
    assert Version.parse("1.36.5") == SCHEDULER_VERSION


# ---- parsing -----------------------------------------------------------------------------


def test_pod_carries_its_required_features():
    spec = {
        "hostNetwork": True,
        "hostUsers": False,
        "containers": [restart_rule_container("c")],
    }
    got = parsed_pod("p", extra_spec=spec)
    assert got.required_features == (RESTART_ALL, USERNS_HOST_NETWORK)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda s: s["containers"][0].update(restartPolicyRules="x"),
            "spec.containers[0].restartPolicyRules",
            id="rules-not-a-list",
        ),
        pytest.param(
            lambda s: s["containers"][0].update(restartPolicyRules=[{"action": 3}]),
            "spec.containers[0].restartPolicyRules[0].action",
            id="action-not-a-string",
        ),
        pytest.param(
            lambda s: s.update(hostUsers="no"), "spec.hostUsers", id="host-users-not-a-bool"
        ),
        pytest.param(
            lambda s: s.update(hostNetwork=1), "spec.hostNetwork", id="host-network-not-a-bool"
        ),
    ],
)
def test_malformed_fields_name_the_pod_and_field(mutate: Any, field: str):
    obj = {
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"containers": [{"name": "c"}]},
    }
    mutate(obj["spec"])
    with pytest.raises(InvalidObjectError) as err:
        Pod.from_dict(obj)
    assert err.value.field == field
    assert "default/p" in str(err.value)


def test_node_declared_features_are_parsed_and_checked():
    assert parsed_node(["A", "B"]).declared_features == ("A", "B")
    assert parsed_node(None).declared_features == ()
    obj = make_node("n")
    obj["status"]["declaredFeatures"] = ["A", 7]
    with pytest.raises(InvalidObjectError) as err:
        Node.from_dict(obj)
    assert err.value.field == "status.declaredFeatures[1]"
