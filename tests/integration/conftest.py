"""Fixtures for tests against the real control plane (kube-apiserver v1.36 + etcd v3.6).

* ``control_plane`` (session): ksched's ``ksched_control_plane`` fixture (a started
  :class:`ksched.testing.controlplane.ControlPlane`, auditing the read-only identity). The
  first run on a machine builds the binaries from Go modules (several minutes, progress
  shown on the terminal); later runs reuse ``~/.cache/ksched/bin/``.
* ``kubeconfig`` (session): path of the admin kubeconfig.
* ``namespace`` (function): a fresh namespace; its pods are force-deleted afterwards (no
  kube-controller-manager runs, so nothing else would clean them up).
* ``readonly_kubeconfig`` (session): deploy/rbac-readonly.yaml applied, and a kubeconfig
  of its ServiceAccount's identity (a client certificate with that user name); the
  apiserver audits that identity's requests (``control_plane.audit_events(READONLY_USER)``).

Every test under tests/integration is marked ``integration``.
``KSCHED_SKIP_INTEGRATION=1`` skips them (e.g. on machines without Go).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.testing.controlplane import ControlPlane

_HERE = Path(__file__).resolve().parent

#: The identity of deploy/rbac-readonly.yaml's ServiceAccount (shadow mode, record).
READONLY_USER = "system:serviceaccount:ksched-system:ksched-readonly"
#: The apiserver audits every request of that identity, and nothing else (the tests of
#: the read-only tools check it wrote nothing).
AUDIT_POLICY = {
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "users": [READONLY_USER]}, {"level": "None"}],
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent == _HERE or _HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def ksched_control_plane_options() -> dict[str, Any]:
    """ksched's ``ksched_control_plane`` fixture, with the audit policy above."""
    return {"audit_policy": AUDIT_POLICY}


@pytest.fixture(scope="session")
def control_plane(ksched_control_plane: ControlPlane) -> ControlPlane:
    """The session's control plane: ksched's own ``ksched_control_plane`` fixture (the
    pytest plugin shipped with ksched), which builds the binaries on first use."""
    return ksched_control_plane


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    return control_plane.kubeconfig


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    status, body = control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    yield name
    control_plane.request(
        "DELETE",
        f"/api/v1/namespaces/{name}/pods",
        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
    )
    control_plane.request("DELETE", f"/api/v1/namespaces/{name}")


def _apply(cp: ControlPlane, obj: dict[str, Any]) -> None:
    kind = obj["kind"]
    ns = (obj.get("metadata") or {}).get("namespace", "")
    paths = {
        "Namespace": "/api/v1/namespaces",
        "ServiceAccount": f"/api/v1/namespaces/{ns}/serviceaccounts",
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    }
    status, body = cp.request("POST", paths[kind], obj)
    assert status in (201, 409), (kind, status, body)


@pytest.fixture(scope="session")
def readonly_kubeconfig(control_plane: ControlPlane) -> Path:
    import yaml

    _apply(
        control_plane,
        {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ksched-system"}},
    )
    for doc in yaml.safe_load_all((_HERE.parents[1] / "deploy" / "rbac-readonly.yaml").read_text()):
        if doc:
            _apply(control_plane, doc)
    return control_plane.kubeconfig_for(READONLY_USER)
