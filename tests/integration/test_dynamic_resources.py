"""DynamicResources against the real kube-apiserver v1.36 and kube-controller-manager's
resourceclaim controller (which turns ResourceClaimTemplates into claims and cleans
them up when their pod is gone).

The test publishes ResourceSlices as a GPU-like DRA driver would (two devices per
node, with a ``model`` string and a ``numa`` int attribute); no kubelet runs, so
nothing prepares the devices: scheduling is what is under test. ``resource.k8s.io/v1``
is served by default in v1.36, so the apiserver needs no extra flag.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ksched.cluster import NotFound
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.test_client_scheduler import Cluster, Running, config, eventually
from tests.integration.test_client_scheduler import cluster as cluster  # the fixture

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
RESOURCE = "/apis/resource.k8s.io/v1"


@pytest.fixture(scope="module")
def claim_controller(control_plane: ControlPlane) -> Iterator[None]:
    with control_plane.start_controller_manager(["resourceclaim-controller"]):
        yield


class Driver:
    """A DRA driver's objects for one test: a DeviceClass and one ResourceSlice per
    node, all with names unique to the test."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.suffix = uuid.uuid4().hex[:6]
        self.name = f"gpu-{self.suffix}.example.com"
        self.device_class = f"gpu-{self.suffix}"
        self.slices: list[str] = []

    async def create_class(self) -> None:
        await self.cluster.rest.request_json(
            "POST",
            f"{RESOURCE}/deviceclasses",
            body={
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": self.device_class},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{self.name}"'}}]},
            },
        )

    async def publish(self, node: str, devices: list[Obj], pool: str | None = None) -> None:
        name = f"{pool or node}-{self.suffix}"
        await self.cluster.rest.request_json(
            "POST",
            f"{RESOURCE}/resourceslices",
            body={
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": self.name,
                    "nodeName": node,
                    "pool": {"name": pool or node, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            },
        )
        self.slices.append(name)

    async def cleanup(self) -> None:
        rest = self.cluster.rest
        for name in self.slices:
            with contextlib.suppress(NotFound):
                await rest.request("DELETE", f"{RESOURCE}/resourceslices/{name}")
        with contextlib.suppress(NotFound):
            await rest.request("DELETE", f"{RESOURCE}/deviceclasses/{self.device_class}")


def gpu(name: str, model: str = "a100", numa: int = 0) -> Obj:
    return {
        "name": name,
        "attributes": {"model": {"string": model}, "numa": {"int": numa}},
        "capacity": {"memory": {"value": "40Gi"}},
    }


@pytest.fixture
async def driver(cluster: Cluster, claim_controller: None) -> AsyncIterator[Driver]:
    d = Driver(cluster)
    await d.create_class()
    try:
        yield d
    finally:
        await d.cleanup()


def exact(name: str, device_class: str, *selectors: str, count: int = 1) -> Obj:
    exactly: Obj = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


async def create_claim(cluster: Cluster, name: str, devices: Obj) -> None:
    await cluster.rest.request_json(
        "POST",
        f"{RESOURCE}/namespaces/{cluster.ns}/resourceclaims",
        body={"metadata": {"name": name}, "spec": {"devices": devices}},
    )


async def create_template(cluster: Cluster, name: str, devices: Obj) -> None:
    await cluster.rest.request_json(
        "POST",
        f"{RESOURCE}/namespaces/{cluster.ns}/resourceclaimtemplates",
        body={"metadata": {"name": name}, "spec": {"spec": {"devices": devices}}},
    )


async def get_claim(cluster: Cluster, name: str) -> Obj:
    result: Obj = await cluster.rest.request_json(
        "GET", f"{RESOURCE}/namespaces/{cluster.ns}/resourceclaims/{name}"
    )
    return result


def pod_with(name: str, *, claim: str | None = None, template: str | None = None) -> Obj:
    pod = make_pod(name, cpu="100m", memory="100Mi")
    ref: Obj = {"name": "gpu"}
    if claim is not None:
        ref["resourceClaimName"] = claim
    if template is not None:
        ref["resourceClaimTemplateName"] = template
    pod["spec"]["resourceClaims"] = [ref]
    return pod


def devices_of(claim: Obj) -> list[tuple[str, str]]:
    alloc = (claim.get("status") or {}).get("allocation") or {}
    return [(r["pool"], r["device"]) for r in alloc["devices"]["results"]]


async def generated_claim(cluster: Cluster, pod: str) -> Obj | None:
    obj = await cluster.pod(pod)
    for st in (obj.get("status") or {}).get("resourceClaimStatuses") or []:
        if st.get("resourceClaimName"):
            return await get_claim(cluster, st["resourceClaimName"])
    return None


async def failed_message(cluster: Cluster, pod: str) -> str | None:
    obj = await cluster.pod(pod)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message"))
    return None


async def two_gpu_nodes(cluster: Cluster, driver: Driver, n: int = 2) -> None:
    await cluster.create_nodes(make_node(f"dra-{i}", cpu="8", memory="32Gi") for i in range(n))
    for i in range(n):
        await driver.publish(f"dra-{i}", [gpu("gpu-0", numa=0), gpu("gpu-1", numa=1)])


async def test_pods_with_claim_templates_get_distinct_devices(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await two_gpu_nodes(cluster, driver)
    await create_template(cluster, "one-gpu", {"requests": [exact("gpu", driver.device_class)]})
    async with Running(str(kubeconfig), config()):
        await cluster.create_pods(pod_with(f"p{i}", template="one-gpu") for i in range(4))
        bound = await eventually(
            lambda: _all_bound(cluster, 4), what="the four pods are bound", timeout=90
        )
    seen: set[tuple[str, str]] = set()
    for name, node in bound.items():
        claim = await generated_claim(cluster, name)
        assert claim is not None
        devices = devices_of(claim)
        assert len(devices) == 1 and devices[0][0] == node
        seen.update(devices)
        pod = await cluster.pod(name)
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]}
        ]
    assert len(seen) == 4


