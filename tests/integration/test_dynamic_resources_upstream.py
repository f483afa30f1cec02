"""DynamicResources side by side with upstream kube-scheduler v1.36 on the same
apiserver: for each case, the same claims are scheduled by kube-scheduler (profile
``upstream``) and by ksched (profile ``ksched``), each against its own copy of the
devices (identical ResourceSlices of two drivers, so neither sees the other's
allocations), and the outcomes must be identical: the devices allocated (pool, device,
request) or the FailedScheduling message word for word.
"""

from __future__ import annotations

import asyncio
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
BIG_MEMORY = 'device.capacity["DRIVER"].memory.compareTo(quantity("80Gi")) >= 0'


@pytest.fixture(scope="module")
def upstream(control_plane: ControlPlane) -> Iterator[None]:
    with control_plane.start_kube_scheduler({"profiles": [{"schedulerName": "upstream"}]}):
        yield


def devices(numas: list[int], model: str = "a100", memory: str = "40Gi") -> list[Obj]:
    return [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": model}, "numa": {"int": numa}},
            "capacity": {"memory": {"value": memory}},
        }
        for i, numa in enumerate(numas)
    ]


class Side:
    """One scheduler's copy of the driver: its DeviceClass and slices."""

    def __init__(self, cluster: Cluster, scheduler: str, suffix: str) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.driver = f"{scheduler}-{suffix}.example.com"
        self.device_class = f"{scheduler}-{suffix}"
        self.slices: list[str] = []

    async def setup(self, node: str, slices: list[tuple[str, list[Obj]]]) -> None:
        rest = self.cluster.rest
        await rest.request_json(
            "POST",
            f"{RESOURCE}/deviceclasses",
            body={
                "metadata": {"name": self.device_class},
                "spec": {
                    "selectors": [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]
                },
            },
        )
        for pool, devs in slices:
            name = f"{self.device_class}-{pool}"
            await rest.request_json(
                "POST",
                f"{RESOURCE}/resourceslices",
                body={
                    "metadata": {"name": name},
                    "spec": {
                        "driver": self.driver,
                        "nodeName": node,
                        "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                        "devices": devs,
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

    def spec(self, devices_spec: Obj) -> Obj:
        """The claim spec with ``CLASS`` and ``DRIVER`` filled in for this side."""
        text = repr(devices_spec).replace("CLASS", self.device_class).replace("DRIVER", self.driver)
        return eval(text)

    async def run(self, name: str, devices_spec: Obj | None, cpu: str = "100m") -> Obj:
        ns = self.cluster.ns
        pod = make_pod(
            f"{self.scheduler}-{name}", cpu=cpu, memory="100Mi", scheduler_name=self.scheduler
        )
        if devices_spec is not None:
            claim = f"{self.scheduler}-{name}"
            await self.cluster.rest.request_json(
                "POST",
                f"{RESOURCE}/namespaces/{ns}/resourceclaims",
                body={"metadata": {"name": claim}, "spec": {"devices": self.spec(devices_spec)}},
            )
            pod["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": claim}]
        await self.cluster.create_pod(pod)
        return pod


async def outcome(cluster: Cluster, scheduler: str, name: str) -> Any:
    pod = await cluster.pod(f"{scheduler}-{name}")
    if pod["spec"].get("nodeName"):
        try:
            claim = await cluster.rest.request_json(
                "GET", f"{RESOURCE}/namespaces/{cluster.ns}/resourceclaims/{scheduler}-{name}"
            )
        except NotFound:
            return ("bound", [])
        results = claim["status"]["allocation"]["devices"]["results"]
        return ("bound", [(r["pool"], r["device"], r["request"]) for r in results])
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return ("failed", c.get("message"))
    return None


CASES: list[tuple[str, list[tuple[str, list[int]]], Obj | None, str]] = [
    (
        "one-device",
        [("p1", [0, 1])],
        {"requests": [{"name": "g", "exactly": {"deviceClassName": "CLASS"}}]},
        "100m",
    ),
    (
        "match-attribute-backtracks",
        [("p1", [0, 1, 1])],
        {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "CLASS"}},
                {"name": "b", "exactly": {"deviceClassName": "CLASS"}},
            ],
            "constraints": [{"matchAttribute": "DRIVER/numa"}],
        },
        "100m",
    ),
    (
        "first-available-falls-back",
        [("p1", [0])],
        {
            "requests": [
                {
                    "name": "g",
                    "firstAvailable": [
                        {"name": "two", "deviceClassName": "CLASS", "count": 2},
                        {"name": "one", "deviceClassName": "CLASS", "count": 1},
                    ],
                }
            ]
        },
        "100m",
    ),
    (
        "all-devices-across-pools",
        [("p1", [0, 1]), ("p2", [0])],
        {
            "requests": [
                {"name": "g", "exactly": {"deviceClassName": "CLASS", "allocationMode": "All"}}
            ]
        },
        "100m",
    ),
    (
        "cel-capacity-selector",
        [("p1", [0, 1])],
        {
            "requests": [
                {
                    "name": "g",
                    "exactly": {
                        "deviceClassName": "CLASS",
                        "selectors": [{"cel": {"expression": BIG_MEMORY}}],
                    },
                }
            ]
        },
        "100m",
    ),
    (
        "cel-runtime-error",
        [("p1", [0])],
        {
            "requests": [
                {
                    "name": "g",
                    "exactly": {
                        "deviceClassName": "CLASS",
                        "selectors": [{"cel": {"expression": 'device.attributes["DRIVER"].nope'}}],
                    },
                }
            ]
        },
        "100m",
    ),
    (
        "missing-class",
        [("p1", [0])],
        {"requests": [{"name": "g", "exactly": {"deviceClassName": "CLASS-none"}}]},
        "100m",
    ),
    ("no-claims-insufficient-cpu", [("p1", [0])], None, "100"),
    (
        "claim-and-insufficient-cpu",
        [("p1", [0])],
        {"requests": [{"name": "g", "exactly": {"deviceClassName": "CLASS"}}]},
        "100",
    ),
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


@pytest.mark.parametrize(("name", "pools", "spec", "cpu"), CASES, ids=[c[0] for c in CASES])
async def test_same_outcome_as_kube_scheduler(
    kubeconfig: Any,
    cluster: Cluster,
    sides: dict[str, Side],
    name: str,
    pools: list[tuple[str, list[int]]],
    spec: Obj | None,
    cpu: str,
) -> None:
    node = f"side-{uuid.uuid4().hex[:6]}"
    await cluster.create_nodes([make_node(node, cpu="8", memory="32Gi")])
    for side in sides.values():
        await side.setup(node, [(pool, devices(numas)) for pool, numas in pools])
    async with Running(str(kubeconfig), config(profiles=("ksched",))):
        for side in sides.values():
            await side.run(name, spec, cpu=cpu)
        results = {}
        for s in SCHEDULERS:
            results[s] = await eventually(
                lambda s=s: outcome(cluster, s, name), what=f"{s} decided", timeout=60
            )
        await asyncio.sleep(0)
    upstream_result, ksched_result = results["upstream"], results["ksched"]
    # Class and driver names differ by side; compare with them normalized.
    norm = {sides["upstream"].device_class: "CLASS", sides["ksched"].device_class: "CLASS"}
    norm.update({f"{s}-{name}": "POD" for s in SCHEDULERS})

    def normalized(r: Any) -> Any:
        text = repr(r)
        for k, v in norm.items():
            text = text.replace(k, v)
        return text

    assert normalized(ksched_result) == normalized(upstream_result)
