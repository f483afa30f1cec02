"""Pod parsing: effective requests (upstream PodRequests/CalculateResource cases), the
scheduling fields, and malformed objects."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.api.errors import InvalidObjectError
from ksched.api.pod import Pod, Toleration

Mi = 1024 * 1024
DEFAULT_CPU = 100
DEFAULT_MEM = 200 * Mi


def ctr(
    name: str = "c",
    requests: dict[str, Any] | None = None,
    *,
    sidecar: bool = False,
    image: str = "img",
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if requests is not None:
        c["resources"] = {"requests": requests}
    if sidecar:
        c["restartPolicy"] = "Always"
    if ports is not None:
        c["ports"] = ports
    return c


def make_pod(
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    *,
    overhead: dict[str, Any] | None = None,
    pod_requests: dict[str, Any] | None = None,
    node_name: str | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers if containers is not None else [ctr()]}
    if init is not None:
        spec["initContainers"] = init
    if overhead is not None:
        spec["overhead"] = overhead
    if pod_requests is not None:
        spec["resources"] = {"requests": pod_requests}
    if node_name is not None:
        spec["nodeName"] = node_name
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": "uid-1"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def resize_status(
    *,
    infeasible: bool = False,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running"}
    if infeasible:
        status["conditions"] = [
            {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
        ]
    if containers is not None:
        status["containerStatuses"] = containers
    if init is not None:
        status["initContainerStatuses"] = init
    return status


def cstatus(name: str, allocated: Any = None, actual: Any = None) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name}
    if allocated is not None:
        s["allocatedResources"] = allocated
    if actual is not None:
        s["resources"] = {"requests": actual}
    return s


@dataclass
class RequestCase:
    name: str
    pod: dict[str, Any]
    requests: dict[str, int]
    non_zero: tuple[int, int] | None = None  # (cpu milli, memory bytes); None: from requests
    extra: dict[str, Any] = field(default_factory=dict)


REQUEST_CASES = [
    # --- component-helpers TestPodRequestsAndLimits / TestPodResourceRequests ---
    RequestCase(
        "just-overhead",
        make_pod([ctr()], overhead={"cpu": "5", "memory": "5"}),
        {"cpu": 5000, "memory": 5},
        (5000 + DEFAULT_CPU, 5 + DEFAULT_MEM),
    ),
    RequestCase(
        "req-and-overhead",
        make_pod([ctr("c", {"cpu": "1", "memory": "10"})], overhead={"cpu": "5", "memory": "5"}),
        {"cpu": 6000, "memory": 15},
    ),
    RequestCase(
        "two-containers-summed",
        make_pod([ctr("a", {"cpu": "1", "memory": "5"}), ctr("b", {"cpu": "4", "memory": "12"})]),
        {"cpu": 5000, "memory": 17},
    ),
    RequestCase(
        "larger-init-container",
        make_pod([ctr("c", {"cpu": "1"})], [ctr("i", {"cpu": "4"})]),
        {"cpu": 4000},
        (4000, DEFAULT_MEM),
    ),
    RequestCase(
        "larger-containers",
        make_pod([ctr("a", {"cpu": "2"}), ctr("b", {"cpu": "3"})], [ctr("i", {"cpu": "2"})]),
        {"cpu": 5000},
        (5000, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "overhead-added-after-init-max",
        make_pod(
            [ctr("a", {"cpu": "2"}), ctr("b", {"cpu": "3"})],
            [ctr("i", {"cpu": "2"})],
            overhead={"cpu": "1", "memory": "1Gi"},
        ),
        {"cpu": 6000, "memory": 1024 * Mi},
        (6000, 2 * DEFAULT_MEM + 1024 * Mi),
    ),
    RequestCase(
        "massive-init-wins",
        make_pod(
            [ctr("a", {"cpu": "1", "memory": "5"}), ctr("b", {"cpu": "4", "memory": "12"})],
            [ctr("i1", {"cpu": "1", "memory": "5"}), ctr("i2", {"cpu": "40", "memory": "120"})],
        ),
        {"cpu": 40000, "memory": 120},
    ),
    RequestCase(
        "restartable-init-container",
        make_pod([ctr("c", {"cpu": "1"})], [ctr("s", {"cpu": "1"}, sidecar=True)]),
        {"cpu": 2000},
        (2000, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "multiple-restartable-init-containers",
        make_pod(
            [ctr("c", {"cpu": "1"})],
            [
                ctr("i1", {"cpu": "5"}),
                ctr("s1", {"cpu": "1"}, sidecar=True),
                ctr("s2", {"cpu": "2"}, sidecar=True),
                ctr("s3", {"cpu": "3"}, sidecar=True),
            ],
        ),
        {"cpu": 7000},
        (7000, 4 * DEFAULT_MEM),
    ),
    RequestCase(
        "multiple-restartable-and-regular-init-containers",
        make_pod(
            [ctr("c", {"cpu": "1"})],
            [
                ctr("i1", {"cpu": "5"}),
                ctr("s1", {"cpu": "1"}, sidecar=True),
                ctr("s2", {"cpu": "2"}, sidecar=True),
                ctr("i2", {"cpu": "5"}),
                ctr("s3", {"cpu": "3"}, sidecar=True),
            ],
        ),
        {"cpu": 8000},
        (8000, 4 * DEFAULT_MEM),
    ),
    RequestCase(
        "restartable-init-init-and-regular",
        make_pod(
            [ctr("c", {"cpu": "100"})],
            [ctr("s", {"cpu": "10"}, sidecar=True), ctr("i", {"cpu": "200"})],
        ),
        {"cpu": 210000},
        (210000, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "sidecar-restart-policy-ignored-on-app-container",
        make_pod([ctr("c", {"cpu": "1"}, sidecar=True)], [ctr("i", {"cpu": "3"})]),
        {"cpu": 3000},
        (3000, DEFAULT_MEM),
    ),
    # --- in-place resize (assigned pods use status, as PodInfo.CalculateResource) ---
    RequestCase(
        "resized-infeasible",
        make_pod(
            [ctr("container-1", {"cpu": "4"})],
            node_name="n1",
            status=resize_status(
                infeasible=True, containers=[cstatus("container-1", None, {"cpu": "2"})]
            ),
        ),
        {"cpu": 2000},
        (2000, DEFAULT_MEM),
    ),
    RequestCase(
        "resized-infeasible-and-in-progress",
        make_pod(
            [ctr("container-1", {"cpu": "6"})],
            node_name="n1",
            status=resize_status(
                infeasible=True,
                containers=[cstatus("container-1", {"cpu": "4"}, {"cpu": "2"})],
            ),
        ),
        {"cpu": 4000},
        (4000, DEFAULT_MEM),
    ),
    RequestCase(
        "resized-no-resize-status",
        make_pod(
            [ctr("container-1", {"cpu": "4"})],
            node_name="n1",
            status=resize_status(containers=[cstatus("container-1", None, {"cpu": "2"})]),
        ),
        {"cpu": 4000},
        (4000, DEFAULT_MEM),
    ),
    RequestCase(
        "resized-per-resource-3-way-maximum",
        make_pod(
            [ctr("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
            node_name="n1",
            status=resize_status(
                containers=[
                    cstatus(
                        "container-1",
                        {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                        {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                    )
                ]
            ),
        ),
        {"cpu": 30, "memory": 30_000_000, "ephemeral-storage": 30_000_000_000},
    ),
    RequestCase(
        "resized-restartable-init-container-infeasible",
        make_pod(
            [],
            [ctr("restartable-init-1", {"cpu": "4"}, sidecar=True)],
            node_name="n1",
            status=resize_status(
                infeasible=True, init=[cstatus("restartable-init-1", None, {"cpu": "2"})]
            ),
        ),
        {"cpu": 2000},
        (2000, DEFAULT_MEM),
    ),
    RequestCase(
        "aggregate-is-max-of-sums-not-sum-of-maxes",
        make_pod(
            [ctr("c1", {"cpu": "1"}), ctr("c2", {"cpu": "2"})],
            node_name="n1",
            status=resize_status(
                containers=[cstatus("c1", {"cpu": "2"}), cstatus("c2", {"cpu": "1"})]
            ),
        ),
        {"cpu": 3000},
        (3000, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "unassigned-pod-ignores-resize-status",
        make_pod(
            [ctr("container-1", {"cpu": "4"})],
            status=resize_status(
                infeasible=True, containers=[cstatus("container-1", None, {"cpu": "2"})]
            ),
        ),
        {"cpu": 4000},
        (4000, DEFAULT_MEM),
    ),
    # --- pod-level resources (scheduler TestPodInfoCalculateResources) ---
    RequestCase(
        "pod-level-requests-with-init-container",
        make_pod(
            [ctr("c", {"cpu": "500m", "memory": "500Mi"})],
            [ctr("i", {"cpu": "500m", "memory": "500Mi"})],
            pod_requests={"cpu": "1200m", "memory": "1200Mi"},
        ),
        {"cpu": 1200, "memory": 1200 * Mi},
    ),
    RequestCase(
        "pod-level-requests-with-sidecar",
        make_pod(
            [ctr("c", {"cpu": "500m", "memory": "500Mi"})],
            [ctr("s", {"cpu": "500m", "memory": "500Mi"}, sidecar=True)],
            pod_requests={"cpu": "1200m", "memory": "1200Mi"},
        ),
        {"cpu": 1200, "memory": 1200 * Mi},
    ),
    RequestCase(
        "pod-level-memory-only",
        make_pod([ctr("c")], [ctr("i")], pod_requests={"memory": "1200Mi"}),
        {"memory": 1200 * Mi},
        (DEFAULT_CPU, 1200 * Mi),
    ),
    RequestCase(
        "pod-level-cpu-only",
        make_pod([ctr("c")], [ctr("i")], pod_requests={"cpu": "500m"}),
        {"cpu": 500},
        (500, DEFAULT_MEM),
    ),
    RequestCase(
        "pod-level-cpu-and-container-ephemeral-storage",
        make_pod(
            [ctr("c", {"ephemeral-storage": "800Mi"})],
            [ctr("i", {"ephemeral-storage": "500Mi"})],
            pod_requests={"cpu": "500m"},
        ),
        {"cpu": 500, "ephemeral-storage": 800 * Mi},
        (500, DEFAULT_MEM),
    ),
    RequestCase(
        "pod-level-with-overhead",
        make_pod([ctr("c")], pod_requests={"cpu": "1"}, overhead={"cpu": "250m"}),
        {"cpu": 1250},
        (1250, DEFAULT_MEM),
    ),
    RequestCase(
        "pod-level-hugepages-override",
        make_pod(
            [ctr("c", {"cpu": "1", "hugepages-2Mi": "2Mi"})],
            pod_requests={"hugepages-2Mi": "8Mi"},
        ),
        {"cpu": 1000, "hugepages-2Mi": 8 * Mi},
        (1000, DEFAULT_MEM),
    ),
    RequestCase(
        "pod-level-unsupported-resource-only-is-ignored",
        make_pod([ctr("c", {"cpu": "1"})], pod_requests={"ephemeral-storage": "1Gi"}),
        {"cpu": 1000},
        (1000, DEFAULT_MEM),
    ),
    # --- non-zero defaults ---
    RequestCase("requestless-container", make_pod([ctr()]), {}, (DEFAULT_CPU, DEFAULT_MEM)),
    RequestCase("no-containers", make_pod([]), {}, (0, 0)),
    RequestCase(
        "one-requestless-of-two",
        make_pod([ctr("a", {"cpu": "500m", "memory": "1Gi"}), ctr("b")]),
        {"cpu": 500, "memory": 1024 * Mi},
        (500 + DEFAULT_CPU, 1024 * Mi + DEFAULT_MEM),
    ),
    RequestCase(
        "explicit-zero-is-not-defaulted",
        make_pod([ctr("a", {"cpu": "0", "memory": "0"})]),
        {},
        (0, 0),
    ),
    RequestCase(
        "requestless-sidecar-and-app",
        make_pod([ctr("c")], [ctr("s", sidecar=True)]),
        {},
        (2 * DEFAULT_CPU, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "requestless-init-containers-take-the-max",
        make_pod([ctr("c")], [ctr("i1"), ctr("i2")]),
        {},
        (DEFAULT_CPU, DEFAULT_MEM),
    ),
    # --- units, exactness and names ---
    RequestCase(
        "sums-are-exact-before-rounding",
        make_pod([ctr("a", {"cpu": "0.5m"}), ctr("b", {"cpu": "0.5m"})]),
        {"cpu": 1},
        (1, 2 * DEFAULT_MEM),
    ),
    RequestCase(
        "sub-milli-rounds-up",
        make_pod([ctr("a", {"cpu": "1n", "memory": "0.1"})]),
        {"cpu": 1, "memory": 1},
    ),
    RequestCase(
        "extended-hugepages-and-ignored-names",
        make_pod(
            [
                ctr(
                    "a",
                    {
                        "cpu": "1",
                        "nvidia.com/gpu": "2",
                        "hugepages-1Gi": "2Gi",
                        "attachable-volumes-csi": "1",
                        "pods": "3",
                        "storage": "1Gi",
                    },
                )
            ]
        ),
        {
            "cpu": 1000,
            "nvidia.com/gpu": 2,
            "hugepages-1Gi": 2 * 1024 * Mi,
            "attachable-volumes-csi": 1,
        },
        (1000, DEFAULT_MEM),
    ),
    RequestCase(
        "json-number-and-null-quantities",
        make_pod([ctr("a", {"cpu": 2, "memory": None})]),
        {"cpu": 2000},
        (2000, 0),
    ),
]


@pytest.mark.parametrize("case", REQUEST_CASES, ids=[c.name for c in REQUEST_CASES])
def test_effective_requests(case: RequestCase) -> None:
    pod = Pod.from_dict(case.pod)
    assert pod.requests == case.requests
    if case.non_zero is None:
        expected = (case.requests.get("cpu", 0), case.requests.get("memory", 0))
    else:
        expected = case.non_zero
    assert (pod.non_zero_cpu, pod.non_zero_memory) == expected


def test_parses_from_orjson_bytes() -> None:
    raw = orjson.dumps(make_pod([ctr("a", {"cpu": "250m", "memory": "64Mi"})]))
    pod = Pod.from_dict(orjson.loads(raw))
    assert pod.requests == {"cpu": 250, "memory": 64 * Mi}


FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "shop",
        "uid": "6f1c0d2e",
        "resourceVersion": "4711",
        "labels": {"app": "web", "app.kubernetes.io/name": "web"},
        "annotations": {"note": "x"},
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "deletionTimestamp": "2025-01-02T00:00:00Z",
    },
    "spec": {
        "schedulerName": "ksched",
        "nodeName": "node-7",
        "priority": 1000,
        "preemptionPolicy": "Never",
        "nodeSelector": {"disk": "ssd"},
        "affinity": {"nodeAffinity": {}},
        "tolerations": [
            {"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"},
            {"key": "k2", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            {"operator": "Exists"},
            {"key": "k3", "value": "v3"},
        ],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
        "schedulingGates": [{"name": "gate-a"}, {"name": "gate-b"}],
        "initContainers": [
            {"name": "setup", "image": "busybox", "ports": [{"hostPort": 1}]},
            {
                "name": "proxy",
                "image": "envoy",
                "restartPolicy": "Always",
                "ports": [{"containerPort": 9901, "hostPort": 9901, "protocol": "UDP"}],
            },
        ],
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.25",
                "ports": [
                    {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"},
                    {"containerPort": 81},
                    {"containerPort": 82, "hostPort": 0},
                ],
            }
        ],
    },
    "status": {"phase": "Succeeded", "nominatedNodeName": "node-9"},
}


def test_scheduling_fields() -> None:
    pod = Pod.from_dict(FULL_POD)
    assert (pod.uid, pod.namespace, pod.name, pod.key) == (
        "6f1c0d2e",
        "shop",
        "web-1",
        "shop/web-1",
    )
    assert pod.resource_version == "4711"
    assert pod.labels == {"app": "web", "app.kubernetes.io/name": "web"}
    assert pod.annotations == {"note": "x"}
    assert pod.scheduler_name == "ksched"
    assert pod.node_name == "node-7" and pod.is_assigned
    assert pod.nominated_node_name == "node-9"
    assert pod.priority == 1000
    assert pod.preemption_policy == "Never"
    assert pod.phase == "Succeeded" and pod.is_terminal
    assert pod.creation_timestamp == "2025-01-01T00:00:00Z"
    assert pod.deletion_timestamp == "2025-01-02T00:00:00Z"
    assert pod.node_selector == {"disk": "ssd"}
    assert pod.affinity == {"nodeAffinity": {}}
    assert pod.tolerations == [
        Toleration("k1", "Equal", "v1", "NoSchedule", None),
        Toleration("k2", "Exists", "", "NoExecute", 30),
        Toleration("", "Exists", "", "", None),
        Toleration("k3", "Equal", "v3", "", None),
    ]
    # sidecar ports first, then app containers; non-restartable init ports are ignored
    assert pod.host_ports == [("UDP", "0.0.0.0", 9901), ("TCP", "10.0.0.1", 8080)]
    assert pod.topology_spread_constraints == [{"maxSkew": 1, "topologyKey": "zone"}]
    assert pod.scheduling_gates == ["gate-a", "gate-b"]
    assert pod.images == ["busybox", "envoy", "nginx:1.25"]
    assert pod.raw is FULL_POD
    assert "shop/web-1" in repr(pod)


def test_defaults_for_a_minimal_pod() -> None:
    pod = Pod.from_dict({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert pod.namespace == "" and pod.key == "/p"
    assert pod.scheduler_name == "default-scheduler"
    assert pod.preemption_policy == "PreemptLowerPriority"
    assert pod.priority == 0
    assert pod.node_name == "" and not pod.is_assigned
    assert pod.nominated_node_name == ""
    assert pod.phase == "" and not pod.is_terminal
    assert pod.creation_timestamp is None and pod.deletion_timestamp is None
    assert pod.labels == {} and pod.annotations == {} and pod.node_selector == {}
    assert pod.affinity is None
    assert pod.tolerations == [] and pod.host_ports == [] and pod.scheduling_gates == []
    assert pod.topology_spread_constraints == []
    assert pod.images == [""]


@pytest.mark.parametrize(("phase", "terminal"), [("Failed", True), ("Running", False)])
def test_is_terminal(phase: str, terminal: bool) -> None:
    obj = make_pod(status={"phase": phase})
    assert Pod.from_dict(obj).is_terminal is terminal


def test_null_fields_take_defaults() -> None:
    obj = make_pod()
    obj["spec"].update(
        {
            "schedulerName": None,
            "priority": None,
            "nodeSelector": None,
            "tolerations": None,
            "affinity": None,
            "initContainers": None,
        }
    )
    obj["metadata"]["labels"] = None
    pod = Pod.from_dict(obj)
    assert pod.scheduler_name == "default-scheduler" and pod.priority == 0
    assert pod.labels == {} and pod.tolerations == [] and pod.affinity is None


# (case id, JSON path to set, value, expected field in the error)
MALFORMED_CASES = [
    ("metadata-not-object", ("metadata",), [], "metadata"),
    ("name-not-string", ("metadata", "name"), 7, "metadata.name"),
    ("label-value-not-string", ("metadata", "labels"), {"a": 1}, "metadata.labels.a"),
    (
        "label-key-with-dots",
        ("metadata", "labels"),
        {"app.kubernetes.io/name": True},
        "metadata.labels[app.kubernetes.io/name]",
    ),
    ("creation-timestamp", ("metadata", "creationTimestamp"), 5, "metadata.creationTimestamp"),
    ("spec-not-object", ("spec",), "x", "spec"),
    ("containers-not-array", ("spec", "containers"), {"a": 1}, "spec.containers"),
    ("container-not-object", ("spec", "containers"), [ctr(), 3], "spec.containers[1]"),
    (
        "container-image",
        ("spec", "containers"),
        [{"name": "c", "image": ["x"]}],
        "spec.containers[0].image",
    ),
    (
        "bad-cpu-quantity",
        ("spec", "containers"),
        [ctr("c", {"cpu": "12x"})],
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "bad-extended-quantity",
        ("spec", "containers"),
        [ctr("c", {"nvidia.com/gpu": "1K"})],
        "spec.containers[0].resources.requests[nvidia.com/gpu]",
    ),
    (
        "quantity-is-boolean",
        ("spec", "containers"),
        [ctr("c", {"memory": True})],
        "spec.containers[0].resources.requests.memory",
    ),
    (
        "requests-not-object",
        ("spec", "containers"),
        [{"name": "c", "resources": {"requests": "1"}}],
        "spec.containers[0].resources.requests",
    ),
    (
        "resources-not-object",
        ("spec", "containers"),
        [{"name": "c", "resources": []}],
        "spec.containers[0].resources",
    ),
    (
        "host-port-string",
        ("spec", "containers"),
        [ctr("c", ports=[{"containerPort": 80, "hostPort": "80"}])],
        "spec.containers[0].ports[0].hostPort",
    ),
    (
        "ports-not-array",
        ("spec", "containers"),
        [ctr("c", ports={"a": 1})],  # type: ignore[arg-type]
        "spec.containers[0].ports",
    ),
    (
        "host-ip-not-string",
        ("spec", "containers"),
        [ctr("c", ports=[{"hostPort": 80, "hostIP": 1}])],
        "spec.containers[0].ports[0].hostIP",
    ),
    (
        "init-restart-policy",
        ("spec", "initContainers"),
        [{"name": "i", "restartPolicy": 1}],
        "spec.initContainers[0].restartPolicy",
    ),
    (
        "init-bad-quantity",
        ("spec", "initContainers"),
        [ctr("i", {"cpu": "1..2"})],
        "spec.initContainers[0].resources.requests.cpu",
    ),
    (
        "host-port-beyond-int64",
        ("spec", "containers"),
        [ctr("c", ports=[{"containerPort": 80, "hostPort": 2**63}])],
        "spec.containers[0].ports[0].hostPort",
    ),
    (
        "host-port-beyond-int32",
        ("spec", "containers"),
        [ctr("c", ports=[{"hostPort": 2**31}])],
        "spec.containers[0].ports[0].hostPort",
    ),
    ("priority-beyond-int32", ("spec", "priority"), 2**31, "spec.priority"),
    ("priority-below-int32", ("spec", "priority"), -(2**31) - 1, "spec.priority"),
    (
        "toleration-seconds-beyond-int64",
        ("spec", "tolerations"),
        [{"key": "a", "operator": "Exists", "tolerationSeconds": 2**63}],
        "spec.tolerations[0].tolerationSeconds",
    ),
    ("priority-string", ("spec", "priority"), "high", "spec.priority"),
    ("priority-boolean", ("spec", "priority"), True, "spec.priority"),
    ("node-name", ("spec", "nodeName"), 1, "spec.nodeName"),
    ("node-selector-value", ("spec", "nodeSelector"), {"disk": None}, "spec.nodeSelector.disk"),
    ("affinity-not-object", ("spec", "affinity"), [], "spec.affinity"),
    ("tolerations-not-array", ("spec", "tolerations"), {}, "spec.tolerations"),
    ("toleration-not-object", ("spec", "tolerations"), ["x"], "spec.tolerations[0]"),
    (
        "toleration-seconds-string",
        ("spec", "tolerations"),
        [{"key": "a"}, {"key": "b", "tolerationSeconds": "300"}],
        "spec.tolerations[1].tolerationSeconds",
    ),
    (
        "toleration-key",
        ("spec", "tolerations"),
        [{"key": 1}],
        "spec.tolerations[0].key",
    ),
    (
        "spread-constraint-not-object",
        ("spec", "topologySpreadConstraints"),
        [1],
        "spec.topologySpreadConstraints[0]",
    ),
    (
        "scheduling-gate-name",
        ("spec", "schedulingGates"),
        [{"name": 1}],
        "spec.schedulingGates[0].name",
    ),
    ("overhead-quantity", ("spec", "overhead"), {"cpu": "x"}, "spec.overhead.cpu"),
    ("pod-resources-not-object", ("spec", "resources"), 1, "spec.resources"),
    (
        "pod-level-quantity",
        ("spec", "resources"),
        {"requests": {"memory": "1Z"}},
        "spec.resources.requests.memory",
    ),
    ("status-not-object", ("status",), 1, "status"),
    ("phase-not-string", ("status", "phase"), 1, "status.phase"),
]


def set_path(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [c[1:] for c in MALFORMED_CASES],
    ids=[c[0] for c in MALFORMED_CASES],
)
def test_malformed_pod_names_the_field(path: tuple[str, ...], value: Any, field: str) -> None:
    obj = make_pod([ctr("c", {"cpu": "1"})])
    set_path(obj, path, value)
    with pytest.raises(InvalidObjectError) as info:
        Pod.from_dict(obj)
    err = info.value
    assert err.kind == "Pod"
    assert err.field == field
    if path[0] != "metadata":
        assert err.name == "default/web-1"
    assert str(err).startswith(f"Pod {err.name}: {field}: ")


def test_out_of_range_integer_message() -> None:
    obj = make_pod([ctr("c", ports=[{"hostPort": 2**63}])])
    with pytest.raises(InvalidObjectError) as info:
        Pod.from_dict(obj)
    assert str(info.value) == (
        "Pod default/web-1: spec.containers[0].ports[0].hostPort: 9223372036854775808 is out "
        "of range for int32"
    )


def test_integers_at_the_edges_of_their_range_are_kept() -> None:
    obj = make_pod([ctr("c", ports=[{"hostPort": 2**31 - 1}])])
    obj["spec"]["priority"] = -(2**31)
    obj["spec"]["tolerations"] = [{"key": "a", "tolerationSeconds": 2**63 - 1}]
    pod = Pod.from_dict(obj)
    assert pod.priority == -(2**31)
    assert pod.host_ports == [("TCP", "0.0.0.0", 2**31 - 1)]
    assert pod.tolerations[0].toleration_seconds == 2**63 - 1


def test_quantity_error_message_matches_upstream_wording() -> None:
    obj = make_pod([ctr("c", {"cpu": "12x"})])
    with pytest.raises(InvalidObjectError) as info:
        Pod.from_dict(obj)
    assert str(info.value) == (
        "Pod default/web-1: spec.containers[0].resources.requests.cpu: quantities must "
        "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' "
        '(got "12x")'
    )


def test_malformed_status_of_assigned_pod() -> None:
    obj = make_pod(
        [ctr("c", {"cpu": "1"})],
        node_name="n1",
        status=resize_status(containers=[cstatus("c", {"cpu": "bad"})]),
    )
    with pytest.raises(InvalidObjectError) as info:
        Pod.from_dict(obj)
    assert info.value.field == "status.containerStatuses[0].allocatedResources.cpu"


@pytest.mark.parametrize(
    ("obj", "name"),
    [([], "<unknown>"), ({"metadata": 5}, "<unknown>"), ({"metadata": {"name": 1}}, "/<unknown>")],
    ids=["not-an-object", "metadata-not-object", "name-not-string"],
)
def test_unnamed_objects_still_get_an_error(obj: Any, name: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        Pod.from_dict(obj)
    assert info.value.name == name


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*prefix, i)))
    return out


FUZZ_BASE = copy.deepcopy(FULL_POD)
FUZZ_BASE["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
FUZZ_BASE["spec"]["overhead"] = {"cpu": "10m"}
FUZZ_BASE["spec"]["resources"] = {"requests": {"cpu": "2"}}
FUZZ_BASE["status"]["containerStatuses"] = [cstatus("app", {"cpu": "1"}, {"cpu": "1"})]
FUZZ_BASE["status"]["conditions"] = [{"type": "PodResizePending", "reason": "Deferred"}]
FUZZ_PATHS = [p for p in _paths(FUZZ_BASE) if p]


@given(path=st.sampled_from(FUZZ_PATHS), value=json_values)
def test_any_corruption_gives_a_pod_or_invalid_object_error(
    path: tuple[Any, ...], value: Any
) -> None:
    obj = copy.deepcopy(FUZZ_BASE)
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        Pod.from_dict(obj)
    except InvalidObjectError as err:
        assert err.kind == "Pod"


# ---- reusing a sibling's spec-derived fields (Pod.from_dict(like=...)) -------------------


def _pending_full_pod() -> dict[str, Any]:
    obj = copy.deepcopy(FULL_POD)
    del obj["spec"]["nodeName"]
    obj["status"] = {"phase": "Pending"}
    return obj


def _sibling(template: dict[str, Any], shared: bool = True) -> dict[str, Any]:
    """Another pod of ``template``: new metadata and status; the spec's values the very
    same objects (as the informer's sharing leaves them) or equal copies."""
    spec = dict(template["spec"]) if shared else copy.deepcopy(template["spec"])
    return {
        **template,
        "metadata": {**template["metadata"], "name": "web-2", "uid": "u-2", "labels": {"b": "c"}},
        "spec": spec,
        "status": {"phase": "Pending", "nominatedNodeName": "node-3"},
    }


def _fields(pod: Pod) -> dict[str, Any]:
    return {f: getattr(pod, f) for f in Pod.__slots__ if f != "raw"}


def _with_spec(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], **changes}}