async def _all_bound(cluster: Cluster, n: int) -> dict[str, str] | None:
    bound = await cluster.bound()
    return bound if len(bound) == n else None


async def test_a_claim_no_device_satisfies_is_unschedulable_until_a_slice_appears(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await two_gpu_nodes(cluster, driver)
    await create_claim(
        cluster,
        "h100",
        {
            "requests": [
                exact(
                    "gpu",
                    driver.device_class,
                    f'device.attributes["{driver.name}"].model == "h100"',
                )
            ]
        },
    )
    async with Running(str(kubeconfig), config()):
        await cluster.create_pod(pod_with("p", claim="h100"))
        message = await eventually(lambda: failed_message(cluster, "p"), what="FailedScheduling")
        assert message == (
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )
        await driver.publish("dra-1", [gpu("gpu-0", model="h100")], pool="dra-1-h100")
        await eventually(
            lambda: _node_is(cluster, "p", "dra-1"), what="p bound to dra-1", timeout=60
        )
    assert devices_of(await get_claim(cluster, "h100")) == [("dra-1-h100", "gpu-0")]


async def _node_is(cluster: Cluster, pod: str, node: str) -> bool:
    return (await cluster.bound()).get(pod) == node


async def test_a_shared_claim_is_used_by_two_pods(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await two_gpu_nodes(cluster, driver)
    await create_claim(cluster, "shared", {"requests": [exact("gpu", driver.device_class)]})
    async with Running(str(kubeconfig), config()):
        await cluster.create_pods([pod_with("a", claim="shared"), pod_with("b", claim="shared")])
        bound = await eventually(lambda: _all_bound(cluster, 2), what="both pods bound")
    assert bound["a"] == bound["b"]
    claim = await get_claim(cluster, "shared")
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["a", "b"]
    assert len(devices_of(claim)) == 1


async def test_match_attribute_across_two_requests(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await cluster.create_nodes([make_node("dra-0", cpu="8", memory="32Gi")])
    await driver.publish(
        "dra-0", [gpu("gpu-0", numa=0), gpu("gpu-1", numa=1), gpu("gpu-2", numa=1)]
    )
    await create_claim(
        cluster,
        "pair",
        {
            "requests": [exact("a", driver.device_class), exact("b", driver.device_class)],
            "constraints": [{"matchAttribute": f"{driver.name}/numa", "requests": ["a", "b"]}],
        },
    )
    async with Running(str(kubeconfig), config()):
        await cluster.create_pod(pod_with("p", claim="pair"))
        await eventually(lambda: _node_is(cluster, "p", "dra-0"), what="p bound")
    # gpu-0 (numa 0) is tried first for "a", but no other numa-0 device is left for
    # "b": the allocator backtracks to the numa-1 pair.
    assert devices_of(await get_claim(cluster, "pair")) == [("dra-0", "gpu-1"), ("dra-0", "gpu-2")]


async def test_a_prioritized_list_falls_back_to_its_second_choice(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await cluster.create_nodes([make_node("dra-0", cpu="8", memory="32Gi")])
    await driver.publish("dra-0", [gpu("gpu-0", model="a100")])
    model = f'device.attributes["{driver.name}"].model'
    await create_claim(
        cluster,
        "choice",
        {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {
                            "name": "h100",
                            "deviceClassName": driver.device_class,
                            "selectors": [{"cel": {"expression": f'{model} == "h100"'}}],
                        },
                        {
                            "name": "a100",
                            "deviceClassName": driver.device_class,
                            "selectors": [{"cel": {"expression": f'{model} == "a100"'}}],
                        },
                    ],
                }
            ]
        },
    )
    async with Running(str(kubeconfig), config()):
        await cluster.create_pod(pod_with("p", claim="choice"))
        await eventually(lambda: _node_is(cluster, "p", "dra-0"), what="p bound")
    claim = await get_claim(cluster, "choice")
    assert [r["request"] for r in claim["status"]["allocation"]["devices"]["results"]] == [
        "gpu/a100"
    ]


async def test_deleting_a_pod_frees_its_device_for_the_next(
    kubeconfig: Any, cluster: Cluster, driver: Driver
) -> None:
    await cluster.create_nodes([make_node("dra-0", cpu="8", memory="32Gi")])
    await driver.publish("dra-0", [gpu("gpu-0")])
    await create_template(cluster, "one-gpu", {"requests": [exact("gpu", driver.device_class)]})
    async with Running(str(kubeconfig), config()):
        await cluster.create_pod(pod_with("first", template="one-gpu"))
        await eventually(lambda: _node_is(cluster, "first", "dra-0"), what="first bound")
        await cluster.create_pod(pod_with("second", template="one-gpu"))
        message = await eventually(
            lambda: failed_message(cluster, "second"), what="second is unschedulable"
        )
        assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")
        await cluster.rest.request(
            "DELETE",
            f"/api/v1/namespaces/{cluster.ns}/pods/first",
            json_body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        # The resourceclaim controller deallocates and deletes the first pod's claim;
        # the freed device goes to the second pod.
        await eventually(
            lambda: _node_is(cluster, "second", "dra-0"), what="second bound", timeout=90
        )
    claim = await generated_claim(cluster, "second")
    assert claim is not None and devices_of(claim) == [("dra-0", "gpu-0")]
