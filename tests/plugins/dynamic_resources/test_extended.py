"""Extended resources backed by DRA (DRAExtendedResource): upstream's
``extendeddynamicresources_test.go`` tables (the device requests and the container
request mappings of the pod's claim), the extended resource cache's rules, and the
``extended-resource-*`` cases of ``dynamicresources_test.go`` run through the whole
scheduler on the embedded cluster (NodeResourcesFit leaves the resource to DRA, the claim
is created in PreBind with the pod's ``status.extendedResourceClaimStatus``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import QueueingHint
from ksched.plugins.dynamic_resources.extended import (
    ANNOTATION,
    DEVICE_CLASS_PREFIX,
    ExtendedResourceCache,
    create_requests_and_mappings,
)
from ksched.plugins.node_resources_fit import _fit_after_device_class_change
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.plugins.dynamic_resources.fixtures import device, slice_with_devices
from tests.unit.core.test_scheduler_embedded import Running

Obj = dict[str, Any]
GPU = "example.com/gpu"
DRIVER = "gpu.example.com"


# ---- createRequestsAndMappings (upstream st.MakePod helpers) -------------------------------


def make(*containers: tuple[str, dict[str, str]]) -> Obj:
    """``st.MakePod()`` with ``Res`` ("app"), ``InitReq`` ("init") and ``SidecarReq``
    ("sidecar") containers named as upstream's wrappers name them."""
    spec: Obj = {"containers": [], "initContainers": []}
    for kind, reqs in containers:
        c: Obj = {"resources": {"requests": dict(reqs)}}
        if kind == "app":
            c["name"] = f"con{len(spec['containers'])}"
            spec["containers"].append(c)
        else:
            prefix = "init-con" if kind == "init" else "sidecar-con"
            c["name"] = f"{prefix}{len(spec['initContainers'])}"
            if kind == "sidecar":
                c["restartPolicy"] = "Always"
            spec["initContainers"].append(c)
    return {"metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"}, "spec": spec}


def cache_of(mapping: dict[str, str]) -> ExtendedResourceCache:
    """``mockDeviceClassResolver``: resource → class name."""
    cache = ExtendedResourceCache()
    for resource, cls in mapping.items():
        cache._by_resource[resource] = {"metadata": {"name": cls}}
    return cache


IMPLICIT_INIT = DEVICE_CLASS_PREFIX + "classInit"
POD1 = make(("app", {GPU: "1", GPU + "1": "2"}))
POD2 = make(("app", {GPU: "1"}), ("app", {GPU + "1": "2"}))
POD_INIT = make(("app", {GPU: "1"}), ("init", {GPU + "init": "2"}))
POD_INIT2 = make(("app", {GPU: "1"}), ("init", {GPU + "init": "1"}), ("init", {GPU + "init": "2"}))
POD_INIT3 = make(
    ("app", {GPU: "1"}),
    ("init", {GPU + "init": "1"}),
    ("sidecar", {GPU + "init": "1"}),
    ("init", {GPU + "init": "2"}),
)
POD_INIT_IMPLICIT = make(
    ("app", {GPU: "1"}), ("init", {GPU + "init": "1"}), ("init", {IMPLICIT_INIT: "2"})
)
POD1_INIT_IMPLICIT = make(("init", {GPU + "init": "1", IMPLICIT_INIT: "2"}))
DEV_MAP = {GPU: "class"}
DEV_MAP2 = {GPU: "class", GPU + "1": "class1"}
DEV_MAP_INIT = {GPU: "class", GPU + "init": "classInit", IMPLICIT_INIT: "classInit"}
RES = {GPU: 1}
RES2 = {GPU: 1, GPU + "1": 2}
RES_INIT = {GPU: 1, GPU + "init": 2}
RES_INIT_IMPLICIT = {GPU: 1, GPU + "init": 2, IMPLICIT_INIT: 2}


