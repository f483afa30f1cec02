"""Replacing kube-scheduler with ksched and rolling back, as deploy/README.md describes it,
on the real apiserver: kube-scheduler v1.36.5 leads the Lease ``kube-system/kube-scheduler``;
ksched, started with the static-pod manifest's flags (``deploy/kubeadm/kube-scheduler.yaml``)
as the same user (``system:kube-scheduler``, with only the RBAC kube-apiserver's bootstrap
policy grants it), waits as a standby; kube-scheduler stops (releasing the Lease) and
ksched takes over; kube-scheduler starts again and takes the Lease back when ksched stops.
Pods are created all along, through both hand-overs: every one is bound, once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from ksched.testing.ksched_process import free_port

pytestmark = pytest.mark.integration

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "kubeadm" / "kube-scheduler.yaml"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
#: Short leader election timings for the test (the manifest keeps upstream's defaults).
FAST = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=500ms",
]


def manifest_flags(kubeconfig: Path) -> list[str]:
    """The static pod's command line, its scheduler.conf replaced by ``kubeconfig``."""
    pod = yaml.safe_load(MANIFEST.read_text())
    (container,) = pod["spec"]["containers"]
    command = container["command"]
    assert command[0] == "kube-scheduler"
    return [a.replace("/etc/kubernetes/scheduler.conf", str(kubeconfig)) for a in command[1:]]


