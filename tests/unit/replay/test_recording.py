"""Recordings: what is kept of a pod, what is never read, the file round trip, and the
arrivals followed during the window (on the embedded cluster)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.readonly import ReadOnlyClusterAPI
from ksched.recording import RECORDED_KINDS, Arrival, Recording, RecordingError, record, strip_pod
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "shop",
        "uid": "u1",
        "labels": {"app": "web"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...env...}"},
        "ownerReferences": [
            {"kind": "ReplicaSet", "name": "web-abc", "uid": "rs1", "controller": True}
        ],
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {
        "schedulerName": "default-scheduler",
        "priority": 5,
        "serviceAccountName": "web",
        "containers": [
            {
                "name": "c",
                "image": "nginx:1",
                "command": ["nginx", "-g", "daemon off;"],
                "env": [{"name": "PASSWORD", "value": "hunter2"}],
                "envFrom": [{"secretRef": {"name": "db"}}],
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                "ports": [{"containerPort": 80, "hostPort": 8080, "name": "http"}],
                "livenessProbe": {"httpGet": {"path": "/", "port": 80}},
                "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds"}],
            }
        ],
        "volumes": [
            {
                "name": "creds",
                "secret": {"secretName": "db", "items": [{"key": "pw", "path": "pw"}]},
            },
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
        ],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "podIP": "10.0.0.1",
        "containerStatuses": [
            {"name": "c", "image": "nginx:1", "allocatedResources": {"cpu": "250m"}, "ready": False}
        ],
    },
}


def test_pods_keep_what_scheduling_uses_and_nothing_else() -> None:
    got = strip_pod(FULL_POD)
    c = got["spec"]["containers"][0]
    assert c == {
        "name": "c",
        "image": "nginx:1",
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
        "ports": [{"containerPort": 80, "hostPort": 8080}],
    }
    assert got["spec"]["volumes"] == [
        {"name": "creds", "secret": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
    ]
    assert "annotations" not in got["metadata"] and "managedFields" not in got["metadata"]
    assert got["metadata"]["ownerReferences"] == FULL_POD["metadata"]["ownerReferences"]
    assert "serviceAccountName" not in got["spec"]
    assert got["status"] == {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "250m"}}],
    }
    assert "hunter2" not in str(got) and "secretRef" not in str(got)
    # The scheduler's view of the pod is the same.
    a, b = Pod.from_dict(FULL_POD), Pod.from_dict(got)
    for field in ("requests", "non_zero_cpu", "host_ports", "tolerations", "priority", "images",
                  "topology_spread_constraints", "nominated_node_name", "labels"):  # fmt: skip
        assert getattr(a, field) == getattr(b, field), field


def test_no_secrets_or_configmaps_among_the_kinds() -> None:
    assert "secrets" not in RECORDED_KINDS and "configmaps" not in RECORDED_KINDS
    assert {"nodes", "pods", "namespaces", "poddisruptionbudgets", "priorityclasses"} <= set(
        RECORDED_KINDS
    )


@pytest.mark.parametrize("name", ["cluster.json.zst", "cluster.json"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    rec = Recording(
        objects={"nodes": [make_node("n0")], "pods": [strip_pod(FULL_POD)]},
        arrivals=[Arrival(1.5, "ADDED", "pods", strip_pod(FULL_POD))],
        source="here",
        duration=2.0,
        skipped={"resourceslices": "404 NotFound"},
    )
    rec.save(tmp_path / name)
    raw = (tmp_path / name).read_bytes()
    assert raw[:4] == b"\x28\xb5\x2f\xfd" if name.endswith(".zst") else raw.startswith(b"{")
    back = Recording.load(tmp_path / name)
    assert back.as_dict() == rec.as_dict()


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        ("not-json", b"{nope", "not JSON"),
        ("wrong-kind", b'{"kind": "Pod"}', "not a ksched ClusterRecording"),
        ("wrong-version", b'{"kind": "ClusterRecording", "apiVersion": "v9"}', "apiVersion 'v9'"),
        (
            "bad-object",
            b'{"kind": "ClusterRecording", "apiVersion": "ksched.io/v1alpha1", '
            b'"objects": {"nodes": [{}]}}',
            "objects.nodes[0] has no metadata.name",
        ),
        (
            "bad-arrival",
            b'{"kind": "ClusterRecording", "apiVersion": "ksched.io/v1alpha1", "objects": {}, '
            b'"arrivals": [{"t": "soon"}]}',
            "arrivals[0]",
        ),
        ("bad-zstd", b"\x28\xb5\x2f\xfdgarbage", "not a valid zstd file"),
    ],
)
def test_bad_files_are_named(tmp_path: Path, name: str, content: bytes, error: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=error.replace("[", r"\[")) as info:
        Recording.load(path)
    assert str(path) in str(info.value)


async def test_record_lists_strips_and_follows_arrivals() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0"))
    c.create("pods", {**make_pod("bound", namespace="x", node_name="n0")})
    c.create("pods", FULL_POD)
    api = ReadOnlyClusterAPI(c, mode="test")
    task = asyncio.get_running_loop().create_task(record(api, duration=0.3))
    await asyncio.sleep(0.1)
    c.create("pods", make_pod("late", namespace="x"))
    c.create("nodes", make_node("n1"))
    c.delete("pods", "x/bound")
    rec = await task
    assert {p["metadata"]["name"] for p in rec.of("pods")} == {"bound", "web-1"}
    assert [p["metadata"]["name"] for p in rec.pending_pods] == ["web-1"]
    assert "hunter2" not in str(rec.as_dict())
    # In order per kind (across kinds, by the time each watch delivered them).
    assert [(a.type, a.object["metadata"]["name"]) for a in rec.arrivals if a.kind == "pods"] == [
        ("ADDED", "late"),
        ("DELETED", "bound"),
    ]
    assert [(a.type, a.object["metadata"]["name"]) for a in rec.arrivals if a.kind == "nodes"] == [
        ("ADDED", "n1")
    ]
    assert all(0 < a.t < 0.3 for a in rec.arrivals)
    assert sum(api.refused.values()) == 0
