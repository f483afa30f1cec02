"""DynamicResources on the embedded cluster, modelled on scheduler_perf's
``SchedulingWithResourceClaimTemplate`` (``dra/performance-config.yaml``,
``5000pods_500nodes``): 500 nodes with a test driver's ResourceSlice each (10
devices per node, ``maxClaimsPerNode: 10``: A100 model, family, driverVersion and a
per-device ``dra.example.com/numa`` attribute, 1Gi memory, as ``resourceSlice()`` in
``scheduler_perf/dra.go``), the ``test-class`` DeviceClass, and pods that each use one
claim generated from ``test-claim-template`` (one ``req-0`` request of the class).

The embedded cluster has no kube-controller-manager: each pod's claim is created the
way the resourceclaim controller creates it (owned by the pod, recorded in the pod's
``status.resourceClaimStatuses``) before the pod. Upstream's case first schedules 2,500
init pods, then measures 2,500; here the init pods' claims are pre-allocated (their
devices taken, one per device round-robin) and the measured pods are scheduled by the
scheduler under test. Throughput is pods bound per second, first pod created to last
pod bound.

``KSCHED_BENCH_DRA_SCALE`` scales nodes and pods (default 1).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

Obj = dict[str, Any]
DRIVER = "test-driver.cdi.k8s.io"
SCALE = float(os.environ.get("KSCHED_BENCH_DRA_SCALE") or 1)
NODES = max(1, int(500 * SCALE))
DEVICES_PER_NODE = 10
INIT_PODS = int(2500 * SCALE)
MEASURE_PODS = int(2500 * SCALE)


def resource_slice(node: str) -> Obj:
    return {
        "metadata": {"name": node},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(DEVICES_PER_NODE)
            ],
        },
    }


def claim_for(pod: Obj, allocated_on: tuple[str, int] | None = None) -> Obj:
    meta = pod["metadata"]
    claim: Obj = {
        "metadata": {
            "name": f"{meta['name']}-req",
            "namespace": meta["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]
            }
        },
    }
    if allocated_on is not None:
        node, i = allocated_on
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "req-0",
                            "driver": DRIVER,
                            "pool": node,
                            "device": f"instance-{i}",
                        }
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
        }
    return claim


def pod_with_claim(name: str, namespace: str, node: str | None = None) -> Obj:
    pod = make_pod(name, namespace=namespace, node_name=node)
    pod["metadata"]["uid"] = f"uid-{namespace}-{name}"
    pod["spec"]["resourceClaims"] = [
        {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
    ]
    pod.setdefault("status", {})["resourceClaimStatuses"] = [
        {"name": "resource", "resourceClaimName": f"{name}-req"}
    ]
    return pod


def build_cluster() -> InMemoryCluster:
    c = InMemoryCluster()
    c.create(
        "deviceclasses",
        {
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    )
    for i in range(NODES):
        node = f"scheduler-perf-dra-{i}"
        c.create("nodes", make_node(node, cpu="64", memory="256Gi", pods="110"))
        c.create("resourceslices", resource_slice(node))
    for i in range(INIT_PODS):
        node = f"scheduler-perf-dra-{i % NODES}"
        pod = pod_with_claim(f"init-{i}", "init", node)
        c.create("resourceclaims", claim_for(pod, (node, (i // NODES) % DEVICES_PER_NODE)))
        c.create("pods", pod)
    return c


async def run_once() -> tuple[int, float]:
    c = build_cluster()
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=1)
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    start = time.perf_counter()
    for i in range(MEASURE_PODS):
        pod = pod_with_claim(f"test-{i}", "test")
        c.create("resourceclaims", claim_for(pod))
        c.create("pods", pod)
    deadline = start + 600
    while sched.stats.bound < MEASURE_PODS and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - start
    bound = sched.stats.bound
    await sched.shutdown()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return bound, elapsed


def test_scheduling_with_resource_claim_template(benchmark) -> None:  # type: ignore[no-untyped-def]
    results: list[tuple[int, float]] = []

    def run() -> None:
        results.append(asyncio.run(run_once()))

    benchmark.pedantic(run, rounds=1, iterations=1)
    bound, elapsed = results[-1]
    # Every measured pod gets a device: 10 per node, half of them taken by init pods.
    assert bound == MEASURE_PODS
    benchmark.extra_info["pods_per_second"] = bound / elapsed
    benchmark.extra_info["nodes"] = NODES
    benchmark.extra_info["devices"] = NODES * DEVICES_PER_NODE
