"""Node parsing: allocatable as the scheduler sees it, taints, images, malformed nodes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ksched.api.errors import InvalidObjectError
from ksched.api.node import Node, Taint

Gi = 1024**3

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "node-1",
        "uid": "n-uid",
        "resourceVersion": "99",
        "labels": {"kubernetes.io/hostname": "node-1", "topology.kubernetes.io/zone": "a"},
    },
    "spec": {
        "unschedulable": True,
        "taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/not-ready",
                "effect": "NoExecute",
                "timeAdded": "2025-01-01T00:00:00Z",
            },
        ],
    },
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {
            "cpu": "7910m",
            "memory": "31Gi",
            "ephemeral-storage": "100G",
            "pods": "110",
            "nvidia.com/gpu": "4",
            "hugepages-2Mi": "0",
            "attachable-volumes-aws-ebs": "25",
            "storage": "1Ti",
        },
        "images": [
            {"names": ["registry/app@sha256:abc", "registry/app:1.0"], "sizeBytes": 123456789},
            {"names": None, "sizeBytes": 5},
            {"sizeBytes": 7},
        ],
    },
}


def test_node_fields() -> None:
    node = Node.from_dict(NODE)
    assert (node.name, node.uid, node.resource_version) == ("node-1", "n-uid", "99")
    assert node.labels["topology.kubernetes.io/zone"] == "a"
    assert node.unschedulable is True
    assert node.taints == [
        Taint("dedicated", "gpu", "NoSchedule", None),
        Taint("node.kubernetes.io/not-ready", "", "NoExecute", "2025-01-01T00:00:00Z"),
    ]
    assert node.allocatable == {
        "cpu": 7910,
        "memory": 31 * Gi,
        "ephemeral-storage": 100 * 10**9,
        "pods": 110,
        "nvidia.com/gpu": 4,
        "hugepages-2Mi": 0,  # zero kept: reported-as-zero differs from not reported
        "attachable-volumes-aws-ebs": 25,
    }
    assert node.images == [
        (("registry/app@sha256:abc", "registry/app:1.0"), 123456789),
        ((), 5),
        ((), 7),
    ]
    assert node.raw is NODE
    assert "node-1" in repr(node)


ALLOCATABLE_CASES = [
    ("capacity-when-allocatable-absent", "absent", {"cpu": 8000, "memory": 32 * Gi, "pods": 110}),
    ("capacity-when-allocatable-null", None, {"cpu": 8000, "memory": 32 * Gi, "pods": 110}),
    ("explicit-empty-allocatable-kept", {}, {}),
    ("allocatable-wins", {"cpu": "2"}, {"cpu": 2000}),
]


@pytest.mark.parametrize(
    ("allocatable", "expected"),
    [c[1:] for c in ALLOCATABLE_CASES],
    ids=[c[0] for c in ALLOCATABLE_CASES],
)
def test_allocatable_source(allocatable: Any, expected: dict[str, int]) -> None:
    obj = copy.deepcopy(NODE)
    if allocatable == "absent":
        del obj["status"]["allocatable"]
    else:
        obj["status"]["allocatable"] = allocatable
    assert Node.from_dict(obj).allocatable == expected


def test_minimal_node() -> None:
    node = Node.from_dict({"metadata": {"name": "n"}})
    assert node.name == "n" and node.uid == "" and node.labels == {}
    assert node.taints == [] and node.unschedulable is False
    assert node.allocatable == {} and node.images == []


MALFORMED_CASES = [
    ("metadata-not-object", ("metadata",), 1, "metadata"),
    ("label-value", ("metadata", "labels"), {"zone": 1}, "metadata.labels.zone"),
    ("unschedulable-string", ("spec", "unschedulable"), "yes", "spec.unschedulable"),
    ("taints-not-array", ("spec", "taints"), {}, "spec.taints"),
    ("taint-not-object", ("spec", "taints"), ["x"], "spec.taints[0]"),
    ("taint-effect", ("spec", "taints"), [{"key": "k", "effect": 1}], "spec.taints[0].effect"),
    (
        "taint-time-added",
        ("spec", "taints"),
        [{"key": "k", "timeAdded": 1}],
        "spec.taints[0].timeAdded",
    ),
    ("allocatable-quantity", ("status", "allocatable"), {"cpu": "x"}, "status.allocatable.cpu"),
    (
        "allocatable-extended-quantity",
        ("status", "allocatable"),
        {"example.com/dongle": "1.2.3"},
        "status.allocatable[example.com/dongle]",
    ),
    ("allocatable-not-object", ("status", "allocatable"), [], "status.allocatable"),
    ("images-not-array", ("status", "images"), {}, "status.images"),
    ("image-size-string", ("status", "images"), [{"sizeBytes": "1"}], "status.images[0].sizeBytes"),
    ("image-name-not-string", ("status", "images"), [{"names": [1]}], "status.images[0].names[0]"),
    (
        "image-size-beyond-int64",
        ("status", "images"),
        [{"names": ["a"], "sizeBytes": 2**63}],
        "status.images[0].sizeBytes",
    ),
    (
        "image-size-below-int64",
        ("status", "images"),
        [{"names": ["a"], "sizeBytes": -(2**63) - 1}],
        "status.images[0].sizeBytes",
    ),
    ("status-not-object", ("status",), "x", "status"),
]


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [c[1:] for c in MALFORMED_CASES],
    ids=[c[0] for c in MALFORMED_CASES],
)
def test_malformed_node_names_the_field(path: tuple[str, ...], value: Any, field: str) -> None:
    obj = copy.deepcopy(NODE)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InvalidObjectError) as info:
        Node.from_dict(obj)
    err = info.value
    assert (err.kind, err.field) == ("Node", field)
    if path[0] != "metadata":
        assert err.name == "node-1"
        assert str(err).startswith(f"Node node-1: {field}: ")


def test_capacity_quantity_error_names_capacity() -> None:
    obj = copy.deepcopy(NODE)
    del obj["status"]["allocatable"]
    obj["status"]["capacity"]["memory"] = "1X"
    with pytest.raises(InvalidObjectError) as info:
        Node.from_dict(obj)
    assert info.value.field == "status.capacity.memory"
    assert '(got "1X")' in info.value.message


def test_not_an_object() -> None:
    with pytest.raises(InvalidObjectError) as info:
        Node.from_dict([])  # type: ignore[arg-type]
    assert info.value.name == "<unknown>" and info.value.field == ""
