"""deploy/ RBAC against the real apiserver: ksched runs as the ServiceAccount the
manifests create (with a token from the TokenRequest API) and does everything it does
— watch, elect a leader, bind, record events, review tokens and access for its
endpoints, release its Lease — without one permission error; and the grant is exactly
the listed permissions, checked both on the manifests and by SubjectAccessReviews."""

from __future__ import annotations

import base64
import json
import re
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControllerManager, ControlPlane
from ksched.testing.ksched_process import KschedProcess

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NS, SA = "ksched-system", "ksched"
USER = f"system:serviceaccount:{NS}:{SA}"

Obj = dict[str, Any]

#: What the issue lists (plus the kinds ksched's informers read today), as
#: (apiGroup, resource, resourceName, verb); namespace-scoped grants carry the namespace.
READ = {
    ("", "nodes"),
    ("", "namespaces"),
    ("", "services"),
    ("", "replicationcontrollers"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
    ("policy", "poddisruptionbudgets"),
    ("", "pods"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csistoragecapacities"),
    ("storage.k8s.io", "volumeattachments"),
    ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "resourceclaims"),
}
EXPECTED_CLUSTER = {(g, r, "", v) for g, r in READ for v in ("list", "watch")} | {
    ("", "pods", "", "delete"),
    ("", "persistentvolumes", "", "update"),
    ("", "persistentvolumeclaims", "", "update"),
    ("resource.k8s.io", "resourceclaims", "", "get"),
    ("resource.k8s.io", "resourceclaims", "", "update"),
    # DRAExtendedResource: PreBind creates a pod's claim, Unreserve/PostFilter delete it
    # (upstream's system:kube-scheduler role grants both with the gate).
    ("resource.k8s.io", "resourceclaims", "", "create"),
    ("resource.k8s.io", "resourceclaims", "", "delete"),
    ("resource.k8s.io", "resourceclaims/status", "", "update"),
    ("resource.k8s.io", "resourceclaims/status", "", "patch"),
    ("resource.k8s.io", "resourceclaims/binding", "", "update"),
    ("resource.k8s.io", "resourceclaims/binding", "", "patch"),
    ("", "pods/binding", "", "create"),
    ("", "pods/status", "", "patch"),
    ("events.k8s.io", "events", "", "create"),
    ("events.k8s.io", "events", "", "patch"),
    ("authentication.k8s.io", "tokenreviews", "", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "", "create"),
}
EXPECTED_ROLE = {
    ("coordination.k8s.io", "leases", "", "create"),
    ("coordination.k8s.io", "leases", "ksched", "get"),
    ("coordination.k8s.io", "leases", "ksched", "update"),
}

_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}


def manifests(*names: str) -> list[Obj]:
    docs: list[Obj] = []
    for name in names:
        docs += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    return docs


def collection(obj: Obj) -> str:
    return _PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))


def apply(cp: ControlPlane, obj: Obj) -> None:
    path = collection(obj)
    status, body = cp.request("POST", path, obj)
    if status == 409:
        url = f"{path}/{obj['metadata']['name']}"
        status, current = cp.request("GET", url)
        assert status == 200, current
        obj = {
            **obj,
            "metadata": {
                **obj["metadata"],
                **{"resourceVersion": current["metadata"]["resourceVersion"]},
            },
        }
        status, body = cp.request("PUT", url, obj)
        assert status == 200, body
        return
    assert status == 201, body


def rule_tuples(rules: list[Obj]) -> set[tuple[str, str, str, str]]:
    out = set()
    for r in rules:
        assert "nonResourceURLs" not in r
        for g in r["apiGroups"]:
            for res in r["resources"]:
                for v in r["verbs"]:
                    assert "*" not in (g, res, v), r
                    for name in r.get("resourceNames") or [""]:
                        out.add((g, res, name, v))
    return out


def can(cp: ControlPlane, **attrs: Any) -> bool:
    spec: Obj = {
        "user": USER,
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{NS}",
            "system:authenticated",
        ],
    }
    if "path" in attrs:
        spec["nonResourceAttributes"] = {"path": attrs["path"], "verb": attrs["verb"]}
    else:
        spec["resourceAttributes"] = attrs
    status, body = cp.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
    )
    assert status == 201, body
    return bool(body["status"].get("allowed"))