#: (name, template, new object, whether the template's spec-derived values are reused)
LIKE_CASES = [
    ("shared-spec-reuses", _pending_full_pod(), None, True),
    ("equal-copies-parse-in-full", _pending_full_pod(), "copies", False),
    (
        "one-value-differs",
        _pending_full_pod(),
        lambda s: _with_spec(s, priority=5),
        False,
    ),
    (
        "an-extra-key",
        _pending_full_pod(),
        lambda s: _with_spec(s, hostNetwork=True),
        False,
    ),
    ("bound-template", FULL_POD, None, False),
    (
        "bound-new-pod",
        _pending_full_pod(),
        lambda s: _with_spec(s, nodeName="node-7"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("template", "make", "reused"),
    [pytest.param(t, m, r, id=name) for name, t, m, r in LIKE_CASES],
)
def test_a_sibling_parses_as_in_full(template: dict[str, Any], make: Any, reused: bool) -> None:
    like = Pod.from_dict(template)
    if make is None:
        obj = _sibling(template)
    elif make == "copies":
        obj = _sibling(template, shared=False)
    else:
        obj = make(_sibling(template))
    got = Pod.from_dict(obj, like=like)
    assert _fields(got) == _fields(Pod.from_dict(obj))
    assert got.raw is obj
    assert (got.tolerations is like.tolerations) is reused
    assert (got.uid, got.name, got.labels, got.nominated_node_name) == (
        "u-2",
        "web-2",
        {"b": "c"},
        "node-3",
    )


def test_a_sibling_with_malformed_metadata_names_the_field() -> None:
    template = _pending_full_pod()
    like = Pod.from_dict(template)
    obj = _sibling(template)
    obj["metadata"]["labels"] = {"a": 1}
    with pytest.raises(InvalidObjectError) as exc:
        Pod.from_dict(obj, like=like)
    with pytest.raises(InvalidObjectError) as full:
        Pod.from_dict(obj)
    assert exc.value.field == "metadata.labels.a"
    assert str(exc.value) == str(full.value)
