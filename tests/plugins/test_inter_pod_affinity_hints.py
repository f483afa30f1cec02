"""InterPodAffinity's queueing hints: upstream v1.36.5's tables (interpodaffinity
plugin_test.go ``Test_isSchedulableAfterPodChange`` and
``Test_isSchedulableAfterNodeChange``), ported case for case, plus the registration and
the queue's handling of the pod's own updates (the PodScheduled=False echo)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    QueueingHint,
)
from ksched.plugins.inter_pod_affinity import (
    events_to_register,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
Obj = dict[str, Any]


def pod(
    uid: str = "",
    *,
    name: str = "",
    node: str = "",
    nominated: str = "",
    labels: dict[str, str] | None = None,
    affinity: list[Obj] | None = None,
    anti: list[Obj] | None = None,
) -> Pod:
    """``st.MakePod()``: no namespace, no uid unless given."""
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    aff: Obj = {}
    if affinity:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if aff:
        spec["affinity"] = aff
    meta: Obj = {"name": name or uid or "x", "uid": uid, "labels": labels or {}}
    return Pod.from_dict(
        {
            "metadata": meta,
            "spec": spec,
            "status": {"nominatedNodeName": nominated} if nominated else {},
        }
    )


def term_in(key: str, topology: str, values: list[str]) -> Obj:
    """``PodAffinityIn`` / ``PodAntiAffinityIn``."""
    return {
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
        "topologyKey": topology,
    }


def term_exists(key: str, topology: str) -> Obj:
    return {
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
        "topologyKey": topology,
    }


def node(name: str, **labels: str) -> Node:
    return Node.from_dict({"metadata": {"name": name, "labels": labels}})


SCAN = term_in("service", "region", ["securityscan", "value2"])
ANTI_ZONE = {"labelSelector": {"matchLabels": {"another": "label"}}, "topologyKey": "zone"}

POD_CASES = [
    ("add a pod which matches the pod affinity",
     pod("p", affinity=[SCAN]), None, pod("other", node="fake-node", labels={"service": "securityscan"}), Q),  # noqa: E501
    ("add an un-scheduled pod",
     pod("p", affinity=[SCAN]), None, pod("other", labels={"service": "securityscan"}), S),
    ("add a pod which doesn't match the pod affinity",
     pod("p", affinity=[SCAN]), None, pod("other", node="fake-node", labels={"aaa": "a"}), S),
    ("update a pod from non-match to match pod affinity",
     pod("p", affinity=[SCAN]), pod("other", node="fake-node", labels={"aaa": "a"}),
     pod("other", node="fake-node", labels={"service": "securityscan"}), Q),
    ("the updating pod matches target pod's affinity both before and after label changes",
     pod("p", affinity=[SCAN]), pod("other", node="fake-node", labels={"service": "value2"}),
     pod("other", node="fake-node", labels={"service": "securityscan"}), S),
    ("update an un-scheduled pod",
     pod("p", affinity=[SCAN]), pod("other", labels={"aaa": "a"}),
     pod("other", labels={"service": "securityscan"}), S),
    ("update a pod from match to non-match the pod affinity",
     pod("p", affinity=[SCAN]), pod("other", node="fake-node", labels={"service": "securityscan"}),
     pod("other", node="fake-node", labels={"aaa": "a"}), S),
    ("update a pod from match to non-match pod's affinity - multiple terms case",
     pod("p", affinity=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")]),
     pod("other", node="fake-node", labels={"aaa": "a"}),
     pod("other", node="fake-node", labels={"service": "securityscan"}), S),
    ("update a pod from non-match to match pod's affinity - multiple terms case",
     pod("p", affinity=[term_exists("aaa", "hostname"), term_exists("bbb", "hostname")]),
     pod("other", node="fake-node", labels={"aaa": "a"}),
     pod("other", node="fake-node", labels={"aaa": "", "bbb": ""}), Q),
    ("updated pod is the target pod",
     pod("p", labels={"foo": "baz"}), pod("p", labels={"foo": "bar"}), pod("p", labels={"foo": "baz"}), Q),  # noqa: E501
    ("modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",  # noqa: E501
     pod("p", anti=[SCAN]), pod("other", node="fake-node", labels={"service": "securityscan"}),
     pod("other", node="fake-node", labels={"service": "aaaa"}), Q),
    ("modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",  # noqa: E501
     pod("p", anti=[SCAN]), pod("other", node="fake-node", labels={"service": "bbb"}),
     pod("other", node="fake-node", labels={"service": "securityscan"}), S),
    ("delete a pod which doesn't match pod's anti-affinity",
     pod("p", anti=[SCAN]), pod("other", node="fake-node", labels={"aaa": "a"}), None, S),
    ("delete a pod which matches pod's anti-affinity",
     pod("p", anti=[SCAN]), pod("other", node="fake-node", labels={"service": "securityscan"}), None, Q),  # noqa: E501
    ("delete a pod with anti-affinity that matches pending pod",
     pod(name="p", labels={"service": "securityscan"}), pod(node="fake-node", anti=[SCAN]), None, Q),  # noqa: E501
    ("delete a pod with anti-affinity that doesn't match pending pod",
     pod(name="p", labels={"service": "foo"}), pod(node="fake-node", anti=[SCAN]), None, S),
    ("delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match pending pod",  # noqa: E501
     pod(name="p", anti=[SCAN], labels={"service": "foo"}),
     pod(node="fake-node", anti=[SCAN], labels={"service": "foo"}), None, S),
    ("delete a nominated pod which doesn't match pod's anti-affinity",
     pod(name="p", anti=[SCAN]), pod(nominated="fake-node", labels={"aaa": "a"}), None, S),
    ("delete a nominated pod which matches pod's anti-affinity",
     pod(name="p", anti=[SCAN]), pod(nominated="fake-node", labels={"service": "securityscan"}), None, Q),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "old", "new", "want"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_is_schedulable_after_pod_change(
    target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert is_schedulable_after_pod_change(target, old, new) == want


AFF_ZONE = term_in("service", "zone", ["securityscan", "value2"])
NODE_CASES = [
    ("add a new node with matched pod affinity topologyKey",
     pod(name="p", affinity=[AFF_ZONE]), None, node("node-a", zone="zone1"), Q),
    ("add a new node without matched topologyKey",
     pod(name="p", affinity=[SCAN]), None, node("node-a", zone="zone1"), S),
    ("update node label but not topologyKey",
     pod(name="p", affinity=[AFF_ZONE]), node("node-a", aaa="a"), node("node-a", aaa="b"), S),
    ("update node label that isn't related to the pod affinity",
     pod(name="p", affinity=[AFF_ZONE]), node("node-a", zone="zone1"),
     node("node-a", zone="zone1", **{"unrelated-label": "unrelated"}), S),
    ("update node with different affinity topologyKey value",
     pod(name="p", affinity=[AFF_ZONE]), node("node-a", zone="zone1"), node("node-a", zone="zone2"), Q),  # noqa: E501
    ("update node to have the affinity topology label",
     pod(name="p", affinity=[AFF_ZONE]), node("node-a", aaa="a"), node("node-a", zone="zone1"), Q),
    ("add a new node with matched pod anti-affinity topologyKey",
     pod(name="p", anti=[ANTI_ZONE]), None, node("node-a", zone="zone1"), Q),
    ("add a new node without matched pod anti-affinity topologyKey",
     pod(name="p", anti=[ANTI_ZONE]), None, node("node-a"), Q),
    ("update node label that isn't related to the pod anti-affinity",
     pod(name="p", anti=[ANTI_ZONE]), node("node-a", zone="zone1"),
     node("node-a", zone="zone1", **{"unrelated-label": "unrelated"}), S),
    ("update node with different anti-affinity topologyKey value",
     pod(name="p", anti=[ANTI_ZONE]), node("node-a", zone="zone1"), node("node-a", zone="zone2"), Q),  # noqa: E501
    ("update node to have the anti-affinity topology label",
     pod(name="p", anti=[ANTI_ZONE]), node("node-a", aaa="a"), node("node-a", zone="zone1"), S),
    ("update node label not to have anti-affinity topology label",
     pod(name="p", anti=[ANTI_ZONE]), node("node-a", zone="zone1"), node("node-a", aaa="a"), Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "old", "new", "want"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES]
)
def test_is_schedulable_after_node_change(
    target: Pod, old: Node | None, new: Node, want: QueueingHint
) -> None:
    assert is_schedulable_after_node_change(target, old, new) == want


def test_events_to_register_are_upstreams_with_queueing_hints() -> None:
    regs = events_to_register()
    assert [r.event for r in regs] == [
        ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert all(r.hint is not None for r in regs)


def test_an_invalid_selector_counts_as_queue_in_the_queue() -> None:
    """Upstream's hint returns the selector's error, which the queue treats as Queue;
    ksched's raises, which the queue treats the same way."""
    bad = {
        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
        "topologyKey": "z",
    }
    with pytest.raises(ValueError):
        is_schedulable_after_pod_change(
            pod("p", affinity=[bad]), None, pod("other", node="n", labels={"a": "b"})
        )