@pytest.fixture(scope="module")
def deployed(control_plane: ControlPlane) -> Iterator[list[Obj]]:
    docs = manifests("namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "configmap.yaml")
    for obj in docs:
        apply(control_plane, obj)
    yield docs
    for obj in reversed(docs):
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            control_plane.request("DELETE", f"{collection(obj)}/{obj['metadata']['name']}")


def test_the_manifests_grant_exactly_the_listed_permissions(deployed: list[Obj]) -> None:
    by_kind = {(d["kind"], d["metadata"]["name"]): d for d in deployed}
    assert rule_tuples(by_kind[("ClusterRole", "ksched")]["rules"]) == EXPECTED_CLUSTER
    role = by_kind[("Role", "ksched-leader-election")]
    assert role["metadata"]["namespace"] == NS
    assert rule_tuples(role["rules"]) == EXPECTED_ROLE
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        (binding,) = [d for d in deployed if d["kind"] == kind]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]
    # The optional coordinated-leader-election grant is confined to ksched's namespace.
    extra = manifests("rbac-coordinated-leader-election.yaml")
    (cle,) = [d for d in extra if d["kind"] == "Role"]
    assert cle["metadata"]["namespace"] == NS
    assert rule_tuples(cle["rules"]) == {
        ("coordination.k8s.io", "leasecandidates", "", v) for v in ("create", "get", "update")
    }


@pytest.mark.parametrize(
    ("attrs", "allowed"),
    [
        ({"verb": "list", "resource": "pods"}, True),
        ({"verb": "delete", "resource": "pods", "namespace": "default"}, True),
        ({"verb": "create", "resource": "pods", "subresource": "binding", "namespace": "x"}, True),
        ({"verb": "patch", "resource": "pods", "subresource": "status", "namespace": "x"}, True),
        (
            {"verb": "create", "group": "events.k8s.io", "resource": "events", "namespace": "x"},
            True,
        ),
        (
            {
                "verb": "get",
                "group": "coordination.k8s.io",
                "resource": "leases",
                "namespace": NS,
                "name": "ksched",
            },
            True,
        ),
        ({"verb": "create", "group": "authentication.k8s.io", "resource": "tokenreviews"}, True),
        ({"verb": "update", "resource": "persistentvolumes", "name": "pv"}, True),
        (
            {"verb": "update", "resource": "persistentvolumeclaims", "namespace": "x", "name": "c"},
            True,
        ),
        ({"verb": "list", "group": "storage.k8s.io", "resource": "volumeattachments"}, True),
        ({"verb": "patch", "resource": "persistentvolumes", "name": "pv"}, False),
        ({"verb": "delete", "resource": "persistentvolumes", "name": "pv"}, False),
        ({"verb": "create", "resource": "persistentvolumes"}, False),
        (
            {"verb": "delete", "resource": "persistentvolumeclaims", "namespace": "x", "name": "c"},
            False,
        ),
        ({"verb": "update", "group": "storage.k8s.io", "resource": "storageclasses"}, False),
        ({"verb": "get", "resource": "pods", "namespace": "x", "name": "p"}, False),
        ({"verb": "create", "resource": "pods", "namespace": "x"}, False),
        ({"verb": "update", "resource": "pods", "namespace": "x", "name": "p"}, False),
        ({"verb": "update", "resource": "nodes", "name": "n"}, False),
        ({"verb": "delete", "resource": "nodes", "name": "n"}, False),
        ({"verb": "get", "resource": "secrets", "namespace": NS, "name": "s"}, False),
        ({"verb": "list", "resource": "secrets"}, False),
        ({"verb": "list", "resource": "configmaps", "namespace": NS}, False),
        ({"verb": "create", "resource": "events", "namespace": "x"}, False),
        (
            {"verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "x"},
            False,
        ),
        (
            {
                "verb": "update",
                "group": "coordination.k8s.io",
                "resource": "leases",
                "namespace": "kube-system",
                "name": "kube-scheduler",
            },
            False,
        ),
        (
            {
                "verb": "update",
                "group": "coordination.k8s.io",
                "resource": "leases",
                "namespace": NS,
                "name": "other",
            },
            False,
        ),
        (
            {
                "verb": "delete",
                "group": "coordination.k8s.io",
                "resource": "leases",
                "namespace": NS,
                "name": "ksched",
            },
            False,
        ),
        (
            {"verb": "list", "group": "coordination.k8s.io", "resource": "leases", "namespace": NS},
            False,
        ),
        ({"verb": "get", "path": "/metrics"}, False),
    ],
    ids=lambda v: v if isinstance(v, bool) else "-".join(str(x) for x in v.values()),
)
def test_the_service_account_can_do_what_is_listed_and_nothing_else(
    control_plane: ControlPlane, deployed: list[Obj], attrs: Obj, allowed: bool
) -> None:
    assert can(control_plane, **attrs) is allowed


def hostname_in(node: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                ]
            }
        ]
    }


def sa_kubeconfig(cp: ControlPlane, path: Path) -> Path:
    status, body = cp.request(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts/{SA}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    assert status == 201, body
    token = body["status"]["token"]
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": cp.url,
                    "certificate-authority-data": base64.b64encode(
                        cp.ca_file.read_bytes()
                    ).decode(),
                },
            }
        ],
        "users": [{"name": SA, "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": SA}}],
        "current-context": "c",
    }
    path.write_text(json.dumps(cfg))
    return path


