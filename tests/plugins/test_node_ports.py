"""NodePorts: upstream's Filter table.

Ported from pkg/scheduler/framework/plugins/nodeports/node_ports_test.go (TestNodePorts).
A host port conflicts with one already used on the node when protocol and port are equal
and the host IPs are equal or either is 0.0.0.0 (all addresses). Ports are written as
upstream's test helper writes them: "PROTOCOL/hostIP/hostPort". A node's used ports are
a set, as upstream's ``HostPortInfo``: removing a pod frees its ports.
"""

from __future__ import annotations

import pytest

from ksched._core import Profile
from tests.plugins.harness import (
    Obj,
    cluster,
    compile_pod,
    container,
    explain,
    host_port,
    node,
    pod,
    snapshot,
    statuses,
)

PLUGIN = "NodePorts"
NO_FREE_PORTS = ("Unschedulable", "node(s) didn't have free ports for the requested pod ports")


def ports_pod(name: str, *specs: str, node_name: str | None = None) -> Obj:
    ports = []
    for spec in specs:
        protocol, host_ip, port = spec.split("/")
        ports.append(host_port(int(port), protocol, host_ip))
    return pod(name, node=node_name, containers=[container(ports=ports)])


@pytest.mark.parametrize(
    ("wanted", "used", "want"),
    [
        pytest.param([], [], None, id="skip-filter"),
        pytest.param(["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], None, id="other-port"),
        pytest.param(
            ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], NO_FREE_PORTS, id="same-udp-port"
        ),
        pytest.param(
            ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], NO_FREE_PORTS, id="same-tcp-port"
        ),
        pytest.param(["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], None, id="different-host-ip"),
        pytest.param(["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], None, id="different-protocol"),
        pytest.param(
            ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            ["UDP/127.0.0.1/8080"],
            NO_FREE_PORTS,
            id="second-udp-port-conflict",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            NO_FREE_PORTS,
            id="first-tcp-port-conflict",
        ),
        pytest.param(
            ["TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            NO_FREE_PORTS,
            id="first-tcp-port-conflict-due-to-0.0.0.0-hostIP",
        ),
        pytest.param(
            ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            NO_FREE_PORTS,
            id="tcp-hostPort-conflict-due-to-0.0.0.0-hostIP",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001"],
            ["TCP/0.0.0.0/8001"],
            NO_FREE_PORTS,
            id="second-tcp-port-conflict-to-0.0.0.0-hostIP",
        ),
        pytest.param(
            ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], None, id="second-different-protocol"
        ),
        pytest.param(
            ["UDP/127.0.0.1/8001"],
            ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            NO_FREE_PORTS,
            id="udp-hostPort-conflict-due-to-0.0.0.0-hostIP",
        ),
        # Derived from framework.HostPortInfo: an empty hostIP means 0.0.0.0.
        pytest.param(
            ["TCP//8001"],
            ["TCP/10.1.1.1/8001"],
            NO_FREE_PORTS,
            id="derived-empty-hostIP-is-0.0.0.0",
        ),
        pytest.param(
            ["SCTP/10.1.1.1/8001"],
            ["SCTP/10.1.1.1/8001"],
            NO_FREE_PORTS,
            id="derived-sctp-conflict",
        ),
        pytest.param(
            ["SCTP/10.1.1.1/8001"], ["UDP/10.1.1.1/8001"], None, id="derived-sctp-and-udp-differ"
        ),
    ],
)
def test_filter(wanted: list[str], used: list[str], want: object) -> None:
    existing = [ports_pod("existing", *used, node_name="m1")] if used else []
    got = explain(cluster([node("m1")], existing), ports_pod("p", *wanted), [PLUGIN])
    assert statuses(got) == {"m1": want}
    if want is not None:
        assert got["m1"]["status"]["plugin"] == PLUGIN


def test_ports_of_every_pod_on_the_node_count_and_nodes_are_independent() -> None:
    c = cluster(
        [node("a"), node("b"), node("c")],
        [
            ports_pod("web-a", "TCP/0.0.0.0/80", node_name="a"),
            ports_pod("dns-b", "UDP/0.0.0.0/53", node_name="b"),
            ports_pod("other-b", "TCP/10.0.0.2/80", node_name="b"),
        ],
    )
    p = ports_pod("p", "TCP/10.0.0.1/80", "UDP/10.0.0.1/53")
    assert statuses(explain(c, p, [PLUGIN])) == {
        "a": NO_FREE_PORTS,
        "b": NO_FREE_PORTS,
        "c": None,
    }
    # A container port without a hostPort claims nothing on the node.
    no_host = pod("p", containers=[container(ports=[{"containerPort": 80}])])
    assert set(statuses(explain(c, no_host, [PLUGIN])).values()) == {None}


def test_a_removed_pod_frees_its_ports_even_when_another_pod_holds_them() -> None:
    """Upstream's NodeInfo.UsedPorts is a set: RemovePod deletes the pod's ports from it
    whoever else uses them (two pods bound to one node with the same host port, as a
    pod placed by nodeName may be). The port is free from then on, also for preemption's
    dry run, which removes victims from a copy of the node."""
    c = cluster(
        [node("n1")],
        [
            ports_pod("a", "TCP/0.0.0.0/8080", node_name="n1"),
            ports_pod("b", "TCP//8080", node_name="n1"),
        ],
    )
    snap = snapshot(c)
    wanted = compile_pod(ports_pod("p", "TCP/127.0.0.1/8080"))
    profile = Profile([PLUGIN], [], {})
    assert snap.schedule(wanted, profile).node is None
    assert snap.remove_pod(c["pods"][0]["uid"])
    assert snap.schedule(wanted, profile).node == "n1"  # b still holds 8080, upstream too


@pytest.mark.parametrize("place", ["schedule_batch", "schedule_gang"])
def test_tentative_placements_leave_a_port_another_pod_holds(place: str) -> None:
    """schedule_batch and schedule_gang account each pod they place and undo that before
    returning; the undo must not free a port another pod on the node holds (upstream
    assumes those pods for real, or places them on a copy). The tentative pod lands on
    the node's port because its profile has no NodePorts."""
    c = cluster([node("n1")], [ports_pod("a", "TCP/0.0.0.0/8080", node_name="n1")])
    snap = snapshot(c)
    tentative = compile_pod(ports_pod("t", "TCP/0.0.0.0/8080"))
    no_ports = Profile([], [], {})
    if place == "schedule_batch":
        results = snap.schedule_batch([tentative], no_ports)
    else:
        results = snap.schedule_gang([tentative], no_ports, 1).results
    assert [r.node for r in results] == ["n1"]
    wanted = compile_pod(ports_pod("p", "TCP/127.0.0.1/8080"))
    assert snap.schedule(wanted, Profile([PLUGIN], [], {})).node is None  # a still holds 8080
