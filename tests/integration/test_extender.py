"""``ksched run`` with a scheduler extender against the real apiserver: the extender
(plain ``http.server`` on loopback) filters the nodes, scores them and binds the pods
itself through the API; ksched sends it what kube-scheduler would."""

from __future__ import annotations

import json
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ksched.sim.workloads import make_node
from ksched.testing.controlplane import ControlPlane
from tests.integration.test_run import (  # noqa: F401 - the ksched fixture
    KschedProcess,
    bound,
    create_pods,
    ksched,
    wait_until,
    write_config,
)

pytestmark = pytest.mark.integration


class Extender:
    """Keeps the nodes whose name ends in ``-b`` and binds through the API server."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.calls: list[tuple[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                verb = self.path.rsplit("/", 1)[-1]
                outer.calls.append((verb, args))
                answer = outer.answer(verb, args)
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/scheduler"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, verb: str, args: Any) -> Any:
        if verb == "filter":
            names = args["NodeNames"]
            return {
                "NodeNames": [n for n in names if n.endswith("-b")],
                "FailedNodes": {n: "not a b-node" for n in names if not n.endswith("-b")},
                "Error": "",
            }
        if verb == "bind":
            ns, name = args["PodNamespace"], args["PodName"]
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, "uid": args["PodUID"]},
                "target": {"kind": "Node", "name": args["Node"]},
            }
            status, body = self.cp.request(
                "POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", binding
            )
            return {"Error": "" if status == 201 else f"binding failed: {status} {body}"}
        return {"Error": f"unknown verb {verb}"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def nodes(control_plane: ControlPlane) -> Iterator[list[str]]:
    tag = uuid.uuid4().hex[:6]
    names = [f"ext-{tag}-a", f"ext-{tag}-b"]
    for name in names:
        control_plane.create_node(make_node(name, cpu="8", memory="32Gi"))
    yield names
    for name in names:
        control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def test_run_filters_and_binds_through_an_extender(
    control_plane: ControlPlane,
    namespace: str,
    nodes: list[str],
    tmp_path: Path,
    ksched: Callable[..., KschedProcess],  # noqa: F811
) -> None:
    ext = Extender(control_plane)
    try:
        cfg = write_config(
            tmp_path / "cfg.yaml",
            control_plane.kubeconfig,
            qps=50,
            burst=100,
            extenders=[
                {
                    "urlPrefix": ext.url,
                    "filterVerb": "filter",
                    "bindVerb": "bind",
                    "nodeCacheCapable": True,
                    "httpTimeout": "10s",
                }
            ],
        )
        proc = ksched("--config", str(cfg), "--leader-elect=false", "-v", "2")
        proc.wait_for_log("Caches are synced")
        create_pods(control_plane, namespace, [f"p{i}" for i in range(4)])
        wait_until(lambda: len(bound(control_plane, namespace)) == 4, proc, what="4 pods bound")
        assert set(bound(control_plane, namespace).values()) == {nodes[1]}
        filters = [a for v, a in ext.calls if v == "filter"]
        binds = [a for v, a in ext.calls if v == "bind"]
        assert len(filters) == 4 and len(binds) == 4
        # The nodes other tests left are there too; ours both reached the extender.
        assert set(nodes) <= set(filters[0]["NodeNames"])
        assert filters[0]["Nodes"] is None
        assert {b["Node"] for b in binds} == {nodes[1]}
        proc.signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.text()
    finally:
        ext.close()
