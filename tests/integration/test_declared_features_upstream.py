"""NodeDeclaredFeatures side by side with upstream kube-scheduler v1.36.5 on the same
kube-apiserver: the same pods go to kube-scheduler (profile ``upstream``) and to ksched
(profile ``ksched``), both with the default plugins, on nodes with and without
``status.declaredFeatures``; the verdicts must be identical (the node, or the
FailedScheduling event and the PodScheduled condition word for word), and so must the
retry when a node starts declaring the feature.

kube-apiserver v1.36 keeps ``status.declaredFeatures`` with its default gates
(NodeDeclaredFeatures is beta and on; with the gate off it drops the field), and
validates it: sorted, no duplicates, ``UpperCamelCase`` segments. The control plane's
default gates are the ones this needs; :func:`test_apiserver_keeps_declared_features`
checks it. A pod needs ``RestartAllContainersOnContainerExits`` through a container
restart rule with the RestartAllContainers action (ContainerRestartRules and
RestartAllContainersOnContainerExits are beta and on in v1.36); ``hostNetwork`` with
``hostUsers: false`` would need the alpha UserNamespacesHostNetworkSupport gate on the
apiserver, so it is covered by the unit and conformance tests instead.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.test_client_scheduler import Cluster, Running, config, eventually
from tests.integration.test_client_scheduler import cluster as cluster  # the fixture

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
SCHEDULERS = ("upstream", "ksched")
RESTART_ALL = "RestartAllContainersOnContainerExits"
MERGE_PATCH = "application/merge-patch+json"
WANT = (
    "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
    "no new claims to deallocate, preemption: 0/2 nodes are available: "
    "2 Preemption is not helpful for scheduling."
)


@pytest.fixture(scope="module")
def upstream(control_plane: ControlPlane) -> Iterator[None]:
    cfg = {
        "profiles": [{"schedulerName": "upstream"}],
        # An unschedulable pod waits for a cluster event, not for a timer.
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
    }
    with control_plane.start_kube_scheduler(cfg):
        yield


def pod_for(scheduler: str, case: str, *, needs: bool) -> Obj:
    pod = make_pod(f"{scheduler}-{case}", scheduler_name=scheduler)
    if needs:
        c = pod["spec"]["containers"][0]
        c["restartPolicy"] = "Never"
        c["restartPolicyRules"] = [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ]
    return pod


async def outcome(cluster: Cluster, name: str) -> Any:
    pod = await cluster.pod(name)
    if pod["spec"].get("nodeName"):
        return ("bound", pod["spec"]["nodeName"])
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            events = [
                e["note"]
                for e in await cluster.events()
                if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == name
            ]
            if events:
                return ("failed", c.get("reason"), c.get("message"), events[0])
    return None


async def declare(cluster: Cluster, node: str, features: list[str]) -> None:
    await cluster.rest.request_json(
        "PATCH",
        f"/api/v1/nodes/{node}/status",
        body={"status": {"declaredFeatures": features}},
        content_type=MERGE_PATCH,
    )


async def test_apiserver_keeps_declared_features(cluster: Cluster) -> None:
    name = f"df-{uuid.uuid4().hex[:6]}"
    await cluster.create_node(make_node(name, declared_features=[RESTART_ALL, "Vendor/fastPath"]))
    node = await cluster.rest.request_json("GET", f"/api/v1/nodes/{name}")
    assert node["status"]["declaredFeatures"] == [RESTART_ALL, "Vendor/fastPath"]


#: ``(case, declared features per node, whether the pod needs the feature)``.
CASES: list[tuple[str, list[list[str] | None], bool]] = [
    (
        "declared-on-one-node",
        [[RESTART_ALL, "Vendor/fastPath"], ["ExtendWebSocketsToKubelet"]],
        True,
    ),
    ("declared-nowhere", [None, ["ExtendWebSocketsToKubelet", "Vendor/fastPath"]], True),
    ("declared-on-every-node", [[RESTART_ALL], ["ExtendWebSocketsToKubelet", RESTART_ALL]], True),
    ("pod-needs-nothing", [None, [RESTART_ALL]], False),
]


@pytest.mark.parametrize(("case", "declared", "needs"), CASES, ids=[c[0] for c in CASES])
async def test_same_verdict_as_kube_scheduler(
    kubeconfig: Any,
    cluster: Cluster,
    upstream: None,
    case: str,
    declared: list[list[str] | None],
    needs: bool,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    nodes = [f"df{i}-{suffix}" for i in range(len(declared))]
    await cluster.create_nodes(
        [
            make_node(n, cpu="8", memory="32Gi", declared_features=d)
            for n, d in zip(nodes, declared, strict=True)
        ]
    )
    cfg = config(profiles=("ksched",), podInitialBackoffSeconds=1, podMaxBackoffSeconds=1)
    async with Running(str(kubeconfig), cfg):
        for s in SCHEDULERS:
            await cluster.create_pod(pod_for(s, case, needs=needs))
        results = {}
        for s in SCHEDULERS:
            results[s] = await eventually(
                lambda s=s: outcome(cluster, f"{s}-{case}"), what=f"{s} decided", timeout=60
            )
        if case in ("declared-on-every-node", "pod-needs-nothing"):
            # Both nodes fit: the first pod bound tilts the scores of the second, and
            # ties go at random; both are bound.
            assert results["upstream"][0] == results["ksched"][0] == "bound"
        else:
            assert results["ksched"] == results["upstream"]
        if results["upstream"][0] == "failed":
            # upstream's text, as the embedded-cluster test expects it of ksched too.
            assert results["upstream"][1:] == ("Unschedulable", WANT, WANT)
            # The first node starts declaring the feature: both schedulers retry the pod
            # on that update (Node/UpdateNodeDeclaredFeature) and bind it there.
            await declare(cluster, nodes[0], [RESTART_ALL])
            for s in SCHEDULERS:
                results[s] = await eventually(
                    lambda s=s: _bound(cluster, f"{s}-{case}"), what=f"{s} retried", timeout=60
                )
            assert results["ksched"] == results["upstream"] == nodes[0]
        await asyncio.sleep(0)


async def _bound(cluster: Cluster, name: str) -> str | None:
    node: str | None = (await cluster.pod(name))["spec"].get("nodeName")
    return node
