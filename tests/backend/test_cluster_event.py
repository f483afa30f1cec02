"""Cluster events: upstream's matching rule and how object changes become events."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    ASSIGNED_POD,
    EVENT_FORCE_ACTIVATE,
    NODE,
    POD,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    match_cluster_events,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from ksched.sim.workloads import make_node
from tests.helpers import parsed_pod

A = ActionType


@pytest.mark.parametrize(
    ("registered", "incoming", "want"),
    [
        pytest.param(ClusterEvent(NODE, A.ADD), ClusterEvent(NODE, A.ADD), True, id="same-event"),
        pytest.param(
            ClusterEvent(NODE, A.UPDATE),
            ClusterEvent(NODE, A.UPDATE_NODE_LABEL),
            True,
            id="general-update-matches-specific-update",
        ),
        pytest.param(
            ClusterEvent(NODE, A.UPDATE_NODE_LABEL),
            ClusterEvent(NODE, A.UPDATE),
            False,
            id="specific-update-does-not-match-general-update",
        ),
        pytest.param(
            ClusterEvent(NODE, A.ADD | A.UPDATE_NODE_TAINT),
            ClusterEvent(NODE, A.UPDATE_NODE_TAINT),
            True,
            id="one-of-several-actions",
        ),
        pytest.param(
            ClusterEvent(NODE, A.ADD),
            ClusterEvent(NODE, A.DELETE),
            False,
            id="other-action",
        ),
        pytest.param(
            ClusterEvent(POD, A.DELETE),
            ClusterEvent(ASSIGNED_POD, A.DELETE),
            True,
            id="pod-matches-assigned-pod",
        ),
        pytest.param(
            ClusterEvent(POD, A.DELETE),
            ClusterEvent(UNSCHEDULED_POD, A.DELETE),
            True,
            id="pod-matches-unscheduled-pod",
        ),
        pytest.param(
            ClusterEvent(NODE, A.ALL), ClusterEvent(POD, A.ADD), False, id="other-resource"
        ),
        pytest.param(
            ClusterEvent(WILDCARD, A.ALL), ClusterEvent(POD, A.ADD), True, id="wildcard-registered"
        ),
        pytest.param(
            ClusterEvent(POD, A.ALL), EVENT_FORCE_ACTIVATE, False, id="wildcard-incoming-unmatched"
        ),
    ],
)
def test_match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent, want: bool):
    assert match_cluster_events(registered, incoming) is want


def node(**kw: Any) -> Node:
    obj = make_node("n", **kw)
    return Node.from_dict(obj)


def node_with(mutate: Any) -> Node:
    obj = make_node("n")
    mutate(obj)
    return Node.from_dict(obj)


NO_TAINTS = node()
TAINTED = node(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(node(), node(), [], id="nothing-changed"),
        pytest.param(node(), node(labels={"zone": "a"}), ["UpdateNodeLabel"], id="labels"),
        pytest.param(NO_TAINTS, TAINTED, ["UpdateNodeTaint"], id="taints"),
        pytest.param(node(unschedulable=True), node(), ["UpdateNodeTaint"], id="uncordoned"),
        pytest.param(node(), node(unschedulable=True), [], id="cordoned-helps-nobody"),
        pytest.param(node(cpu="4"), node(cpu="8"), ["UpdateNodeAllocatable"], id="allocatable"),
        pytest.param(
            node(),
            node_with(
                lambda o: o["status"].update(conditions=[{"type": "Ready", "status": "False"}])
            ),
            ["UpdateNodeCondition"],
            id="condition-status",
        ),
        pytest.param(
            node(),
            node_with(lambda o: o["metadata"].update(annotations={"a": "b"})),
            ["UpdateNodeAnnotation"],
            id="annotations",
        ),
        pytest.param(
            node(),
            node(cpu="8", labels={"zone": "a"}),
            ["UpdateNodeAllocatable", "UpdateNodeLabel"],
            id="several-at-once",
        ),
        pytest.param(
            node(),
            node(declared_features=["FeatureA"]),
            ["UpdateNodeDeclaredFeature"],
            id="declared-features-added",
        ),
        pytest.param(
            node(declared_features=["FeatureA", "FeatureB"]),
            node(declared_features=["FeatureA"]),
            ["UpdateNodeDeclaredFeature"],
            id="declared-features-removed",
        ),
        # extractNodeFeaturesChange compares with slices.Equal: nil and empty are equal.
        pytest.param(
            node(), node(declared_features=[]), [], id="declared-features-absent-equals-empty"
        ),
    ],
)
def test_node_update_becomes_specific_events(old: Node, new: Node, want: list[str]):
    events = node_scheduling_properties_change(old, new)
    assert [e.action.label for e in events] == want
    assert all(e.resource == NODE for e in events)


def test_declared_features_change_is_no_event_without_the_gate():
    """NodeSchedulingPropertiesChange adds extractNodeFeaturesChange only with the
    NodeDeclaredFeatures gate on."""
    old, new = node(), node(declared_features=["FeatureA"], labels={"zone": "a"})
    events = node_scheduling_properties_change(old, new, declared_features=False)
    assert [e.action.label for e in events] == ["UpdateNodeLabel"]


def pod(**kw: Any) -> Pod:
    return parsed_pod("p", **kw)


TOL = {"key": "k", "operator": "Exists"}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(pod(), pod(), ["UnschedulablePodUpdate"], id="no-specific-change"),
        pytest.param(
            pod(), pod(labels={"a": "b"}), ["UnschedulablePodUpdatePodLabel"], id="labels"
        ),
        pytest.param(
            pod(cpu="2"), pod(cpu="1"), ["UnschedulablePodUpdatePodScaleDown"], id="scale-down"
        ),
        pytest.param(
            pod(cpu="1"), pod(cpu="2"), ["UnschedulablePodUpdate"], id="scale-up-is-general"
        ),
        pytest.param(
            pod(extra_spec={"schedulingGates": [{"name": "g"}]}),
            pod(),
            ["UnschedulablePodUpdatePodSchedulingGatesEliminated"],
            id="gates-eliminated",
        ),
        pytest.param(
            pod(),
            pod(extra_spec={"tolerations": [TOL]}),
            ["UnschedulablePodUpdatePodToleration"],
            id="toleration-added",
        ),
        pytest.param(
            pod(node_name="n1"),
            pod(node_name="n1", labels={"a": "b"}),
            ["AssignedPodUpdatePodLabel"],
            id="assigned-pod",
        ),
    ],
)
def test_pod_update_becomes_specific_events(old: Pod, new: Pod, want: list[str]):
    assert [e.label for e in pod_scheduling_properties_change(old, new)] == want
