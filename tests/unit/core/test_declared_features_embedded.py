"""NodeDeclaredFeatures on the embedded cluster, through the production path: the
default configuration as ``ksched run`` loads it, its profiles, the scheduler's informers
and queue. A pod that needs a feature no node declares stays Unschedulable with
upstream's message, and is scheduled once a node declares the feature (the plugin's
Node/UpdateNodeDeclaredFeature hint); with the gate off the plugin does nothing."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest

from ksched.config import DEFAULT_FEATURE_GATES, FeatureGates, load_config_bytes
from ksched.config.features import FeatureGate, FeatureGateError
from ksched.profiles import build_profiles
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.plugins.dynamic_resources.fixtures import device, device_class, slice_with_devices

RESTART_ALL = "RestartAllContainersOnContainerExits"
DRIVER = "gpu.example.com"
IS_H100 = f'device.attributes["{DRIVER}"].model == "h100"'
CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
#: ``--feature-gates`` with NodeDeclaredFeatures off: every gate that depends on it goes
#: off with it, as kube-scheduler's gate validation demands.
GATES_OFF_FLAG = (
    "NodeDeclaredFeatures=false,RestartAllContainersOnContainerExits=false,"
    "ExtendWebSocketsToKubelet=false,InPlacePodLevelResourcesVerticalScaling=false,"
    "InPlacePodVerticalScalingInitContainers=false"
)
GATE_OFF = FeatureGate.from_flags([GATES_OFF_FLAG]).config_gates()
#: upstream's FailedScheduling text for two nodes that lack the feature (the default
#: profile's DynamicResources and DefaultPreemption PostFilters add theirs).
WANT = (
    "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
    "no new claims to deallocate, preemption: 0/2 nodes are available: "
    "2 Preemption is not helpful for scheduling."
)

Obj = dict[str, Any]


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


class Running:
    def __init__(self, cluster: InMemoryCluster, gates: FeatureGates) -> None:
        cfg = load_config_bytes(CONFIG, gates=gates)
        self.sched = Scheduler(
            cluster, build_profiles(cfg, gates=gates), seed=1, feature_gates=gates
        )

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def restart_all_pod(name: str) -> Obj:
    pod = make_pod(name)
    pod["spec"]["containers"][0]["restartPolicy"] = "Never"
    pod["spec"]["containers"][0]["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
    ]
    return pod


def node_of(c: InMemoryCluster, name: str) -> str | None:
    pod = c.get("pods", f"default/{name}")
    return None if pod is None else pod["spec"].get("nodeName")


def condition(c: InMemoryCluster, name: str) -> Obj | None:
    pod = c.get("pods", f"default/{name}") or {}
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


async def test_pod_stays_unschedulable_until_a_node_declares_the_feature() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("plain", declared_features=["ExtendWebSocketsToKubelet"]))
    c.create("nodes", make_node("other"))
    async with Running(c, DEFAULT_FEATURE_GATES):
        c.create("pods", restart_all_pod("needs"))
        c.create("pods", make_pod("free"))
        await wait_for(lambda: node_of(c, "free") is not None)
        await wait_for(lambda: (condition(c, "needs") or {}).get("reason") == "Unschedulable")
        cond = condition(c, "needs")
        assert cond is not None and cond["message"] == WANT
        failed = [e for e in c.events if e["reason"] == "FailedScheduling"]
        assert [e["note"] for e in failed] == [WANT]
        assert node_of(c, "needs") is None
        # The kubelet of "other" restarts with the feature and declares it (a status
        # update); the plugin's Node/UpdateNodeDeclaredFeature hint requeues the pod.
        node = copy.deepcopy(c.get("nodes", "other"))
        assert node is not None
        node["status"]["declaredFeatures"] = [RESTART_ALL]
        await c.update_object(kind="nodes", obj=node, subresource="status")
        assert c.get("nodes", "other")["status"]["declaredFeatures"] == [RESTART_ALL]  # type: ignore[index]
        await wait_for(lambda: node_of(c, "needs") == "other")


async def test_with_the_gate_off_the_plugin_does_nothing() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("plain"))
    async with Running(c, GATE_OFF) as sched:
        assert "NodeDeclaredFeatures" not in sched.profiles["default-scheduler"].filters
        c.create("pods", restart_all_pod("needs"))
        await wait_for(lambda: node_of(c, "needs") == "plain")


@pytest.mark.parametrize(
    ("gates", "present"),
    [
        pytest.param(DEFAULT_FEATURE_GATES, True, id="gate-on-default-profile-runs-it"),
        pytest.param(GATE_OFF, False, id="gate-off-explicitly-enabled-does-nothing"),
    ],
)
def test_profiles_place_the_plugin_after_dynamic_resources(
    gates: FeatureGates, present: bool
) -> None:
    """Default profile: its Filter comes after DynamicResources' (applyFeatureGates appends
    it to multiPoint after DRA is inserted); an explicit enable without the gate is
    accepted and left out of the kernels."""
    explicit = CONFIG + (
        b"profiles:\n- schedulerName: default-scheduler\n"
        b"  plugins:\n    multiPoint:\n      enabled:\n      - name: NodeDeclaredFeatures\n"
    )
    cfg = load_config_bytes(explicit if not present else CONFIG, gates=gates)
    prof = build_profiles(cfg, gates=gates)["default-scheduler"]
    assert ("NodeDeclaredFeatures" in prof.filters) is present
    if present:
        assert prof.filters[-1] == "NodeDeclaredFeatures"
        assert prof.dynamic_resources_at == len(prof.filters) - 1
    else:
        assert prof.dynamic_resources_at is None


def test_turning_the_gate_off_alone_is_refused_as_upstream() -> None:
    """Four gates on by default depend on NodeDeclaredFeatures (kube_features.go)."""
    with pytest.raises(FeatureGateError) as err:
        FeatureGate.from_flags(["NodeDeclaredFeatures=false"])
    assert (
        "RestartAllContainersOnContainerExits is enabled, but depends on features that "
        "are disabled: [NodeDeclaredFeatures]"
    ) in str(err.value)


def h100_cluster(features: dict[str, list[str]], h100_on: set[str]) -> InMemoryCluster:
    """Nodes declaring ``features``; one GPU each, an h100 on the nodes of ``h100_on``."""
    c = InMemoryCluster()
    c.create("deviceclasses", device_class("gpu", DRIVER))
    for name, declared in features.items():
        c.create("nodes", make_node(name, cpu="8", declared_features=declared))
        model = "h100" if name in h100_on else "a100"
        dev = device("gpu-0", {"memory": "40Gi"}, {"model": {"string": model}})
        c.create("resourceslices", slice_with_devices(f"{name}-gpus", name, name, DRIVER, dev))
    exactly = {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": IS_H100}}]}
    claim = {
        "metadata": {"name": "h100", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }
    c.create("resourceclaims", claim)
    return c


@pytest.mark.parametrize(
    ("h100_on", "want"),
    [
        pytest.param(
            set(),
            "0/2 nodes are available: 2 cannot allocate all claims.",
            id="a-node-failing-both-reports-dynamic-resources-first",
        ),
        pytest.param(
            {"a"},
            "0/2 nodes are available: 1 cannot allocate all claims, "
            "1 node(s) didn't match Pod's required features.",
            id="each-node-reports-the-first-filter-that-rejects-it",
        ),
    ],
)
async def test_filter_order_after_dynamic_resources(h100_on: set[str], want: str) -> None:
    """The default profile runs DynamicResources' Filter before NodeDeclaredFeatures'
    (upstream stops at the first failing Filter of a node)."""
    c = h100_cluster({"a": [], "b": [RESTART_ALL]}, h100_on)
    async with Running(c, DEFAULT_FEATURE_GATES):
        pod = restart_all_pod("p")
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "h100"}]
        c.create("pods", pod)
        await wait_for(lambda: any(e["reason"] == "FailedScheduling" for e in c.events))
        note = next(e["note"] for e in c.events if e["reason"] == "FailedScheduling")
        assert note.startswith(want + " "), note