@pytest.mark.parametrize(
    ("pod", "extended", "mapping", "want"),
    [
        pytest.param(POD1, {}, {}, [], id="nil"),
        pytest.param(
            POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP,
            [("container-0-request-0", "class", 1)],
            id="one resource match, one resource not match",
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)
def test_create_requests(
    pod: Obj, extended: dict[str, int], mapping: dict[str, str], want: list[tuple[str, str, int]]
) -> None:
    requests, _ = create_requests_and_mappings(pod, extended, cache_of(mapping))
    got = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]
    assert got == want
    assert all(r["exactly"]["allocationMode"] == "ExactCount" for r in requests)


def cer(container: str, resource: str, request: str) -> tuple[str, str, str]:
    return (request, container, resource)


@pytest.mark.parametrize(
    ("pod", "extended", "mapping", "want"),
    [
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [
                cer("con0", GPU, "container-0-request-0"),
                cer("con0", GPU + "1", "container-0-request-1"),
            ],
            id="one container, two requests",
        ),
        pytest.param(
            POD1_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                cer("init-con0", IMPLICIT_INIT, "container-0-request-0"),
                cer("init-con0", GPU + "init", "container-0-request-1"),
            ],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [
                cer("con0", GPU, "container-0-request-0"),
                cer("con1", GPU + "1", "container-1-request-0"),
            ],
            id="two containers, two requests",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [
                cer("init-con0", GPU + "init", "container-0-request-0"),
                cer("con0", GPU, "container-1-request-0"),
            ],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [
                cer("init-con0", GPU + "init", "container-1-request-0"),
                cer("init-con1", GPU + "init", "container-1-request-0"),
                cer("con0", GPU, "container-2-request-0"),
            ],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            POD_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                cer("init-con0", GPU + "init", "container-0-request-0"),
                cer("init-con1", IMPLICIT_INIT, "container-1-request-0"),
                cer("con0", GPU, "container-2-request-0"),
            ],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                cer("init-con0", GPU + "init", "container-1-request-0"),
                cer("sidecar-con1", GPU + "init", "container-1-request-0"),
                cer("init-con2", GPU + "init", "container-2-request-0"),
                cer("con0", GPU, "container-3-request-0"),
            ],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)
def test_create_mappings(
    pod: Obj, extended: dict[str, int], mapping: dict[str, str], want: list[tuple[str, str, str]]
) -> None:
    _, mappings = create_requests_and_mappings(pod, extended, cache_of(mapping))
    got = sorted((m["requestName"], m["containerName"], m["resourceName"]) for m in mappings)
    assert got == want


# ---- the extended resource cache -----------------------------------------------------------


def dclass(name: str, explicit: str | None = None, created: str = "2026-01-01T00:00:00Z") -> Obj:
    spec: Obj = {} if explicit is None else {"extendedResourceName": explicit}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def held(cache: ExtendedResourceCache) -> dict[str, str]:
    return {
        r: c["metadata"]["name"]
        for r in cache.names()
        if (c := cache.get_device_class(r)) is not None
    }


def test_cache_maps_the_explicit_and_the_implicit_name() -> None:
    cache = ExtendedResourceCache()
    cache.on_add(dclass("gpu", GPU))
    cache.on_add(dclass("fpga"))
    assert held(cache) == {
        GPU: "gpu",
        DEVICE_CLASS_PREFIX + "gpu": "gpu",
        DEVICE_CLASS_PREFIX + "fpga": "fpga",
    }
    assert cache.get_extended_resource("gpu") == GPU
    assert cache.get_extended_resource("fpga") == ""


@pytest.mark.parametrize(
    ("first", "second", "holder"),
    [
        pytest.param(
            dclass("old", GPU, "2026-01-01T00:00:00Z"),
            dclass("new", GPU, "2026-01-02T00:00:00Z"),
            "new",
            id="newer-class-wins",
        ),
        pytest.param(
            dclass("new", GPU, "2026-01-02T00:00:00Z"),
            dclass("old", GPU, "2026-01-01T00:00:00Z"),
            "new",
            id="older-class-does-not-take-it",
        ),
        pytest.param(dclass("b", GPU), dclass("a", GPU), "a", id="tie-goes-to-the-lower-name"),
        pytest.param(dclass("a", GPU), dclass("b", GPU), "a", id="tie-kept-by-the-lower-name"),
    ],
)
def test_cache_resolves_two_classes_with_one_name(first: Obj, second: Obj, holder: str) -> None:
    cache = ExtendedResourceCache()
    cache.on_add(first)
    cache.on_add(second)
    assert held(cache)[GPU] == holder


