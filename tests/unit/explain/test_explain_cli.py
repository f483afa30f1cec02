"""``ksched explain`` on the command line: pods from manifests (as admission would
complete them), recordings and generated clusters as the cluster, the table, JSON and
``--node`` outputs, and the exit statuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ksched import cli
from ksched.commands.common import CommandError
from ksched.commands.explain import pods_from_manifests
from ksched.plugins.taint_toleration import ERR_REASON_UNTOLERATED
from ksched.recording import Recording
from ksched.sim.workloads import make_node, make_pod

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      priorityClassName: high
      containers: [{name: c, image: nginx, resources: {requests: {cpu: CPU}}}]
"""


@pytest.mark.parametrize(
    ("name", "text", "namespace", "want"),
    [
        (
            "deployment-template-becomes-a-pod",
            DEPLOYMENT.replace("CPU", "500m"),
            None,
            {"key": "shop/web-explain", "priority": 1000, "labels": {"app": "web"}},
        ),
        (
            "namespace-flag-wins",
            DEPLOYMENT.replace("CPU", "500m"),
            "other",
            {"key": "other/web-explain", "priority": 1000, "labels": {"app": "web"}},
        ),
        (
            "bare-pod-gets-the-global-default-priority",
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n",
            None,
            {"key": "default/p", "priority": 7, "labels": {}},
        ),
    ],
)
def test_pods_from_manifests(
    name: str, text: str, namespace: str | None, want: dict[str, Any]
) -> None:
    (pod,) = pods_from_manifests(text, "f.yaml", namespace=namespace, classes={"high": 1000, "": 7})
    assert pod.key == want["key"]
    assert pod.priority == want["priority"]
    assert pod.labels == want["labels"]
    assert pod.scheduler_name == "default-scheduler"
    # DefaultTolerationSeconds' tolerations, as admission adds them.
    assert {(t.key, t.effect, t.toleration_seconds) for t in pod.tolerations} >= {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        (
            "unknown-priority-class",
            DEPLOYMENT.replace("CPU", "1"),
            "spec.priorityClassName: no PriorityClass 'high'",
        ),
        (
            "no-pod-template",
            "kind: Service\nmetadata: {name: s}\nspec: {}\n",
            "Service s: not a Pod and has no spec.template",
        ),
        (
            "bad-quantity",
            DEPLOYMENT.replace("CPU", "lots").replace("priorityClassName: high", ""),
            "lots",
        ),
        ("not-yaml", "kind: [", "f.yaml"),
        ("empty", "", "no object"),
    ],
)
def test_bad_manifests_name_the_object_and_field(name: str, text: str, error: str) -> None:
    with pytest.raises(CommandError, match=error.replace("[", r"\[").replace(".", r"\.")):
        pods_from_manifests(text, "f.yaml", namespace=None, classes={})


def small_recording(tmp_path: Path) -> Path:
    nodes = [make_node(f"n{i}", cpu="2") for i in range(3)]
    nodes[2]["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    pods = [make_pod("busy", namespace="x", cpu="1500m", node_name="n0")]
    for i, p in enumerate(pods):
        p["metadata"]["uid"] = f"u{i}"
    pc = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    rec = Recording(objects={"nodes": nodes, "pods": pods, "priorityclasses": [pc]}, source="test")
    path = tmp_path / "cluster.json.zst"
    rec.save(path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_a_manifest_against_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT.replace("CPU", "1"))
    code, out, _ = run(
        capsys, "-f", str(manifest), "--cluster", str(small_recording(tmp_path)), "-o", "json"
    )
    assert code == 0
    doc = orjson.loads(out)
    assert doc["chosen"] == "n1" and doc["pod"] == "shop/web-explain"
    verdicts = {n["node"]: (n["outcome"], n["plugin"]) for n in doc["nodes"]}
    assert verdicts == {
        "n1": ("feasible", ""),
        "n0": ("rejected", "NodeResourcesFit"),
        "n2": ("rejected", "TaintToleration"),
    }


def test_table_and_why_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT.replace("CPU", "3"))
    rec = str(small_recording(tmp_path))
    code, out, _ = run(capsys, "-f", str(manifest), "--cluster", rec)
    assert code == 1
    assert "FailedScheduling  0/3 nodes are available:" in out
    assert "NodeResourcesFit: Insufficient cpu" in out
    code, out, _ = run(capsys, "-f", str(manifest), "--cluster", rec, "--node", "n2")
    assert code == 1
    assert out.startswith(f"n2 was rejected by TaintToleration: {ERR_REASON_UNTOLERATED}")


def test_a_generated_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT.replace("CPU", "100m").replace("priorityClassName: high", ""))
    code, out, _ = run(
        capsys,
        "-f",
        str(manifest),
        "--workload",
        "scheduling-basic",
        "--scale",
        "0.04",
        "-o",
        "json",
    )
    assert code == 0
    doc = orjson.loads(out)
    assert doc["numAllNodes"] == 200 and doc["sampled"] and doc["evaluatedNodes"] < 200


@pytest.mark.parametrize(
    ("name", "argv", "error"),
    [
        ("no-pod", [], "give one pod"),
        ("both", ["ns/p", "-f", "x.yaml"], "give one pod"),
        ("unknown-workload", ["-f", "MANIFEST", "--workload", "nope"], "unknown workload 'nope'"),
        (
            "missing-recording",
            ["-f", "MANIFEST", "--cluster", "/nonexistent.zst"],
            "/nonexistent.zst",
        ),
        (
            "missing-pod",
            ["ns/absent", "--workload", "scheduling-basic", "--scale", "0.01"],
            "pod ns/absent not found",
        ),
    ],
)
def test_errors_exit_2(
    name: str, argv: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(DEPLOYMENT.replace("CPU", "1"))
    code, _, err = run(capsys, *(str(manifest) if a == "MANIFEST" else a for a in argv))
    assert code == 2
    assert error in err