def test_ksched_runs_as_the_service_account(
    control_plane: ControlPlane, deployed: list[Obj], namespace: str, tmp_path: Path
) -> None:
    cp = control_plane
    kubeconfig = sa_kubeconfig(cp, tmp_path / "sa.kubeconfig")
    (configmap,) = [d for d in deployed if d["kind"] == "ConfigMap"]
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    config["clientConnection"]["kubeconfig"] = str(kubeconfig)
    config["leaderElection"].update(leaseDuration="4s", renewDeadline="3s", retryPeriod="500ms")
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    node = f"rbac-{uuid.uuid4().hex[:6]}"
    cp.create_node(make_node(node))
    proc = KschedProcess(
        [f"--config={cfg_path}", f"--client-ca-file={cp.ca_file}", "-v", "2"],
        tmp_path / "ksched.log",
    )
    kcm: ControllerManager | None = None
    try:
        proc.wait_for_log("Successfully acquired lease", 30)
        for i in range(3):
            pod = make_pod(f"p{i}", namespace=namespace)
            pod.pop("status")
            assert cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)[0] == 201
        # A pod with an unbound WaitForFirstConsumer claim: VolumeBinding's PreBind
        # binds the PV to the claim with the ServiceAccount's grants, then the PV
        # controller completes the binding.
        kcm = cp.start_controller_manager(["persistentvolume-binder-controller"])
        volume_objects = [
            (
                "/apis/storage.k8s.io/v1/storageclasses",
                {
                    "metadata": {"name": node},
                    "provisioner": "kubernetes.io/no-provisioner",
                    "volumeBindingMode": "WaitForFirstConsumer",
                },
            ),
            (
                "/api/v1/persistentvolumes",
                {
                    "metadata": {"name": node},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": node,
                        "local": {"path": "/mnt/rbac"},
                        "nodeAffinity": {"required": hostname_in(node)},
                    },
                },
            ),
            (
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims",
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": node,
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                },
            ),
        ]
        for path, obj in volume_objects:
            assert cp.request("POST", path, obj)[0] == 201
        pod = make_pod("p-volume", namespace=namespace)
        pod.pop("status")
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        assert cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)[0] == 201
        # A pod with a ResourceClaim: DynamicResources writes the claim's finalizer,
        # allocation and reservedFor with the ServiceAccount's grants.
        resource = "/apis/resource.k8s.io/v1"
        driver = f"{node}.example.com"
        dra_objects = [
            (
                f"{resource}/deviceclasses",
                {
                    "metadata": {"name": node},
                    "spec": {
                        "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]
                    },
                },
            ),
            (
                f"{resource}/resourceslices",
                {
                    "metadata": {"name": node},
                    "spec": {
                        "driver": driver,
                        "nodeName": node,
                        "devices": [{"name": "gpu-0"}],
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    },
                },
            ),
            (
                f"{resource}/namespaces/{namespace}/resourceclaims",
                {
                    "metadata": {"name": "gpu"},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "gpu", "exactly": {"deviceClassName": node}}]
                        }
                    },
                },
            ),
        ]
        for path, obj in dra_objects:
            assert cp.request("POST", path, obj)[0] == 201
        pod = make_pod("p-dra", namespace=namespace)
        pod.pop("status")
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
        assert cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)[0] == 201
        deadline = time.monotonic() + 30
        while True:
            status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
            if all(p["spec"].get("nodeName") for p in body["items"]):
                break
            assert time.monotonic() < deadline, proc.text()
            time.sleep(0.1)
        deadline = time.monotonic() + 15
        while True:  # events go out asynchronously
            status, events = cp.request(
                "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
            )
            if sum(e["reason"] == "Scheduled" for e in events["items"]) >= 5:
                break
            assert time.monotonic() < deadline, proc.text()
            time.sleep(0.1)
        status, claim = cp.request("GET", f"{resource}/namespaces/{namespace}/resourceclaims/gpu")
        assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p-dra"]
        status, lease = cp.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/ksched"
        )
        assert status == 200 and lease["spec"]["holderIdentity"]
        # Out of the cluster and without --authentication-kubeconfig (as upstream) a token
        # is not reviewed: the request is anonymous and denied; the admin's certificate
        # (--client-ca-file, group system:masters) is allowed.
        token = json.loads(kubeconfig.read_text())["users"][0]["user"]["token"]
        assert proc.get("/metrics", token=token)[0] == 403
        assert proc.get("/metrics", cert=(cp.client_cert_file, cp.client_key_file))[0] == 200
        proc.signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.text()
    finally:
        proc.stop()
        if kcm is not None:
            kcm.stop()
        cp.request("DELETE", f"/api/v1/nodes/{node}")
        cp.request("DELETE", f"/api/v1/persistentvolumes/{node}")
        cp.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{node}")
        cp.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{node}")
        cp.request("DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/{node}")
    status, lease = cp.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/ksched")
    assert lease["spec"]["holderIdentity"] == ""  # released with the Role's update
    log = proc.text()
    # A 403 status, not the digits inside a klog timestamp (".548403").
    assert not re.search(r"\b403\b", log) and "orbidden" not in log, log
