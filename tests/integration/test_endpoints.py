"""The HTTPS endpoints of ``ksched run`` against the real apiserver, and beside the
upstream kube-scheduler v1.36 for the answers both give.

* anonymous ``/healthz``, ``/livez``, ``/readyz``: 200 (always-allowed paths);
* anonymous ``/metrics`` and ``/configz``: authenticated as ``system:anonymous`` and
  then denied by the SubjectAccessReview — 403, exactly what upstream answers (checked
  side by side below); an invalid bearer token: 401;
* a ServiceAccount token (TokenRequest API) without rights: 403; one bound to a
  ClusterRole with ``get`` on ``/metrics`` and ``/configz``: 200, with upstream's metric
  names, and the effective configuration as upstream's configz renders it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.testing.controlplane import ControlPlane
from ksched.testing.ksched_process import KschedProcess, write_scheduler_config

pytestmark = pytest.mark.integration

#: Families with series before any pod is scheduled (a vector is printed only once it has
#: a series, as client_golang prints it: no attempt yet, no schedule_attempts_total).
UPSTREAM_METRICS = (
    "scheduler_pending_pods",
    "scheduler_cache_size",
    "scheduler_plugin_evaluation_total",
    "scheduler_pod_scheduling_attempts",
    "leader_election_master_status",
)


def service_account_token(cp: ControlPlane, namespace: str, name: str) -> str:
    status, body = cp.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
    )
    assert status == 201, body
    status, body = cp.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    assert status == 201, body
    return str(body["status"]["token"])


@pytest.fixture(scope="module")
def served(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cp = control_plane
    ns = f"ep-{uuid.uuid4().hex[:8]}"
    assert cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    tmp: Path = tmp_path_factory.mktemp("endpoints")
    cfg = write_scheduler_config(
        tmp / "cfg.json",
        {
            "clientConnection": {"kubeconfig": str(cp.kubeconfig)},
            "leaderElection": {
                "leaderElect": True,
                "resourceNamespace": ns,
                "resourceName": "ksched",
                "leaseDuration": "4s",
                "renewDeadline": "3s",
                "retryPeriod": "500ms",
            },
        },
    )
    proc = KschedProcess(
        [
            f"--config={cfg}",
            f"--authentication-kubeconfig={cp.kubeconfig}",
            f"--authorization-kubeconfig={cp.kubeconfig}",
            "-v",
            "2",
        ],
        tmp / "ksched.log",
    )
    role = f"ksched-metrics-reader-{ns}"
    try:
        proc.wait_for_log('"Scheduling"', 30)
        nobody = service_account_token(cp, ns, "nobody")
        reader = service_account_token(cp, ns, "reader")
        status, body = cp.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "metadata": {"name": role},
                "rules": [{"nonResourceURLs": ["/metrics", "/configz"], "verbs": ["get"]}],
            },
        )
        assert status == 201, body
        status, body = cp.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
            },
        )
        assert status == 201, body
        yield proc, nobody, reader
    finally:
        proc.stop()
        cp.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}")
        cp.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}")
        cp.request("DELETE", f"/api/v1/namespaces/{ns}")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_health_paths_are_open_to_anonymous_clients(served: Any, path: str) -> None:
    proc, _, _ = served
    assert proc.get(path) == (200, "ok")


def test_readyz_lists_kube_schedulers_checks(served: Any) -> None:
    proc, _, _ = served
    status, text = proc.get("/readyz?verbose")
    assert status == 200
    assert text.splitlines() == [
        "[+]leaderElection ok",
        "[+]shutdown ok",
        "[+]sched-handler-sync ok",
        "readyz check passed",
    ]
    status, text = proc.get("/healthz?verbose")
    assert (status, text.splitlines()) == (200, ["[+]leaderElection ok", "healthz check passed"])
    status, text = proc.get("/readyz?verbose&exclude=shutdown")
    assert "[+]shutdown excluded: ok" in text


def test_anonymous_metrics_is_forbidden_and_a_bad_token_unauthorized(served: Any) -> None:
    proc, _, _ = served
    status, text = proc.get("/metrics")
    assert status == 403, text
    body = json.loads(text)
    assert body["kind"] == "Status" and body["reason"] == "Forbidden"
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    assert proc.get("/configz")[0] == 403
    status, text = proc.get("/metrics", token="not-a-token")
    assert status == 401, text
    assert json.loads(text)["reason"] == "Unauthorized"


def test_a_token_without_rights_is_forbidden(served: Any) -> None:
    proc, nobody, _ = served
    status, text = proc.get("/metrics", token=nobody)
    assert status == 403, text
    assert "cannot get path" in json.loads(text)["message"]
    assert proc.get("/healthz", token=nobody) == (200, "ok")


def test_a_token_with_rights_reads_metrics_and_configz(served: Any) -> None:
    proc, _, reader = served
    status, text = proc.get("/metrics", token=reader)
    assert status == 200, text
    for name in UPSTREAM_METRICS:
        assert f"\n{name}" in text or text.startswith(name), name
    assert 'leader_election_master_status{name="ksched"} 1\n' in text
    status, text = proc.get("/configz", token=reader)
    assert status == 200, text
    cfg = json.loads(text)["componentconfig"]
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    assert cfg["leaderElection"]["resourceName"] == "ksched"
    assert cfg["leaderElection"]["leaseDuration"] == "4s"
    assert cfg["profiles"][0]["schedulerName"] == "default-scheduler"


def test_answers_match_upstream_kube_scheduler(control_plane: ControlPlane, served: Any) -> None:
    proc, nobody, reader = served
    upstream = control_plane.start_kube_scheduler()
    try:
        theirs = KschedProcess.__new__(KschedProcess)
        theirs.port = upstream.port
        for path in ("/healthz", "/livez", "/readyz", "/metrics", "/configz", "/livez/ping"):
            for token in (None, "not-a-token", nobody, reader):
                ours = proc.get(path, token=token)[0]
                want = theirs.get(path, token=token)[0]
                assert ours == want, (path, token and token[:8], ours, want)
    finally:
        upstream.stop()