class Scheduler:
    """kube-scheduler or ksched as a child process with the manifest's flags."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        self.port = free_port()
        self._out = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*argv, f"--secure-port={self.port}", "-v=2"],
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout)
        self._out.close()
        return code


def lease_holder(cp: ControlPlane) -> str:
    status, body = cp.request("GET", LEASE)
    return str((body.get("spec") or {}).get("holderIdentity") or "") if status == 200 else ""


def wait_for(cond: Any, timeout: float, what: str, *logs: Scheduler) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            tails = "\n\n".join(s.text()[-4000:] for s in logs)
            raise AssertionError(f"timed out waiting for {what}\n{tails}")
        time.sleep(0.1)


class PodStream:
    """Creates a pod every ``every`` seconds in a thread until stopped."""

    def __init__(self, cp: ControlPlane, namespace: str, prefix: str, every: float = 0.1) -> None:
        self.cp = cp
        self.namespace = namespace
        self.prefix = prefix
        self.every = every
        self.names: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            name = f"{self.prefix}-{i:03d}"
            pod = make_pod(name, namespace=self.namespace, cpu="10m", memory="10Mi")
            pod.pop("status", None)
            status, body = self.cp.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", pod)
            assert status == 201, body
            self.names.append(name)
            i += 1
            self._stop.wait(self.every)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(10)
        return self.names


@pytest.fixture
def nodes(control_plane: ControlPlane) -> Iterator[list[str]]:
    names = [f"switch-{uuid.uuid4().hex[:6]}-{i}" for i in range(3)]
    for name in names:
        control_plane.create_node(make_node(name, cpu="32", memory="64Gi", pods="110"))
    yield names
    for name in names:
        control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def test_ksched_takes_over_kube_schedulers_lease_and_gives_it_back(
    control_plane: ControlPlane, namespace: str, nodes: list[str], tmp_path: Path
) -> None:
    cp = control_plane
    assert lease_holder(cp) == "", "another test holds kube-system/kube-scheduler"
    kubeconfig = cp.kubeconfig_for("system:kube-scheduler")
    flags = [*manifest_flags(kubeconfig), *FAST]
    upstream_argv = [str(cp.kube_scheduler), *flags]
    ksched_argv = [sys.executable, "-m", "ksched", "run", *flags]
    started: list[Scheduler] = []

    def start(argv: list[str], name: str) -> Scheduler:
        s = Scheduler(argv, tmp_path / f"{name}.log")
        started.append(s)
        return s

    try:
        # 1. kube-scheduler leads.
        up1 = start(upstream_argv, "kube-scheduler-1")
        wait_for(lambda: "Successfully acquired lease" in up1.text(), 60, "kube-scheduler", up1)
        holder_up1 = lease_holder(cp)
        assert holder_up1
        # 2. ksched waits as a standby on the same Lease.
        ks = start(ksched_argv, "ksched")
        wait_for(
            lambda: (
                '"Attempting to acquire leader lease..." lock="kube-system/kube-scheduler"'
                in ks.text()
            ),
            60,
            "ksched standby",
            ks,
        )
        stream = PodStream(cp, namespace, "a")
        time.sleep(2.0)
        assert lease_holder(cp) == holder_up1
        assert "Successfully bound pod" not in ks.text()
        # 3. kube-scheduler stops (releases the Lease): ksched takes over.
        assert up1.stop() in (0, 1)
        wait_for(
            lambda: '"Successfully acquired lease" lock="kube-system/kube-scheduler"' in ks.text(),
            30,
            "ksched takes the Lease",
            ks,
        )
        holder_ks = lease_holder(cp)
        assert holder_ks and holder_ks != holder_up1
        wait_for(lambda: "Successfully bound pod to node" in ks.text(), 30, "ksched binds", ks)
        # 4. kube-scheduler starts again, as a standby, and takes the Lease back when
        #    ksched stops.
        up2 = start(upstream_argv, "kube-scheduler-2")
        wait_for(lambda: "Attempting to acquire leader lease..." in up2.text(), 60, "standby", up2)
        time.sleep(2.0)
        assert lease_holder(cp) == holder_ks
        assert ks.stop() == 0, ks.text()[-4000:]
        wait_for(
            lambda: "Successfully acquired lease" in up2.text(), 30, "kube-scheduler back", up2
        )
        assert lease_holder(cp) not in ("", holder_ks)
        time.sleep(2.0)
        created = stream.stop()
        assert len(created) >= 40

        # 5. No pod lost, each bound once.
        def all_bound() -> bool:
            _, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
            return all(p["spec"].get("nodeName") for p in body["items"])

        wait_for(all_bound, 60, "every pod bound", up2)
        _, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods")
        assert sorted(p["metadata"]["name"] for p in body["items"]) == sorted(created)
        _, events = cp.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        scheduled: dict[str, int] = {}
        for e in events["items"]:
            if e["reason"] == "Scheduled":
                name = e["regarding"]["name"]
                scheduled[name] = scheduled.get(name, 0) + int(
                    (e.get("series") or {}).get("count", 1)
                )
        assert set(scheduled) == set(created)
        assert max(scheduled.values()) == 1, {k: v for k, v in scheduled.items() if v > 1}
        # ksched ran with only kube-scheduler's RBAC: nothing was refused.
        log = ks.text()
        assert "forbidden" not in log and "Forbidden" not in log, log[-4000:]
        bound_by_ksched = log.count('"Successfully bound pod to node"')
        assert 0 < bound_by_ksched < len(created)
    finally:
        for s in started:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait(10)
        status, body = cp.request("GET", LEASE)
        if status == 200:
            body["spec"]["holderIdentity"] = ""
            cp.request("PUT", LEASE, body)


RBAC = MANIFEST.with_name("rbac.yaml")
_COLLECTIONS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}
#: What kube-scheduler does through the API (resource attributes) and must be allowed.
NEEDED = [
    {"verb": "create", "resource": "pods", "subresource": "binding", "namespace": "default"},
    {"verb": "patch", "resource": "pods", "subresource": "status", "namespace": "default"},
    {"verb": "delete", "resource": "pods", "namespace": "default"},
    {"verb": "watch", "resource": "nodes"},
    {
        "verb": "update",
        "group": "coordination.k8s.io",
        "resource": "leases",
        "name": "kube-scheduler",
        "namespace": "kube-system",
    },
    {"verb": "create", "group": "events.k8s.io", "resource": "events", "namespace": "default"},
    {"verb": "create", "group": "authentication.k8s.io", "resource": "tokenreviews"},
    {"verb": "create", "group": "authorization.k8s.io", "resource": "subjectaccessreviews"},
    {
        "verb": "get",
        "resource": "configmaps",
        "name": "extension-apiserver-authentication",
        "namespace": "kube-system",
    },
    {"verb": "update", "resource": "persistentvolumeclaims", "namespace": "default"},
]


def allowed(cp: ControlPlane, user: str, groups: list[str], attrs: dict[str, str]) -> bool:
    status, body = cp.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attrs},
        },
    )
    assert status == 201, body
    return bool(body["status"].get("allowed"))


def test_the_kubeadm_rbac_gives_a_service_account_kube_schedulers_rights(
    control_plane: ControlPlane,
) -> None:
    cp = control_plane
    docs = [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    try:
        for obj in docs:
            path = _COLLECTIONS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
            status, body = cp.request("POST", path, obj)
            assert status in (201, 409), body
        sa = (
            "system:serviceaccount:kube-system:kube-scheduler",
            [
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "system:authenticated",
            ],
        )
        user = ("system:kube-scheduler", ["system:authenticated"])
        for attrs in NEEDED:
            assert allowed(cp, *user, attrs), attrs  # the bootstrap bindings
            assert allowed(cp, *sa, attrs), attrs  # the same rights through rbac.yaml
        assert not allowed(cp, *sa, {"verb": "delete", "resource": "nodes"})
    finally:
        for obj in docs:
            path = _COLLECTIONS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
            cp.request("DELETE", f"{path}/{obj['metadata']['name']}")
