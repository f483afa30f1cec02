"""Extended resources backed by DRA (DRAExtendedResource) side by side with upstream
kube-scheduler v1.36 on the same apiserver: pods ask for ``example.com/...`` in their
containers' requests, a DeviceClass maps that name (explicitly, or the implicit
``deviceclass.resource.kubernetes.io/<class>``) and no device plugin advertises it.

Each scheduler has its own copy of the driver, class and resource name (both see every
DeviceClass, so the names must differ), the same pods are scheduled by kube-scheduler
(profile ``upstream``) and ksched (profile ``ksched``), and the outcomes must be equal
once names are normalized: the claim PreBind created (its requests, the devices
allocated and the pod's ``status.extendedResourceClaimStatus``), or the FailedScheduling
message word for word.
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
SCHEDULERS = ("upstream", "ksched")
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


@pytest.fixture(scope="module")
def upstream(control_plane: ControlPlane) -> Iterator[None]:
    with control_plane.start_kube_scheduler({"profiles": [{"schedulerName": "upstream"}]}):
        yield


class Side:
    """One scheduler's copy: driver, DeviceClass, extended resource name, slice."""

    def __init__(self, cluster: Cluster, scheduler: str, suffix: str) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.driver = f"{scheduler}-{suffix}.example.com"
        self.device_class = f"{scheduler}-{suffix}"
        self.resource = f"example.com/{scheduler}-{suffix}"
        self.implicit = f"deviceclass.resource.kubernetes.io/{self.device_class}"
        self.slices: list[str] = []

    async def setup(self, node: str, devices: int, explicit: bool) -> None:
        rest = self.cluster.rest
        spec: Obj = {"selectors": [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]}
        if explicit:
            spec["extendedResourceName"] = self.resource
        await rest.request_json(
            "POST",
            f"{RESOURCE}/deviceclasses",
            body={"metadata": {"name": self.device_class}, "spec": spec},
        )
        name = f"{self.device_class}-{node}"
        await rest.request_json(
            "POST",
            f"{RESOURCE}/resourceslices",
            body={
                "metadata": {"name": name},
                "spec": {
                    "driver": self.driver,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
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

    def requests(self, wanted: dict[str, str]) -> dict[str, str]:
        """``RES``/``IMPLICIT``/``OTHER`` in a case's requests, for this side."""
        names = {"RES": self.resource, "IMPLICIT": self.implicit}
        return {names.get(k, k): v for k, v in wanted.items()}

    async def run(self, name: str, containers: list[tuple[str, dict[str, str]]]) -> None:
        pod = make_pod(f"{self.scheduler}-{name}", cpu="100m", memory="100Mi")
        pod["spec"]["schedulerName"] = self.scheduler
        app: list[Obj] = []
        init: list[Obj] = []
        for i, (kind, wanted) in enumerate(containers):
            reqs = {"cpu": "10m", **self.requests(wanted)}
            # Extended resources must have limits equal to their requests.
            limits = {k: v for k, v in reqs.items() if "/" in k}
            c: Obj = {
                "name": f"{kind}-{i}",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": reqs, "limits": limits},
            }
            if kind == "sidecar":
                c["restartPolicy"] = "Always"
            (app if kind == "app" else init).append(c)
        pod["spec"]["containers"] = app
        if init:
            pod["spec"]["initContainers"] = init
        await self.cluster.create_pod(pod)


async def outcome(cluster: Cluster, scheduler: str, name: str) -> Any:
    pod = await cluster.pod(f"{scheduler}-{name}")
    if pod["spec"].get("nodeName"):
        status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        if status is None:
            return ("bound", None)
        claim = await cluster.rest.request_json(
            "GET",
            f"{RESOURCE}/namespaces/{cluster.ns}/resourceclaims/{status['resourceClaimName']}",
        )
        results = claim["status"]["allocation"]["devices"]["results"]
        return (
            "bound",
            claim["metadata"]["annotations"].get(ANNOTATION),
            claim["metadata"]["generateName"],
            [
                (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
                for r in claim["spec"]["devices"]["requests"]
            ],
            sorted((r["pool"], r["device"], r["request"]) for r in results),
            sorted(
                (m["containerName"], m["resourceName"], m["requestName"])
                for m in status["requestMappings"]
            ),
            [r["name"] for r in claim["status"]["reservedFor"]],
        )
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return ("failed", c.get("message"))
    return None


#: Cases whose node also has a device plugin for the resource (its allocatable).
DEVICE_PLUGIN = {"device-plugin-node": "1", "device-plugin-node-too-small": "1"}

#: (name, devices on the node, class has the explicit name, containers)
CASES: list[tuple[str, int, bool, list[tuple[str, dict[str, str]]]]] = [
    ("device-plugin-node", 2, True, [("app", {"RES": "1"})]),
    ("device-plugin-node-too-small", 2, True, [("app", {"RES": "2"})]),
    ("explicit-name", 2, True, [("app", {"RES": "1"})]),
    ("implicit-name-two-devices", 3, False, [("app", {"IMPLICIT": "2"})]),
    ("two-containers", 3, True, [("app", {"RES": "1"}), ("app", {"RES": "2"})]),
    (
        "init-sidecar-and-app",
        4,
        True,
        [
            ("init", {"RES": "2"}),
            ("sidecar", {"RES": "1"}),
            ("init", {"RES": "3"}),
            ("app", {"RES": "1"}),
        ],
    ),
    ("more-than-the-devices", 1, True, [("app", {"RES": "2"})]),
    ("no-class-for-the-name", 1, False, [("app", {"RES": "1"})]),
]


@pytest.fixture
async def sides(cluster: Cluster, upstream: None) -> AsyncIterator[dict[str, Side]]:
    suffix = uuid.uuid4().hex[:6]
    out = {s: Side(cluster, s, suffix) for s in SCHEDULERS}
    try:
        yield out
    finally:
        for side in out.values():
            await side.cleanup()


@pytest.mark.parametrize(
    ("name", "devices", "explicit", "containers"), CASES, ids=[c[0] for c in CASES]
)
async def test_same_outcome_as_kube_scheduler(
    kubeconfig: Any,
    cluster: Cluster,
    sides: dict[str, Side],
    name: str,
    devices: int,
    explicit: bool,
    containers: list[tuple[str, dict[str, str]]],
) -> None:
    node = f"ext-{uuid.uuid4().hex[:6]}"
    node_obj = make_node(node, cpu="8", memory="32Gi")
    if name in DEVICE_PLUGIN:
        for side in sides.values():
            node_obj["status"]["allocatable"][side.resource] = DEVICE_PLUGIN[name]
            node_obj["status"]["capacity"][side.resource] = DEVICE_PLUGIN[name]
    await cluster.create_nodes([node_obj])
    for side in sides.values():
        await side.setup(node, devices, explicit)
    async with Running(str(kubeconfig), config(profiles=("ksched",))):
        for side in sides.values():
            await side.run(name, containers)
        results = {}
        for s in SCHEDULERS:
            results[s] = await eventually(
                lambda s=s: outcome(cluster, s, name), what=f"{s} decided", timeout=60
            )
    norm: dict[str, str] = {}
    for s, side in sides.items():
        norm.update(
            {
                side.implicit: "IMPLICIT",
                side.resource: "RES",
                side.device_class: "CLASS",
                f"{s}-{name}": "POD",
            }
        )

    def normalized(r: Any) -> str:
        text = repr(r)
        for k, v in sorted(norm.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(k, v)
        return text

    failing = ("more-than-the-devices", "no-class-for-the-name", "device-plugin-node-too-small")
    want = "failed" if name in failing else "bound"
    assert results["upstream"][0] == want, results["upstream"]
    if name == "device-plugin-node":
        assert results["upstream"] == ("bound", None)  # no claim: the device plugin's
    elif want == "bound":
        assert results["upstream"][1] == "true"  # the claim PreBind created
    assert normalized(results["ksched"]) == normalized(results["upstream"])
