"""Every kind the scheduler reads is recorded, replayed and readable by the read-only
identity: one object per kind of :data:`ksched.cluster.KIND_PATHS` goes through
``record`` and ``load_recording`` unchanged, a pod keeps what the volume,
DynamicResources and pod group plugins read, and deploy/rbac-readonly.yaml grants list
and watch on each of those kinds (and nothing that writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.api.pod import Pod
from ksched.cluster import KIND_PATHS, resource_of
from ksched.readonly import ReadOnlyClusterAPI
from ksched.recording import RECORDED_KINDS, record, strip_pod
from ksched.sim import InMemoryCluster
from ksched.sim.recorded import load_recording
from ksched.testing import (
    device_class,
    node,
    persistent_volume,
    persistent_volume_claim,
    pod,
    pod_group,
    resource_claim,
    resource_slice,
    storage_class,
)

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]


def _obj(api_version: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


#: One object of every recorded kind.
SAMPLES: dict[str, Obj] = {
    "pods": pod("p", claims=["data"], resource_claims=["gpu"], pod_group="g"),
    "nodes": node("n1"),
    "namespaces": _obj("v1", "Namespace", "default"),
    "services": _obj("v1", "Service", "web", "default", spec={"selector": {"app": "web"}}),
    "replicationcontrollers": _obj(
        "v1", "ReplicationController", "rc", "default", spec={"selector": {"app": "rc"}}
    ),
    "replicasets": _obj(
        "apps/v1", "ReplicaSet", "rs", "default", spec={"selector": {"matchLabels": {"a": "b"}}}
    ),
    "statefulsets": _obj(
        "apps/v1", "StatefulSet", "ss", "default", spec={"selector": {"matchLabels": {"a": "c"}}}
    ),
    "poddisruptionbudgets": _obj(
        "policy/v1", "PodDisruptionBudget", "pdb", "default", spec={"maxUnavailable": 1}
    ),
    "persistentvolumes": persistent_volume("pv1", storage_class="local", node="n1"),
    "persistentvolumeclaims": persistent_volume_claim("data", storage_class="local"),
    "storageclasses": storage_class("local"),
    "csinodes": _obj(
        "storage.k8s.io/v1",
        "CSINode",
        "n1",
        spec={
            "drivers": [{"name": "ebs.csi.aws.com", "nodeID": "n1", "allocatable": {"count": 3}}]
        },
    ),
    "csidrivers": _obj("storage.k8s.io/v1", "CSIDriver", "ebs.csi.aws.com", spec={}),
    "csistoragecapacities": _obj(
        "storage.k8s.io/v1",
        "CSIStorageCapacity",
        "cap",
        "default",
        storageClassName="local",
        capacity="100Gi",
    ),
    "volumeattachments": _obj(
        "storage.k8s.io/v1",
        "VolumeAttachment",
        "va",
        spec={"attacher": "ebs.csi.aws.com", "nodeName": "n1", "source": {}},
    ),
    "resourceslices": resource_slice("n1", driver="gpu.example.com", devices=2),
    "deviceclasses": device_class("gpu", driver="gpu.example.com"),
    "resourceclaims": resource_claim("gpu", device_class="gpu"),
    "podgroups": pod_group("g", min_count=2),
    "podgroups.scheduling.x-k8s.io": _obj(
        "scheduling.x-k8s.io/v1alpha1", "PodGroup", "cg", "default", spec={"minMember": 2}
    ),
    "elasticquotas.scheduling.x-k8s.io": _obj(
        "scheduling.x-k8s.io/v1alpha1",
        "ElasticQuota",
        "eq",
        "default",
        spec={"min": {"cpu": "1"}, "max": {"cpu": "2"}},
    ),
    "priorityclasses": _obj("scheduling.k8s.io/v1", "PriorityClass", "high", value=1000),
}


def test_the_samples_cover_every_kind_the_scheduler_reads() -> None:
    assert set(SAMPLES) == set(RECORDED_KINDS) == set(KIND_PATHS)


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


@pytest.mark.parametrize("kind", sorted(SAMPLES))
async def test_each_kind_is_recorded_and_loaded_back(kind: str) -> None:
    source = InMemoryCluster()
    source.create(kind, SAMPLES[kind])  # type: ignore[arg-type]
    rec = await record(ReadOnlyClusterAPI(source, mode="test"))
    assert kind not in rec.skipped
    (saved,) = rec.of(kind)
    replayed = load_recording(rec).get(kind, _key(SAMPLES[kind]))  # type: ignore[arg-type]
    assert replayed is not None
    for part in ("spec", "status"):
        if kind != "pods" and part in SAMPLES[kind]:
            assert saved[part] == SAMPLES[kind][part] == replayed[part]


FULL_STORAGE_POD: Obj = pod(
    "storage",
    claims=["data"],
    resource_claims=["gpu"],
    pod_group="gang",
    spec={
        "volumes": [
            {
                "name": "scratch",
                "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "fast"}}},
            },
            {
                "name": "inline",
                "csi": {"driver": "ebs.csi.aws.com", "volumeAttributes": {"a": "b"}},
            },
            {"name": "gce", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}},
            {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}},
            {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "uri"}},
            {"name": "rbd", "rbd": {"monitors": ["m1"], "image": "img", "pool": "p"}},
            {"name": "iscsi", "iscsi": {"iqn": "iqn.x", "targetPortal": "t", "lun": 0}},
            {"name": "model", "image": {"reference": "registry/model:1"}},
            {"name": "conf", "configMap": {"name": "secret-ish"}},
        ],
    },
)
FULL_STORAGE_POD["status"] = {
    "phase": "Pending",
    "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "gpu"}],
}


def test_a_pod_keeps_what_the_volume_dra_and_pod_group_plugins_read() -> None:
    got = strip_pod(FULL_STORAGE_POD)
    want_volumes = {
        v["name"]: v for v in FULL_STORAGE_POD["spec"]["volumes"] if v["name"] != "conf"
    }
    assert {v["name"]: v for v in got["spec"]["volumes"] if v["name"] != "conf"} == want_volumes
    assert [v for v in got["spec"]["volumes"] if v["name"] == "conf"] == [
        {"name": "conf", "configMap": {}}
    ]
    for field in ("resourceClaims", "schedulingGroup"):
        assert got["spec"][field] == FULL_STORAGE_POD["spec"][field]
    assert got["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert (
        got["status"]["resourceClaimStatuses"]
        == FULL_STORAGE_POD["status"]["resourceClaimStatuses"]
    )
    a, b = Pod.from_dict(FULL_STORAGE_POD), Pod.from_dict(got)
    for field in ("scheduling_group", "images", "requests"):
        assert getattr(a, field) == getattr(b, field), field


def _rbac_rules() -> list[Obj]:
    docs = yaml.safe_load_all((ROOT / "deploy" / "rbac-readonly.yaml").read_text())
    (role,) = [d for d in docs if d and d.get("kind") == "ClusterRole"]
    rules: list[Obj] = role["rules"]
    return rules


def _group(kind: str) -> str:
    prefix = KIND_PATHS[kind][0]
    return "" if prefix.startswith("/api/") else prefix.split("/")[2]


@pytest.mark.parametrize("kind", sorted(RECORDED_KINDS))
def test_the_read_only_role_lists_and_watches_every_recorded_kind(kind: str) -> None:
    verbs = {
        v
        for rule in _rbac_rules()
        if _group(kind) in rule["apiGroups"] and resource_of(kind) in rule["resources"]
        for v in rule["verbs"]
    }
    assert verbs == {"list", "watch"}, (kind, verbs)


def test_the_read_only_role_writes_nothing_but_reviews() -> None:
    writes = {
        (g, r)
        for rule in _rbac_rules()
        if set(rule["verbs"]) - {"list", "watch", "get"}
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert writes == {
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    }
