"""A control plane for workload-aware scheduling: kube-apiserver v1.36 with the
``scheduling.k8s.io/v1alpha2`` API and the GenericWorkload and GangScheduling gates on,
and the scheduler-plugins CRDs of ``deploy/crds`` created through the API.

It is its own session-scoped control plane (started on first use, beside the shared
one), so the alpha API and gates do not change what the other integration tests run
against.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from ksched.client.api import connect
from ksched.testing.controlplane import ControlPlane, ensure_binaries
from tests.integration.test_client_scheduler import Cluster

CRDS = Path(__file__).resolve().parents[3] / "deploy" / "crds"
WORKLOAD_APISERVER_ARGS = (
    "--runtime-config=scheduling.k8s.io/v1alpha2=true",
    "--feature-gates=GenericWorkload=true,GangScheduling=true",
)


def _establish_crds(cp: ControlPlane) -> None:
    names = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        status, body = cp.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
        )
        assert status in (201, 409), body
        names.append(crd["metadata"]["name"])
    deadline = time.monotonic() + 60
    for name in names:
        while True:
            _, body = cp.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            )
            conds = (body or {}).get("status", {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                break
            assert time.monotonic() < deadline, f"CRD {name} not established"
            time.sleep(0.1)


@pytest.fixture(scope="session")
def workload_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    if os.environ.get("KSCHED_SKIP_INTEGRATION", "") not in ("", "0"):
        pytest.skip("KSCHED_SKIP_INTEGRATION is set")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            bin_dir = ensure_binaries()
    else:
        bin_dir = ensure_binaries()
    cp = ControlPlane(bin_dir=bin_dir, apiserver_args=WORKLOAD_APISERVER_ARGS)
    cp.start()
    try:
        _establish_crds(cp)
        yield cp
    finally:
        cp.stop()


@pytest.fixture
async def wcluster(workload_plane: ControlPlane) -> AsyncIterator[Cluster]:
    """A fresh namespace on the workload control plane; its nodes and pods go after."""
    ns = f"w-{uuid.uuid4().hex[:10]}"
    status, body = workload_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    assert status == 201, body
    api = connect(kubeconfig=str(workload_plane.kubeconfig), qps=-1, burst=0)
    c = Cluster(api, ns)
    try:
        yield c
    finally:
        await c.delete_nodes()
        await api.close()
        workload_plane.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods",
            {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
        )
        workload_plane.request("DELETE", f"/api/v1/namespaces/{ns}")
