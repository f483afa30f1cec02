"""The test control plane itself: a real kube-apiserver v1.36 on a real etcd 3.6.

What a user of the fixture relies on: the API answers with the pinned version, objects
go in and come back out, the scheduler's bind subresource works, admission behaves as
documented, RBAC is enforced, and data survives an apiserver restart.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import Any

import pytest

from ksched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.integration


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }


def _names(body: dict[str, Any]) -> set[str]:
    return {item["metadata"]["name"] for item in body["items"]}


@pytest.fixture
def node(control_plane: ControlPlane) -> Any:
    name = f"node-{uuid.uuid4().hex[:8]}"
    status, body = control_plane.request("POST", "/api/v1/nodes", _node(name))
    assert status == 201, body
    yield name
    control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def test_version_is_pinned_release(control_plane: ControlPlane) -> None:
    status, body = control_plane.request("GET", "/version")
    assert status == 200
    assert body["major"] == "1" and body["minor"] == "36", body
    assert body["gitVersion"].startswith("v1.36."), body

    for binary in ("kube-apiserver", "kube-scheduler"):
        out = subprocess.run(
            [str(control_plane.binary(binary)), "--version"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.strip() == f"Kubernetes {body['gitVersion']}", out
    out = subprocess.run(
        [str(control_plane.binary("etcd")), "--version"], capture_output=True, text=True
    ).stdout
    assert "etcd Version: 3.6." in out, out


def test_node_and_pod_roundtrip_and_bind(
    control_plane: ControlPlane, namespace: str, node: str
) -> None:
    cp = control_plane
    status, body = cp.request("GET", "/api/v1/nodes")
    assert status == 200 and node in _names(body)
    got = next(n for n in body["items"] if n["metadata"]["name"] == node)
    assert got["status"]["allocatable"]["cpu"] == "4"
    # TaintNodesByCondition admission is off: a new node is not tainted not-ready.
    assert not got["spec"].get("taints"), got["spec"]

    status, pod = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("p1"))
    assert status == 201, pod
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert pod["spec"].get("nodeName") is None
    assert pod["status"]["phase"] == "Pending"
    # Real admission ran: Priority resolved the default priority, DefaultTolerationSeconds
    # added the two 300s NoExecute tolerations, and no service-account token was injected.
    assert pod["spec"]["priority"] == 0
    keys = {t["key"] for t in pod["spec"]["tolerations"]}
    assert keys == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert not pod["spec"].get("volumes")

    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200 and _names(body) == {"p1"}
    status, body = cp.request(
        "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3D&labelSelector=app%3Ddemo"
    )
    assert status == 200 and "p1" in _names(body)

    # What a scheduler does: POST the binding subresource.
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    status, body = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods/p1/binding", binding)
    assert status == 201, body
    status, pod = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods/p1")
    assert pod["spec"]["nodeName"] == node
    assert any(
        c["type"] == "PodScheduled" and c["status"] == "True" for c in pod["status"]["conditions"]
    ), pod["status"]
    # Binding twice is a conflict, as a racing second scheduler would see.
    status, body = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods/p1/binding", binding)
    assert status == 409, body


def test_a_node_keeps_its_status_on_create_and_allocatable_defaults_to_capacity(
    control_plane: ControlPlane,
) -> None:
    # What ControlPlane.create_node relies on to create a node in one call.
    cp = control_plane
    name = f"st-{uuid.uuid4().hex[:6]}"
    node = _node(name)
    del node["status"]["allocatable"]
    status, body = cp.request("POST", "/api/v1/nodes", node)
    try:
        assert status == 201, body
        status, got = cp.request("GET", f"/api/v1/nodes/{name}")
        assert status == 200
        assert got["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
        assert got["status"]["allocatable"] == got["status"]["capacity"]
        assert [c["type"] for c in got["status"]["conditions"]] == ["Ready"]
    finally:
        cp.request("DELETE", f"/api/v1/nodes/{name}")


def test_service_account_pods_need_no_controller(control_plane: ControlPlane) -> None:
    # Without kube-controller-manager no 'default' ServiceAccount exists; pods must still
    # be creatable (ServiceAccount admission is disabled on purpose).
    status, body = control_plane.request("GET", "/api/v1/namespaces/default/serviceaccounts")
    assert status == 200 and "default" not in _names(body)
    status, pod = control_plane.request(
        "POST", "/api/v1/namespaces/default/pods", _pod(f"sa-{uuid.uuid4().hex[:6]}")
    )
    assert status == 201, pod
    control_plane.request(
        "DELETE",
        f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}",
        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
    )


def test_rbac_is_enforced(control_plane: ControlPlane, namespace: str) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    user = f"alice-{uuid.uuid4().hex[:6]}"
    kc = control_plane.kubeconfig_for(user)
    core = kubernetes.client.CoreV1Api(control_plane.kubernetes_client(kc))
    with pytest.raises(kubernetes.client.ApiException) as exc:
        core.list_namespaced_pod(namespace)
    assert exc.value.status == 403

    # A Role with explicit rules: the aggregated ClusterRoles (view/edit/admin) stay empty
    # here because their rules are filled in by kube-controller-manager, which is not run.
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }
    status, body = control_plane.request("POST", f"{rbac}/roles", role)
    assert status == 201, body
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "alice-pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    status, body = control_plane.request("POST", f"{rbac}/rolebindings", binding)
    assert status == 201, body
    # The RBAC authorizer reads bindings from an informer: allow it a moment to catch up.
    deadline = time.monotonic() + 15
    while True:
        try:
            assert core.list_namespaced_pod(namespace).items == []
            break
        except kubernetes.client.ApiException as e:
            if e.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with pytest.raises(kubernetes.client.ApiException) as exc:
        core.list_node()
    assert exc.value.status == 403


def test_data_survives_apiserver_restart(
    control_plane: ControlPlane, namespace: str, node: str
) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    cp = control_plane
    status, pod = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("before"))
    assert status == 201, pod
    port, pid = cp.port, cp.apiserver_pid

    downtime = cp.restart_apiserver()

    assert cp.port == port and cp.apiserver_pid not in (None, pid)
    assert downtime < 120
    status, body = cp.request("GET", "/api/v1/nodes")
    assert status == 200 and node in _names(body)
    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert _names(body) == {"before"}
    # resourceVersions continue from etcd: the pod is unchanged.
    assert body["items"][0]["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]

    # The same kubeconfig keeps working with a standard client, and writes still succeed.
    core = kubernetes.client.CoreV1Api(cp.kubernetes_client())
    assert node in {n.metadata.name for n in core.list_node().items}
    status, _ = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("after"))
    assert status == 201
    names = {p.metadata.name for p in core.list_namespaced_pod(namespace).items}
    assert names == {"before", "after"}

    # A crash (SIGKILL) restart works too.
    cp.restart_apiserver(kill=True)
    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    assert status == 200 and _names(body) == {"before", "after"}


def test_upstream_kube_scheduler_binds_a_pod(
    control_plane: ControlPlane, namespace: str, node: str
) -> None:
    cp = control_plane
    with cp.start_kube_scheduler() as sched:
        status, pod = cp.request("POST", f"/api/v1/namespaces/{namespace}/pods", _pod("sched-me"))
        assert status == 201, pod
        deadline = time.monotonic() + 60
        while True:
            _, pod = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods/sched-me")
            if pod["spec"].get("nodeName") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert pod["spec"].get("nodeName"), (pod["status"], sched.log_path.read_text()[-3000:])
        assert "scheduler_schedule_attempts_total" in sched.metrics()
    assert not sched.alive()


def test_controller_manager_binds_an_immediate_claim_to_a_matching_volume(
    control_plane: ControlPlane, namespace: str
) -> None:
    """kube-controller-manager's PV controller completes a binding, as it will for the
    claims the volume plugins start; the generic object calls of the real client work
    on the objects it writes."""
    import asyncio

    from ksched.client.api import KubeClusterAPI
    from ksched.client.kubeconfig import load_client_config

    pv_name = f"pv-{uuid.uuid4().hex[:8]}"
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "manual",
            "hostPath": {"path": "/tmp/x"},
        },
    }
    status, body = control_plane.request("POST", "/api/v1/persistentvolumes", pv)
    assert status == 201, body
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "manual",
            "resources": {"requests": {"storage": "500Mi"}},
        },
    }
    status, body = control_plane.request(
        "POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", pvc
    )
    assert status == 201, body
    with control_plane.start_controller_manager(["persistentvolume-binder-controller"]):
        deadline = time.monotonic() + 30
        while True:
            status, body = control_plane.request(
                "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data"
            )
            if (body.get("status") or {}).get("phase") == "Bound":
                break
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
    assert body["spec"]["volumeName"] == pv_name

    async def through_the_client() -> tuple[dict[str, Any], dict[str, Any]]:
        api = KubeClusterAPI(load_client_config(kubeconfig=str(control_plane.kubeconfig)))
        try:
            got = await api.get_object(
                kind="persistentvolumeclaims", namespace=namespace, name="data"
            )
            patched = await api.patch_object(
                kind="persistentvolumes",
                namespace="",
                name=pv_name,
                patch={"metadata": {"annotations": {"ksched.test/seen": "yes"}}},
            )
            return got, patched
        finally:
            await api.close()

    got, patched = asyncio.run(through_the_client())
    assert got["spec"]["volumeName"] == pv_name
    assert patched["metadata"]["annotations"]["ksched.test/seen"] == "yes"
    assert patched["status"]["phase"] == "Bound"
    control_plane.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