def test_cache_losing_class_gets_no_implicit_name_and_delete_drops_the_explicit_one() -> None:
    cache = ExtendedResourceCache()
    cache.on_add(dclass("a", GPU))
    cache.on_add(dclass("b", GPU))
    # Upstream returns before adding the implicit name of the class that lost.
    assert DEVICE_CLASS_PREFIX + "b" not in cache
    # Deleting "b" removes GPU although "a" holds it (upstream removeResourceName2class).
    cache.on_delete(dclass("b", GPU))
    assert GPU not in cache
    assert held(cache) == {DEVICE_CLASS_PREFIX + "a": "a"}


def test_cache_update_moves_the_explicit_name() -> None:
    cache = ExtendedResourceCache()
    old = dclass("gpu", GPU)
    cache.on_add(old)
    cache.on_update(old, dclass("gpu", GPU + "2"))
    assert held(cache) == {GPU + "2": "gpu", DEVICE_CLASS_PREFIX + "gpu": "gpu"}


# ---- NodeResourcesFit's DeviceClass hint ----------------------------------------------------


def gpu_pod(resource: str = GPU, amount: str = "1") -> Pod:
    obj = make_pod("p", cpu="100m", memory="100Mi")
    obj["spec"]["containers"][0]["resources"]["requests"][resource] = amount
    return Pod.from_dict(obj)


Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(gpu_pod(), None, dclass("gpu", GPU), Q, id="added-class-maps-the-request"),
        pytest.param(gpu_pod(), None, dclass("gpu"), S, id="added-class-maps-nothing-requested"),
        pytest.param(
            gpu_pod(DEVICE_CLASS_PREFIX + "gpu"), None, dclass("gpu"), Q, id="added-implicit-name"
        ),
        pytest.param(
            gpu_pod(DEVICE_CLASS_PREFIX + "gpu"),
            dclass("gpu"),
            dclass("gpu", "x.com/y"),
            S,
            id="update-does-not-look-at-the-implicit-name",
        ),
        pytest.param(
            gpu_pod(), dclass("gpu"), dclass("gpu", GPU), Q, id="update-adds-the-requested-name"
        ),
        pytest.param(gpu_pod(), dclass("gpu", GPU), dclass("gpu", GPU), S, id="update-same-name"),
    ],
)
def test_fit_device_class_hint(pod: Pod, old: Obj | None, new: Obj, want: QueueingHint) -> None:
    assert _fit_after_device_class_change(pod, old, new) is want


# ---- through the scheduler ------------------------------------------------------------------


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def gpu_class(name: str = "gpu", explicit: str | None = GPU) -> Obj:
    cls = dclass(name, explicit)
    cls["spec"]["selectors"] = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return cls


def gpus(node: str, n: int) -> Obj:
    devs = [device(f"gpu-{i}") for i in range(n)]
    return slice_with_devices(f"{node}-gpus", node, node, DRIVER, *devs)


def pod_asking(name: str, resources: dict[str, str]) -> Obj:
    pod = make_pod(name, cpu="100m", memory="100Mi")
    pod["spec"]["containers"][0]["resources"]["requests"].update(resources)
    return pod


def node_of(c: InMemoryCluster, pod: str) -> str | None:
    obj = c.get("pods", f"default/{pod}")
    return None if obj is None else obj["spec"].get("nodeName")


def notes(c: InMemoryCluster, pod: str) -> list[str]:
    return [
        e["note"]
        for e in c.events
        if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == pod
    ]


def extended_claims(c: InMemoryCluster) -> list[Obj]:
    return [
        o
        for o in c.objects("resourceclaims")
        if (o["metadata"].get("annotations") or {}).get(ANNOTATION) == "true"
    ]


