"""NodeAffinity's and NodePorts' queueing hints: upstream v1.36.5's tables
(nodeaffinity ``Test_isSchedulableAfterNodeChange`` without the scheduler-enforced
``addedAffinity`` cases, nodeports ``Test_isSchedulableAfterPodDeleted``), plus the
host-IP rules of ``HostPortInfo.CheckConflict`` and nominated deleted pods."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import NODE, ActionType, ClusterEvent, QueueingHint
from ksched.plugins.node_affinity import events_to_register as affinity_events
from ksched.plugins.node_affinity import is_schedulable_after_node_change
from ksched.plugins.node_ports import _ports_after_pod_delete

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
Obj = dict[str, Any]


def node(labels: dict[str, str] | None = None, *, name: str = "", capacity: bool = True) -> Node:
    status: Obj = {"capacity": {"cpu": "1"}} if capacity else {}
    return Node.from_dict({"metadata": {"name": name, "labels": labels or {}}, "status": status})


def affinity_pod(*terms: Obj, selector: dict[str, str] | None = None) -> Pod:
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    if selector:
        spec["nodeSelector"] = selector
    return Pod.from_dict({"metadata": {"name": "p", "uid": "p"}, "spec": spec})


FOO_IN_BAR = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}
P = affinity_pod(FOO_IN_BAR)

AFFINITY_CASES = [
    ("skip-queue-on-add", P, None, node(), S),
    ("queue-on-add", P, None, node({"foo": "bar"}), Q),
    ("skip-unrelated-changes", P, node(), node(capacity=False), S),
    ("skip-unrelated-changes-on-labels", P, node(), node({"k": "v"}), S),
    ("skip-labels-changes-on-node-from-suitable-to-unsuitable", P, node({"foo": "bar"}), node({"k": "v"}), S),  # noqa: E501
    ("queue-on-labels-change-makes-pod-schedulable", P, node(), node({"foo": "bar"}), Q),
    ("skip-unrelated-change-that-keeps-pod-schedulable", P, node({"foo": "bar"}), node({"foo": "bar"}, capacity=False), S),  # noqa: E501
    ("node selector: added node with the label", affinity_pod(selector={"a": "b"}), None, node({"a": "b"}), Q),  # noqa: E501
    ("node selector: added node without it", affinity_pod(selector={"a": "b"}), None, node({"a": "c"}), S),  # noqa: E501
    ("terms are ORed", affinity_pod({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, FOO_IN_BAR),  # noqa: E501
     None, node({"foo": "bar"}), Q),
    ("an empty term matches no node", affinity_pod({}), None, node({"foo": "bar"}), S),
    ("matchFields on the node name",
     affinity_pod({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
     None, node(name="n1"), Q),
    ("matchFields on another name",
     affinity_pod({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
     None, node(name="n2"), S),
    ("Gt compares integers",
     affinity_pod({"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]}),
     node({"gen": "3"}), node({"gen": "4"}), Q),
    ("no affinity at all: any added node", affinity_pod(), None, node(), Q),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [c[1:] for c in AFFINITY_CASES],
    ids=[c[0] for c in AFFINITY_CASES],
)
def test_node_affinity_is_schedulable_after_node_change(
    target: Pod, old: Node | None, new: Node, want: QueueingHint
) -> None:
    assert is_schedulable_after_node_change(target, old, new) == want


def test_node_affinity_registers_upstreams_node_events_only() -> None:
    regs = affinity_events()
    assert [r.event for r in regs] == [
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    ]
    assert regs[0].hint is not None


def ports_pod(*ports: tuple[int, str], node: str = "", nominated: str = "") -> Pod:
    container: Obj = {
        "name": "c",
        "image": "i",
        "ports": [
            {"containerPort": p, "hostPort": p, **({"hostIP": ip} if ip else {})} for p, ip in ports
        ],
    }
    spec: Obj = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    status = {"nominatedNodeName": nominated} if nominated else {}
    return Pod.from_dict({"metadata": {"name": "x", "uid": "x"}, "spec": spec, "status": status})


HP = ports_pod((8080, ""))
PORTS_CASES = [
    ("skip-queue-on-unscheduled", HP, ports_pod(), S),
    ("skip-queue-on-non-hostport", HP, ports_pod(node="fake-node"), S),
    ("skip-queue-on-unrelated-hostport", HP, ports_pod((8081, ""), node="fake-node"), S),
    ("queue-on-released-hostport", HP, ports_pod((8080, ""), node="fake-node"), Q),
    ("a nominated pod's port counts", HP, ports_pod((8080, ""), nominated="fake-node"), Q),
    ("an unscheduled pod's port does not", HP, ports_pod((8080, "")), S),
    ("different host IPs do not conflict", ports_pod((8080, "10.0.0.1")),
     ports_pod((8080, "10.0.0.2"), node="n"), S),
    ("0.0.0.0 conflicts with every IP", ports_pod((8080, "10.0.0.1")),
     ports_pod((8080, ""), node="n"), Q),
    ("a wanted 0.0.0.0 conflicts with a specific IP", HP, ports_pod((8080, "10.0.0.2"), node="n"), Q),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "deleted", "want"), [c[1:] for c in PORTS_CASES], ids=[c[0] for c in PORTS_CASES]
)
def test_node_ports_is_schedulable_after_pod_deleted(
    target: Pod, deleted: Pod, want: QueueingHint
) -> None:
    assert _ports_after_pod_delete(target, deleted, None) == want


ADDED = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "app", "operator": "Exists"}]}]}


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(
            node({"foo": "bar"}), S, id="skip-queue-on-add-scheduler-enforced-node-affinity"
        ),
        pytest.param(
            node({"foo": "bar", "app": "x"}), Q, id="queue-on-add-scheduler-enforced-node-affinity"
        ),
    ],
)
def test_node_affinity_added_affinity_is_checked_first(new: Node, want: QueueingHint) -> None:
    """Upstream's addedAffinity cases: a node the scheduler-enforced affinity rejects
    cannot help, whatever the pod's own affinity says."""
    from ksched.plugins.node_affinity import NodeAffinity

    half = NodeAffinity.from_args(
        {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ADDED}}
    )
    (reg,) = half.events_to_register()
    assert reg.hint is not None
    assert reg.hint(P, None, new) == want


def test_node_affinity_without_added_affinity_registers_the_module_hint() -> None:
    from ksched.plugins.node_affinity import NodeAffinity

    (reg,) = NodeAffinity.from_args(None).events_to_register()
    assert reg.hint is is_schedulable_after_node_change
