"""The Go harness runs upstream's scheduling cycle and reports it (hand-written cases)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.upstream import Upstream

Obj = dict[str, Any]

CONFIG: Obj = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 100,
}


def node(name: str, cpu: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10"}},
    }


def pod(name: str, cpu: str, node_name: str = "", **extra: Any) -> Obj:
    spec: Obj = {
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    spec.update(extra)
    out: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }
    if node_name:
        out["status"] = {"phase": "Running"}
    return out


def case(objects: list[Obj], config: Obj | None = None, **kw: Any) -> Obj:
    return {
        "id": "t",
        "config": config or CONFIG,
        "objects": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
            *objects,
        ],
        "pod": "default/p",
        **kw,
    }


def test_a_pod_that_fits_one_node(upstream: Upstream) -> None:
    r = upstream.one(
        case(
            [
                node("small", "1"),
                node("tainted", "8", taints=[{"key": "k", "effect": "NoSchedule"}]),
                node("big", "8"),
                pod("running", "500m", "small"),
                pod("p", "800m"),
            ]
        )
    )
    assert r.get("error") is None
    assert r["chosen"] == "big"
    assert r["filters"] == {
        "small": {
            "code": "Unschedulable",
            "plugin": "NodeResourcesFit",
            "reasons": ["Insufficient cpu"],
        },
        "tainted": {
            "code": "UnschedulableAndUnresolvable",
            "plugin": "TaintToleration",
            "reasons": ["node(s) had untolerated taint(s)"],
        },
        "big": None,
    }
    assert r["scores"] == []  # one feasible node: upstream does not score
    assert [(e["reason"], e["note"]) for e in r["events"]] == [
        ("Scheduled", "Successfully assigned default/p to big")
    ]


def test_scores_are_weighted_per_plugin_with_totals(upstream: Upstream) -> None:
    r = upstream.one(case([node("a", "4"), node("b", "8"), pod("p", "1")]))
    scores = {s["node"]: s for s in r["scores"]}
    assert set(scores) == {"a", "b"}
    for s in scores.values():
        assert s["total"] == sum(s["plugins"].values())
        assert s["plugins"]["TaintToleration"] == 300  # weight 3 x 100
    assert r["chosen"] == "b"  # least allocated


def test_a_pod_that_fits_nowhere_reports_upstreams_texts(upstream: Upstream) -> None:
    r = upstream.one(case([node("small", "1"), pod("running", "500m", "small"), pod("p", "800m")]))
    want = (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert r["chosen"] is None
    assert r["fitError"] == want
    assert [e["note"] for e in r["events"]] == [want]
    assert r["condition"]["message"] == want
    assert r["condition"]["observedGeneration"] == 1
    assert r["diagnosis"]["unschedulablePlugins"] == ["NodeResourcesFit"]


def test_preemption_deletes_the_victim_and_nominates(upstream: Upstream) -> None:
    r = upstream.one(
        case([node("small", "1"), pod("running", "800m", "small"), pod("p", "500m", priority=100)])
    )
    assert r["chosen"] is None
    assert r["nominatedNodeName"] == "small"
    assert r["deleted"] == ["default/running"]
    assert r["postFilter"]["nominatedNode"] == "small"


def test_stored_objects_are_defaulted_as_the_api_server_would(upstream: Upstream) -> None:
    limits_only = pod("p", "1")
    limits_only["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    r = upstream.one(case([node("a", "4"), limits_only], echo=True))
    stored = r["objects"][-1]
    assert stored["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert stored["spec"]["schedulerName"] == "default-scheduler"
    assert stored["status"]["phase"] == "Pending"


@pytest.mark.parametrize(
    ("objects", "config", "error"),
    [
        pytest.param(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "default"},
                }
            ],
            None,
            "spec.containers: Required value",
            id="invalid-pod",
        ),
        pytest.param(
            [node("a", "1"), pod("p", "1")],
            {**CONFIG, "percentageOfNodesToScore": 101},
            "percentageOfNodesToScore",
            id="invalid-config",
        ),
        pytest.param(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "s", "namespace": "default"},
                }
            ],
            None,
            "not supported by the harness",
            id="unknown-kind",
        ),
    ],
)
def test_a_case_the_api_server_would_refuse_is_an_error(
    upstream: Upstream, objects: list[Obj], config: Obj | None, error: str
) -> None:
    assert error in upstream.one(case(objects, config))["error"]


def test_volume_and_dra_kinds_are_stored_for_their_plugins(upstream: Upstream) -> None:
    objects = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "csi.example.com",
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "csi.example.com"},
            "spec": {},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {},
        },
        node("a", "1"),
        pod("p", "100m"),
    ]
    r = upstream.one(case(objects, echo=True))
    assert r.get("error") is None
    assert [o["kind"] for o in r["objects"][1:4]] == ["StorageClass", "CSIDriver", "DeviceClass"]
    assert r["objects"][1]["reclaimPolicy"] == "Delete"  # defaulted


def test_an_allocated_claim_is_stored_with_its_status(upstream: Upstream) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "gpu",
            "namespace": "default",
            "finalizers": ["resource.kubernetes.io/delete-protection"],
        },
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": "gpu.example.com", "pool": "a", "device": "d"}
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "other", "uid": "uid-other"}],
        },
    }
    r = upstream.one(case([claim, node("a", "1"), pod("p", "100m")], echo=True))
    assert r.get("error") is None, r.get("error")
    stored = r["objects"][1]
    assert stored["status"]["reservedFor"][0]["name"] == "other"
    assert stored["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] == "ExactCount"


@pytest.mark.parametrize(("gates", "error"), [({}, "unexpected field `shape`"), (None, "")])
def test_a_case_sets_its_own_feature_gates(
    upstream: Upstream, gates: dict[str, bool] | None, error: str
) -> None:
    config = {
        **CONFIG,
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [
                    {
                        "name": "VolumeBinding",
                        "args": {
                            "apiVersion": "kubescheduler.config.k8s.io/v1",
                            "kind": "VolumeBindingArgs",
                            "shape": [{"utilization": 0, "score": 0}],
                        },
                    }
                ],
            }
        ],
    }
    on = {"StorageCapacityScoring": True} if gates is None else gates
    r = upstream.one(case([node("a", "1"), pod("p", "100m")], config, featureGates=on))
    assert error in (r.get("error") or "")
    if not error:
        assert r["chosen"] == "a"


def test_a_binding_waiting_for_the_pv_controller_is_left_pending(upstream: Upstream) -> None:
    """WaitForFirstConsumer: VolumeBinding's PreBind writes the selected node on the claim
    and would wait for a provisioner; the harness reports the binding pending."""
    objects = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "wffc"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "wffc",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        node("a", "1"),
        pod("p", "100m", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]),
    ]
    r = upstream.one(case(objects))
    assert r.get("error") is None, r.get("error")
    assert r["chosen"] == "a" and r["bindingPending"] is True
    assert [e["reason"] for e in r["events"]] == []
