"""PodTopologySpread's queueing hints: upstream v1.36.5's tables (podtopologyspread
plugin_test.go ``Test_isSchedulableAfterNodeChange`` and
``Test_isSchedulableAfterPodChange``), ported case for case (upstream runs them with
``ListDefaulting`` and no default constraints: a pod's own constraints only)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import NODE, POD, ActionType, ClusterEvent, QueueingHint
from ksched.plugins.pod_topology_spread import (
    events_to_register,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
Obj = dict[str, Any]

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def spread(key: str, selector: Obj, taints: str | None = None) -> Obj:
    """``SpreadConstraint(1, key, DoNotSchedule, selector, ..., nodeTaintsPolicy, ...)``."""
    c: Obj = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": selector,
    }
    if taints is not None:
        c["nodeTaintsPolicy"] = taints
    return c


def pod(
    uid: str = "",
    *,
    node: str = "",
    nominated: str = "",
    namespace: str = "",
    labels: dict[str, str] | None = None,
    constraints: list[Obj] | None = None,
    tolerations: list[Obj] | None = None,
) -> Pod:
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    if tolerations:
        spec["tolerations"] = tolerations
    meta: Obj = {"name": uid or "x", "uid": uid, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    status = {"nominatedNodeName": nominated} if nominated else {}
    return Pod.from_dict({"metadata": meta, "spec": spec, "status": status})


def node(labels: dict[str, str] | None = None, taints: list[Obj] | None = None) -> Node:
    return Node.from_dict(
        {"metadata": {"name": "node-a", "labels": labels or {}}, "spec": {"taints": taints or []}}
    )


ZONE = pod("p", constraints=[spread("zone", FOO)])
ZONE_NODE = pod("p", constraints=[spread("zone", FOO), spread("node", FOO)])
T1 = [{"key": "aaa", "value": "bbb", "effect": "NoSchedule"}]
T2 = [{"key": "ccc", "value": "bbb", "effect": "NoSchedule"}]

NODE_CASES = [
    ("node updates label which matches topologyKey",
     ZONE, node({"zone": "zone1"}), node({"zone": "zone2"}), Q),
    ("node that doesn't match topologySpreadConstraints updates non-related label",
     ZONE, node({"foo": "bar1"}), node({"foo": "bar2"}), S),
    ("node that match topologySpreadConstraints adds non-related label",
     ZONE_NODE, node({"zone": "zone1", "node": "node1", "foo": "bar"}), node({"zone": "zone1", "node": "node1"}), S),  # noqa: E501
    ("create node with non-related labels", ZONE, None, node({"foo": "bar"}), S),
    ("create node with related labels", ZONE, None, node({"zone": "zone1"}), Q),
    ("delete node with non-related labels", ZONE, node({"foo": "bar"}), None, S),
    ("delete node with related labels", ZONE, node({"zone": "zone1"}), None, Q),
    ("add node with related labels that only match one of topologySpreadConstraints",
     ZONE_NODE, None, node({"zone": "zone1"}), S),
    ("add node with related labels that match all topologySpreadConstraints",
     ZONE_NODE, None, node({"zone": "zone1", "node": "node1"}), Q),
    ("update node with related labels that only match one of topologySpreadConstraints",
     ZONE_NODE, node({"zone": "zone1"}), node({"zone": "zone1"}), S),
    ("update node with related labels that match all topologySpreadConstraints",
     ZONE_NODE, node({"zone": "zone1", "node": "node1"}), node({"zone": "zone1", "node": "node2"}), Q),  # noqa: E501
    ("update node with different taints that match all topologySpreadConstraints",
     ZONE_NODE, node({"zone": "zone1", "node": "node1"}, T1), node({"zone": "zone1", "node": "node1"}, T2), Q),  # noqa: E501
    ("update node with different taints that only match one of topologySpreadConstraints",
     ZONE_NODE, node({"node": "node1"}, T1), node({"node": "node1"}, T2), S),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(
    target: Pod, old: Node | None, new: Node | None, want: QueueingHint
) -> None:
    assert is_schedulable_after_node_change(target, old, new) == want


P = pod("p", labels={"foo": ""}, constraints=[spread("zone", FOO)])
P2 = pod("p", labels={"foo": ""}, constraints=[spread("zone", FOO), spread("node", BAR)])
UNSCHEDULABLE_TOLERATION = [
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
]


def honor(policy: str) -> Pod:
    return pod(
        "p", labels={"foo": ""}, constraints=[spread("zone", FOO, policy), spread("node", BAR)]
    )


POD_CASES = [
    ("add pod with labels match topologySpreadConstraints selector",
     P, None, pod("p2", node="fake-node", labels={"foo": ""}), Q),
    ("add un-scheduled pod", P, None, pod("p2", labels={"foo": ""}), S),
    ("update un-scheduled pod", P, pod("p2", labels={"bar": ""}), pod("p2", labels={"foo": ""}), S),
    ("delete un-scheduled pod", P, pod("p2", labels={"foo": ""}), None, S),
    ("add pod with different namespace",
     P, None, pod("p2", node="fake-node", namespace="fake-namespace", labels={"foo": ""}), S),
    ("add pod with labels don't match topologySpreadConstraints selector",
     P, None, pod("p2", node="fake-node", labels={"bar": ""}), S),
    ("delete pod with labels that match topologySpreadConstraints selector",
     P, pod("p2", node="fake-node", labels={"foo": ""}), None, Q),
    ("delete nominated pod with labels that don't match topologySpreadConstraints selector",
     P, pod("p2", nominated="fake-node", labels={"bar": ""}), None, S),
    ("delete nominated pod with labels that match topologySpreadConstraints selector",
     P, pod("p2", nominated="fake-node", labels={"foo": ""}), None, Q),
    ("delete pod with labels that don't match topologySpreadConstraints selector",
     P, pod("p2", node="fake-node", labels={"bar": ""}), None, S),
    ("update pod's non-related label",
     P, pod("p2", node="fake-node", labels={"foo": "", "bar": "bar1"}),
     pod("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}), S),
    ("add pod's label that matches topologySpreadConstraints selector",
     P, pod("p2", node="fake-node"), pod("p2", node="fake-node", labels={"foo": ""}), Q),
    ("delete pod label that matches topologySpreadConstraints selector",
     P, pod("p2", node="fake-node", labels={"foo": ""}), pod("p2", node="fake-node"), Q),
    ("change pod's label that matches topologySpreadConstraints selector",
     P, pod("p2", node="fake-node", labels={"foo": "foo1"}), pod("p2", node="fake-node", labels={"foo": "foo2"}), S),  # noqa: E501
    ("change pod's label that doesn't match topologySpreadConstraints selector",
     P, pod("p2", node="fake-node", labels={"foo": "", "bar": "bar1"}),
     pod("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}), S),
    ("add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
     P2, pod("p2", node="fake-node", labels={"foo": ""}),
     pod("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}), Q),
    ("change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
     P2, pod("p2", node="fake-node", labels={"foo": ""}),
     pod("p2", node="fake-node", labels={"foo": "", "baz": ""}), S),
    ("change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",  # noqa: E501
     P2, pod("p2", node="fake-node", labels={"foo": "", "bar": ""}),
     pod("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}), S),
    ("the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",  # noqa: E501
     honor("Honor"), pod("p", labels={"foo": ""}),
     pod("p", labels={"foo": ""}, tolerations=UNSCHEDULABLE_TOLERATION), Q),
    ("the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",  # noqa: E501
     honor("Ignore"), pod("p", labels={"foo": ""}),
     pod("p", labels={"foo": ""}, tolerations=UNSCHEDULABLE_TOLERATION), S),
    ("the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",  # noqa: E501
     honor("Ignore"), pod("p"), pod("p", labels={"foo": ""}), Q),
    ("the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
     honor("Ignore"), pod("p"), pod("p", labels={"unrelated": ""}), S),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_is_schedulable_after_pod_change(
    target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert is_schedulable_after_pod_change(target, old, new) == want


def test_match_label_keys_narrow_the_selector() -> None:
    """filterTopologySpreadConstraints merges matchLabelKeys' key=value pairs of the pod
    into the selector: an added pod of another app matches no constraint."""
    c = {**spread("zone", FOO), "matchLabelKeys": ["app"]}
    target = pod("p", labels={"foo": "", "app": "a"}, constraints=[c])
    same = pod("p2", node="n", labels={"foo": "", "app": "a"})
    other = pod("p3", node="n", labels={"foo": "", "app": "b"})
    assert is_schedulable_after_pod_change(target, None, same) == Q
    assert is_schedulable_after_pod_change(target, None, other) == S


def test_schedule_anyway_constraints_are_not_hard_constraints() -> None:
    soft = {**spread("zone", FOO), "whenUnsatisfiable": "ScheduleAnyway"}
    target = pod("p", constraints=[soft])
    assert (
        is_schedulable_after_pod_change(target, None, pod("p2", node="n", labels={"foo": ""})) == S
    )
    # No hard constraint: every node matches, so an added node queues.
    assert is_schedulable_after_node_change(target, None, node({})) == Q


def test_events_to_register_are_upstreams_with_queueing_hints() -> None:
    regs = events_to_register()
    assert [r.event for r in regs] == [
        ClusterEvent(
            POD,
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE,
        ),
        ClusterEvent(
            NODE,
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT,
        ),
    ]
    assert all(r.hint is not None for r in regs)


class SelectorHandle:
    """A handle whose default selector is fixed (upstream helper.DefaultSelector)."""

    def __init__(self, selector: Obj | None) -> None:
        self.selector = selector

    def default_spread_selector(self, pod: Pod) -> Obj | None:
        return self.selector


LIST_ZONE = {
    "defaultingType": "List",
    "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    ],
}


@pytest.mark.parametrize(
    ("args", "selector", "added", "want"),
    [
        pytest.param(LIST_ZONE, {"matchLabels": {"app": "a"}}, {"app": "a"}, Q, id="default-constraint-matches-added-pod"),  # noqa: E501
        pytest.param(LIST_ZONE, {"matchLabels": {"app": "a"}}, {"app": "b"}, S, id="default-constraint-other-pod"),  # noqa: E501
        pytest.param(LIST_ZONE, None, {"app": "a"}, S, id="no-default-selector-no-constraints"),
        pytest.param(None, {"matchLabels": {"app": "a"}}, {"app": "a"}, S, id="system-defaulting-has-no-hard-defaults"),  # noqa: E501
        pytest.param(
            {**LIST_ZONE, "defaultConstraints": [{**LIST_ZONE["defaultConstraints"][0], "whenUnsatisfiable": "ScheduleAnyway"}]},  # noqa: E501
            {"matchLabels": {"app": "a"}}, {"app": "a"}, S, id="soft-default-constraints-are-no-constraints",  # noqa: E501
        ),
    ],
)  # fmt: skip
def test_list_defaulting_gives_a_pod_without_constraints_the_default_ones(
    args: Obj | None, selector: Obj | None, added: dict[str, str], want: QueueingHint
) -> None:
    """Upstream getConstraints → buildDefaultConstraints: DoNotSchedule defaults with the
    pod's default selector."""
    from ksched.plugins.pod_topology_spread import PodTopologySpread

    half = PodTopologySpread.from_args(args)
    half.setup(SelectorHandle(selector))  # type: ignore[arg-type]
    pod_reg = half.events_to_register()[0]
    assert pod_reg.hint is not None
    target = pod("p", labels={"app": "a"})
    assert pod_reg.hint(target, None, pod("p2", node="n", labels=added)) == want


def test_list_defaulting_node_hint_needs_the_default_topology_key() -> None:
    from ksched.plugins.pod_topology_spread import PodTopologySpread

    half = PodTopologySpread.from_args(LIST_ZONE)
    half.setup(SelectorHandle({"matchLabels": {"app": "a"}}))  # type: ignore[arg-type]
    node_reg = half.events_to_register()[1]
    assert node_reg.hint is not None
    target = pod("p", labels={"app": "a"})
    assert node_reg.hint(target, None, node({"zone": "z1"})) == Q
    assert node_reg.hint(target, None, node({"other": "x"})) == S