async def test_a_pod_gets_its_extended_resource_from_dra() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class())
    c.create("nodes", make_node("n0", cpu="8", memory="32Gi"))
    c.create("resourceslices", gpus("n0", 2))
    async with Running(c) as sched:
        c.create("pods", pod_asking("p", {GPU: "2"}))
        await wait_for(lambda: node_of(c, "p") == "n0")
        creates = sched.metrics.resourceclaim_creates.get(("success",))
    [claim] = extended_claims(c)
    pod = c.get("pods", "default/p")
    assert pod is not None
    m = claim["metadata"]
    assert m["name"].startswith("p-extended-resources-") and len(m["name"]) == 26
    assert m["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert m["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-1",
            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
        }
    ]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    assert {r["request"] for r in results} == {"container-0-request-1"}
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}
    ]
    assert pod["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [
            {"containerName": "pause", "resourceName": GPU, "requestName": "container-0-request-1"}
        ],
        "resourceClaimName": m["name"],
    }
    assert creates == 1


async def test_a_device_plugin_node_is_fitted_as_usual_and_creates_no_claim() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class())
    node = make_node("n0", cpu="8", memory="32Gi")
    node["status"]["allocatable"][GPU] = "1"
    c.create("nodes", node)
    async with Running(c):
        c.create("pods", pod_asking("p", {GPU: "1"}))
        c.create("pods", pod_asking("q", {GPU: "1"}))
        await wait_for(lambda: node_of(c, "p") == "n0" and bool(notes(c, "q")))
    assert extended_claims(c) == []
    assert notes(c, "q")[0].startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")


async def test_no_device_keeps_the_pod_pending_until_a_slice_appears() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class())
    c.create("nodes", make_node("n0", cpu="8", memory="32Gi"))
    async with Running(c):
        c.create("pods", pod_asking("p", {GPU: "1"}))
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
        assert extended_claims(c) == []
        c.create("resourceslices", gpus("n0", 1))
        await wait_for(lambda: node_of(c, "p") == "n0")


async def test_without_a_class_the_request_is_a_device_plugin_resource() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8", memory="32Gi"))
    c.create("resourceslices", gpus("n0", 1))
    async with Running(c):
        c.create("pods", pod_asking("p", {GPU: "1"}))
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0].startswith(
            "0/1 nodes are available: 1 Insufficient example.com/gpu."
        )
        # The class arrives: NodeResourcesFit's DeviceClass hint queues the pod.
        c.create("deviceclasses", gpu_class())
        await wait_for(lambda: node_of(c, "p") == "n0")


async def test_two_pods_never_get_one_device_and_the_implicit_name_works() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class(explicit=None))
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="8", memory="32Gi"))
        c.create("resourceslices", gpus(f"n{i}", 1))
    implicit = DEVICE_CLASS_PREFIX + "gpu"
    async with Running(c):
        for i in range(3):
            c.create("pods", pod_asking(f"p{i}", {implicit: "1"}))
        await wait_for(lambda: sum(node_of(c, f"p{i}") is not None for i in range(3)) == 2)
        await wait_for(lambda: any(notes(c, f"p{i}") for i in range(3)))
    devices = [
        (r["pool"], r["device"])
        for claim in extended_claims(c)
        for r in claim["status"]["allocation"]["devices"]["results"]
    ]
    assert sorted(devices) == [("n0", "gpu-0"), ("n1", "gpu-0")]


async def test_one_resource_from_a_device_plugin_the_other_from_dra() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class("gpu", GPU))
    c.create("deviceclasses", gpu_class("gpu2", GPU + "2"))
    node = make_node("n0", cpu="8", memory="32Gi")
    node["status"]["allocatable"][GPU] = "1"
    c.create("nodes", node)
    c.create("resourceslices", gpus("n0", 1))
    async with Running(c):
        c.create("pods", pod_asking("p", {GPU: "1", GPU + "2": "1"}))
        await wait_for(lambda: node_of(c, "p") == "n0")
    [claim] = extended_claims(c)
    # Only example.com/gpu2 comes from DRA; its index among the sorted request names
    # (cpu, example.com/gpu, example.com/gpu2, memory).
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-2",
            "exactly": {"deviceClassName": "gpu2", "allocationMode": "ExactCount", "count": 1},
        }
    ]


