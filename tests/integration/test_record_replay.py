"""``ksched record`` on the real apiserver, as the read-only ServiceAccount of
deploy/rbac-readonly.yaml, and ``ksched replay`` of that recording.

The recording holds the nodes and pods (stripped: no environment, no commands), the pods
that arrive and leave during ``--duration`` with their offsets, and never a Secret: the
apiserver's audit log shows the recorder read no Secret and wrote nothing. Replaying it
is deterministic for a seed, and two configurations give their own placements.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from ksched import cli, replay
from ksched.client.api import connect
from ksched.config import load_config_bytes
from ksched.readonly import ReadOnlyClusterAPI
from ksched.recording import Recording, record
from ksched.sim.workloads import make_node, make_pod
from ksched.testing.controlplane import ControlPlane
from tests.integration.conftest import READONLY_USER
from tests.integration.test_client_scheduler import Cluster

pytestmark = pytest.mark.integration

SCHEDULER = "replay-test"  # no scheduler handles it in the control plane: pods stay pending
SECRET_VALUE = "czNjcjN0LXZhbHVlLW5vYm9keS1zZWVz"  # base64


def config(strategy: str) -> replay.ReplayConfig:
    text = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SCHEDULER}
  pluginConfig:
  - name: NodeResourcesFit
    args: {{scoringStrategy: {{type: {strategy}}}}}
"""
    return replay.ReplayConfig(strategy, load_config_bytes(text.encode()))


def pod(name: str, **kw: Any) -> dict[str, Any]:
    obj = make_pod(name, scheduler_name=SCHEDULER, **kw)
    obj["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": "do-not-record-me"}]
    obj["spec"]["containers"][0]["command"] = ["/bin/serve", "--secret-flag"]
    return obj


@pytest.fixture
async def cluster(control_plane: ControlPlane, namespace: str) -> AsyncIterator[Cluster]:
    api = connect(kubeconfig=str(control_plane.kubeconfig), qps=-1, burst=0)
    c = Cluster(api, namespace)
    try:
        yield c
    finally:
        await c.delete_nodes()
        await api.close()


async def test_record_then_replay(
    control_plane: ControlPlane, readonly_kubeconfig: Path, cluster: Cluster, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    nodes = [f"rec-{tag}-{i}" for i in range(6)]
    await cluster.create_nodes(make_node(n, cpu="2") for n in nodes)
    status, body = control_plane.request(
        "POST",
        f"/api/v1/namespaces/{cluster.ns}/secrets",
        {"metadata": {"name": "db"}, "data": {"password": SECRET_VALUE}},
    )
    assert status == 201, body
    await cluster.create_pods(pod(f"bound-{i}", cpu="500m", node_name=nodes[i]) for i in range(3))
    await cluster.create_pods(pod(f"pending-{i}", cpu="300m") for i in range(8))
    audited_before = len(control_plane.audit_events(READONLY_USER))

    client = connect(kubeconfig=str(readonly_kubeconfig))
    api = ReadOnlyClusterAPI(client, mode="ksched record")
    try:
        task = asyncio.get_running_loop().create_task(record(api, duration=3.0))
        await asyncio.sleep(1.0)
        await cluster.create_pods(pod(f"late-{i}", cpu="300m") for i in range(4))
        await cluster.rest.request(
            "DELETE",
            f"/api/v1/namespaces/{cluster.ns}/pods/bound-0",
            json_body={"gracePeriodSeconds": 0},
        )
        rec = await task
    finally:
        await client.close()
    path = tmp_path / "cluster.json.zst"
    rec.save(path)

    mine = [p for p in rec.of("pods") if p["metadata"]["namespace"] == cluster.ns]
    assert {p["metadata"]["name"] for p in mine} == {
        *(f"bound-{i}" for i in range(3)),
        *(f"pending-{i}" for i in range(8)),
    }
    assert set(nodes) <= {n["metadata"]["name"] for n in rec.of("nodes")}
    arrivals = Counter(
        (a.type, a.object["metadata"]["name"].split("-")[0])
        for a in rec.arrivals
        if a.kind == "pods" and a.object["metadata"].get("namespace") == cluster.ns
    )
    assert arrivals == {("ADDED", "late"): 4, ("DELETED", "bound"): 1}
    assert all(
        0.5 < a.t < 3.0 for a in rec.arrivals if a.object["metadata"].get("namespace") == cluster.ns
    )
    raw = zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=1 << 30)
    for secret in (SECRET_VALUE.encode(), b"do-not-record-me", b"--secret-flag"):
        assert secret not in raw
    assert sum(api.refused.values()) == 0
    events = control_plane.audit_events(READONLY_USER)[audited_before:]
    assert events and {e["verb"] for e in events} <= {"list", "watch"}
    assert not any(
        (e.get("objectRef") or {}).get("resource") in ("secrets", "configmaps") for e in events
    )

    # Replay: deterministic for a seed; the two strategies place differently.
    loaded = Recording.load(path)
    configs = [config("LeastAllocated"), config("MostAllocated")]
    first = await replay.replay_all(loaded, configs, seed=3)
    second = await replay.replay_all(loaded, configs, seed=3)
    ours = [
        {k: v for k, v in r.placements.items() if k.startswith(f"{cluster.ns}/")} for r in first
    ]
    again = [
        {k: v for k, v in r.placements.items() if k.startswith(f"{cluster.ns}/")} for r in second
    ]
    assert ours == again
    for placed in ours:
        # The 8 pending pods and the 4 that arrived, all placed on this test's nodes.
        assert len(placed) == 12 and set(placed.values()) <= set(nodes)
    least, most = (len(set(p.values())) for p in ours)
    assert most < least


def test_record_command(
    control_plane: ControlPlane, readonly_kubeconfig: Path, tmp_path: Path
) -> None:
    out = tmp_path / "c.json.zst"
    code = cli.main(
        ["record", "-o", str(out), "--kubeconfig", str(readonly_kubeconfig), "--duration", "500ms"]
    )
    assert code == 0
    rec = Recording.load(out)
    assert rec.of("namespaces") and rec.duration == 0.5 and rec.source == control_plane.url
