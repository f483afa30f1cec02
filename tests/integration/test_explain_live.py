"""``ksched explain`` on the real apiserver, as the read-only ServiceAccount: a pending
pod of the live cluster is explained, and its FailedScheduling text equals the event
``ksched run`` then writes for it; the audit log shows explain only read."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import orjson
import pytest

from ksched import cli
from ksched.client.api import connect
from ksched.config import load_config
from ksched.plugins.taint_toleration import ERR_REASON_UNTOLERATED
from ksched.run import serve
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.conftest import READONLY_USER

pytestmark = pytest.mark.integration

PROFILE = "explain-test"
CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {PROFILE}
"""


async def _failed_scheduling(cp: ControlPlane, config: Path, namespace: str) -> str:
    """Run ksched (serve, as ksched run does) until it records FailedScheduling."""
    api = connect(kubeconfig=str(cp.kubeconfig), qps=500, burst=500)
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(serve(load_config(config), api, stop=stop))
    try:
        for _ in range(300):
            _, body = cp.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
            notes = [
                e["note"] for e in body.get("items", []) if e.get("reason") == "FailedScheduling"
            ]
            if notes:
                return str(notes[0])
            await asyncio.sleep(0.1)
        raise AssertionError("no FailedScheduling event")
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await api.close()


def test_explain_a_live_pod_like_the_scheduler_would(
    control_plane: ControlPlane,
    readonly_kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cp = control_plane
    tag = uuid.uuid4().hex[:6]
    nodes = [f"explain-{tag}-{i}" for i in range(3)]
    for i, n in enumerate(nodes):
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if i == 2 else None
        cp.create_node(make_node(n, cpu="1", taints=taints))
    try:
        status, body = cp.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods",
            make_pod("big", namespace=namespace, cpu="1500m", scheduler_name=PROFILE),
        )
        assert status == 201, body
        config = tmp_path / "config.yaml"
        config.write_text(CONFIG)
        audited = len(cp.audit_events(READONLY_USER))
        argv = ["explain", f"{namespace}/big", "--kubeconfig", str(readonly_kubeconfig),
                "--config", str(config), "-o", "json"]  # fmt: skip
        assert cli.main(argv) == 1
        doc = orjson.loads(capsys.readouterr().out)
        mine = {n["node"]: (n["plugin"], n["reasons"]) for n in doc["nodes"] if n["node"] in nodes}
        assert mine == {
            nodes[0]: ("NodeResourcesFit", ["Insufficient cpu"]),
            nodes[1]: ("NodeResourcesFit", ["Insufficient cpu"]),
            nodes[2]: ("TaintToleration", [ERR_REASON_UNTOLERATED]),
        }
        verbs = {e["verb"] for e in cp.audit_events(READONLY_USER)[audited:]}
        assert verbs and verbs <= {"list", "watch"}, verbs
        event = asyncio.run(_failed_scheduling(cp, config, namespace))
        assert event == doc["failedScheduling"]
    finally:
        for n in nodes:
            cp.request("DELETE", f"/api/v1/nodes/{n}")