async def test_a_stale_claim_fails_every_node_and_post_filter_deletes_it() -> None:
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class())
    c.create("nodes", make_node("n0", cpu="8", memory="32Gi"))
    c.create("resourceslices", gpus("n0", 1))
    pod = c.create("pods", pod_asking("p", {GPU: "1"}))
    stale = {
        "metadata": {
            "name": "p-extended-resources-old",
            "namespace": "default",
            "annotations": {ANNOTATION: "true"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "p",
                    "uid": pod["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-1",
                        "exactly": {"deviceClassName": "gpu", "count": 1},
                    }
                ]
            }
        },
    }
    c.create("resourceclaims", stale)
    async with Running(c):
        await wait_for(lambda: bool(notes(c, "p")))
        assert notes(c, "p")[0] == (
            "0/1 nodes are available: 1 cannot schedule extended resource claim. deletion of "
            "ResourceClaim completed, preemption: 0/1 nodes are available: 1 Preemption is not "
            "helpful for scheduling."
        )
        await wait_for(lambda: c.get("resourceclaims", "default/p-extended-resources-old") is None)


# ---- NodeResourcesFit's node hint with the mapping ----------------------------------------


def fit_node(allocatable: dict[str, str]) -> Any:
    from ksched.api.node import Node

    obj = make_node("n", cpu="8", memory="32Gi")
    obj["status"]["allocatable"].update(allocatable)
    return Node.from_dict(obj)


@pytest.mark.parametrize(
    ("mapped", "old", "new", "want"),
    [
        pytest.param(True, None, {}, Q, id="added-node-without-it-fits-through-dra"),
        pytest.param(False, None, {}, S, id="added-node-without-it-unmapped"),
        pytest.param(True, {}, {}, Q, id="updated-node-still-delegates"),
        pytest.param(False, {GPU: "1"}, {GPU: "1"}, S, id="updated-device-plugin-node-unchanged"),
        pytest.param(False, {GPU: "0"}, {GPU: "1"}, Q, id="device-plugin-resource-appears"),
    ],
)
def test_fit_node_hint_delegates_mapped_resources(
    mapped: bool, old: dict[str, str] | None, new: dict[str, str], want: QueueingHint
) -> None:
    from ksched.plugins.node_resources_fit import _fit_after_node_change

    pod = gpu_pod()
    got = _fit_after_node_change(
        pod,
        None if old is None else fit_node(old),
        fit_node(new),
        (lambda name: name == GPU) if mapped else (lambda name: False),
    )
    assert got is want


# ---- NodeResourcesFit scores DRA-backed extended resources ---------------------------------

FIT_SCORING = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: example.com/gpu, weight: 1}
"""


def allocated_claim(name: str, node: str, device_name: str) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "other"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": node, "device": device_name}
                    ]
                }
            }
        },
    }


@pytest.mark.parametrize("busy", [0, 3], ids=["n0-idle", "n0-three-of-four-taken"])
async def test_most_allocated_counts_the_class_devices_where_dra_backs_the_resource(
    busy: int,
) -> None:
    from ksched.config.load import load_config_bytes
    from ksched.profiles import build_profiles

    profiles = build_profiles(load_config_bytes(FIT_SCORING.encode()))
    c = InMemoryCluster()
    c.create("deviceclasses", gpu_class())
    for n in ("n0", "n1"):
        c.create("nodes", make_node(n, cpu="8", memory="32Gi"))
        c.create("resourceslices", gpus(n, 4))
    for i in range(busy):
        c.create("resourceclaims", allocated_claim(f"taken-{i}", "n0", f"gpu-{i}"))
    if busy == 0:
        # n1 is the busier one: MostAllocated (4 devices there, 3 taken) prefers it.
        for i in range(3):
            c.create("resourceclaims", allocated_claim(f"taken-{i}", "n1", f"gpu-{i}"))
    async with Running(c, profiles=profiles):
        c.create("pods", pod_asking("p", {GPU: "1"}))
        await wait_for(lambda: node_of(c, "p") is not None)
    assert node_of(c, "p") == ("n0" if busy else "n1")


# ---- any number of extended resources backed by DRA (upstream builds each node's variant) --


def many_classes(c: InMemoryCluster, n: int) -> list[str]:
    """``n`` DeviceClasses, ``example.com/gpu-<i>`` each, selecting the devices whose
    ``kind`` attribute is ``<i>``; returns the resource names."""
    names = []
    for i in range(n):
        cls = dclass(f"gpu-{i:02d}", f"{GPU}-{i:02d}")
        cls["spec"]["selectors"] = [
            {"cel": {"expression": f'device.driver == "{DRIVER}"'}},
            {"cel": {"expression": f'device.attributes["{DRIVER}"].kind == "{i:02d}"'}},
        ]
        c.create("deviceclasses", cls)
        names.append(f"{GPU}-{i:02d}")
    return names


def kinded_gpus(node: str, kinds: list[int]) -> Obj:
    devs = [device(f"gpu-{k:02d}", attributes={"kind": {"string": f"{k:02d}"}}) for k in kinds]
    return slice_with_devices(f"{node}-gpus", node, node, DRIVER, *devs)


@pytest.mark.parametrize("n", [11, 16])
async def test_more_than_ten_extended_resources_backed_by_dra_are_all_allocated(n: int) -> None:
    # Upstream's filterExtendedResources puts a request for every backed resource the
    # node's allocatable lacks into the node's claim, however many there are.
    c = InMemoryCluster()
    names = many_classes(c, n)
    c.create("nodes", make_node("n0", cpu="8", memory="32Gi"))
    c.create("resourceslices", kinded_gpus("n0", list(range(n))))
    async with Running(c):
        c.create("pods", pod_asking("p", dict.fromkeys(names, "1")))
        await wait_for(lambda: node_of(c, "p") == "n0")
    [claim] = extended_claims(c)
    classes = sorted(r["exactly"]["deviceClassName"] for r in claim["spec"]["devices"]["requests"])
    assert classes == [f"gpu-{i:02d}" for i in range(n)]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == [f"gpu-{i:02d}" for i in range(n)]
    pod = c.get("pods", "default/p")
    assert pod is not None
    mapped = pod["status"]["extendedResourceClaimStatus"]["requestMappings"]
    assert sorted(m["resourceName"] for m in mapped) == names


async def test_each_node_gets_the_variant_for_what_its_device_plugins_lack() -> None:
    # Twelve backed resources; n0's device plugins provide the first six (so DRA only
    # has to provide the other six there, and n0 has only those), n1 has no device
    # plugin and only five devices: the pod fits n0 alone, with a claim for six.
    c = InMemoryCluster()
    names = many_classes(c, 12)
    n0 = make_node("n0", cpu="8", memory="32Gi")
    for name in names[:6]:
        n0["status"]["allocatable"][name] = "1"
    c.create("nodes", n0)
    c.create("nodes", make_node("n1", cpu="8", memory="32Gi"))
    c.create("resourceslices", kinded_gpus("n0", list(range(6, 12))))
    c.create("resourceslices", kinded_gpus("n1", list(range(5))))
    async with Running(c):
        c.create("pods", pod_asking("p", dict.fromkeys(names, "1")))
        await wait_for(lambda: node_of(c, "p") == "n0")
    [claim] = extended_claims(c)
    classes = sorted(r["exactly"]["deviceClassName"] for r in claim["spec"]["devices"]["requests"])
    assert classes == [f"gpu-{i:02d}" for i in range(6, 12)]


@pytest.mark.parametrize(
    ("allocatable", "want"),
    [
        pytest.param([{}, {}], [[0, 1, 2]], id="no-device-plugin-anywhere"),
        pytest.param([{"a": 1}, {}], [[0, 1, 2], [1, 2]], id="one-node-provides-a"),
        pytest.param(
            [{"a": 0, "b": 2}, {"a": 1, "b": 1, "c": 1}],
            [[], [0, 2]],
            id="listed-zero-comes-from-dra",
        ),
    ],
)
def test_snapshot_dra_extended_patterns(allocatable: list[dict[str, int]], want: Any) -> None:
    from ksched import _core

    snap = _core.Snapshot()
    for i, extra in enumerate(allocatable):
        amounts = {"cpu": 8000, **{f"{GPU}-{k}": v for k, v in extra.items()}}
        snap.upsert_node(f"n{i}", amounts)
    assert snap.dra_extended_patterns([f"{GPU}-{k}" for k in "abc"]) == want
