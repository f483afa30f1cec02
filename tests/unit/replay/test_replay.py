"""``ksched replay``: deterministic for a seed, configurations compared side by side,
arrivals applied in order, clusters generated from workload files, the command line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ksched import cli, replay
from ksched.bench import workload
from ksched.config import load_config_bytes
from ksched.recording import Arrival, Recording
from ksched.sim.workloads import make_node, make_pod

WORKLOADS = workload.load_all()

STRATEGY = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: TYPE}}
"""


def config(label: str, strategy: str) -> replay.ReplayConfig:
    return replay.ReplayConfig(
        label, load_config_bytes(STRATEGY.replace("TYPE", strategy).encode())
    )


def generated(key: str, scale: float) -> Recording:
    return replay.recording_from_workload(WORKLOADS[key].scaled(scale))


def churn_recording() -> Recording:
    """Two full nodes; pods arrive and leave during the window."""
    nodes = [make_node(f"n{i}", cpu="1") for i in range(2)]
    bound = [make_pod(f"old-{i}", namespace="x", cpu="900m", node_name=f"n{i}") for i in range(2)]
    arrivals = [
        Arrival(1.0, "ADDED", "pods", make_pod("early", namespace="x", cpu="500m")),  # fits nowhere
        Arrival(2.0, "DELETED", "pods", bound[0]),
        Arrival(3.0, "ADDED", "pods", make_pod("late", namespace="x", cpu="500m")),
        Arrival(4.0, "ADDED", "nodes", make_node("n2", cpu="4")),
    ]
    pending = [make_pod(f"pend-{i}", namespace="x", cpu="50m") for i in range(3)]
    return Recording(
        objects={"nodes": nodes, "pods": bound + pending}, arrivals=arrivals, duration=5.0
    )


@pytest.mark.parametrize(
    ("name", "rec"),
    [
        ("preemption", generated("preemption", 0.02)),
        ("topology-spreading", generated("topology-spreading", 0.02)),
        ("pod-anti-affinity", generated("pod-anti-affinity", 0.05)),
        ("arrivals-and-departures", churn_recording()),
    ],
)
def test_deterministic_for_a_seed(name: str, rec: Recording) -> None:
    cfg = replay.default_replay_config()
    a, b = (replay.run(rec, [cfg], seed=5)[0] for _ in range(2))
    assert a.placements and a.placements == b.placements
    assert (a.preemptions, a.unschedulable) == (b.preemptions, b.unschedulable)


def test_arrivals_are_replayed_in_order() -> None:
    (r,) = replay.run(churn_recording(), [replay.default_replay_config()], seed=1)
    # "early" arrives while both nodes are full and fits once n0's pod left (the
    # deletion wakes it); "late" then fits too; the pending pods fit from the start.
    assert r.placed == 5 and r.unschedulable == 0
    assert r.placements["x/early"] == "n0"
    assert "x/late" in r.placements


def test_least_versus_most_allocated() -> None:
    rec = generated("scheduling-basic", 0.04)
    least, most = replay.run(
        rec, [config("least", "LeastAllocated"), config("most", "MostAllocated")]
    )
    assert least.placed == most.placed == 400
    assert most.nodes_used < least.nodes_used == 200
    assert most.utilization["cpu"].stdev > least.utilization["cpu"].stdev
    assert least.utilization["cpu"].mean == pytest.approx(most.utilization["cpu"].mean)
    text = replay.table(rec, [least, most])
    assert "least" in text and "most" in text and "nodes used" in text


def test_unschedulable_pods_and_spread_skew() -> None:
    rec = generated("topology-spreading", 0.02)
    rec.objects["pods"].append(make_pod("huge", namespace="x", cpu="64"))
    (r,) = replay.run(rec, [replay.default_replay_config()])
    assert r.unschedulable == 1
    ((count, message),) = r.pending_reasons
    assert count == 1 and message.startswith(f"0/{len(rec.of('nodes'))} nodes are available:")
    assert r.spread and all(
        s.skew <= s.max_skew for s in r.spread if s.when_unsatisfiable == "DoNotSchedule"
    )


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for strategy in ("LeastAllocated", "MostAllocated"):
        (tmp_path / f"{strategy}.yaml").write_text(STRATEGY.replace("TYPE", strategy))
    rec_path = tmp_path / "rec.json.zst"
    generated("scheduling-basic", 0.02).save(rec_path)
    argv = ["replay", str(rec_path), "--config", str(tmp_path / "LeastAllocated.yaml"),
            "--config", str(tmp_path / "MostAllocated.yaml"), "--json", str(tmp_path / "r.json"),
            "--plot", str(tmp_path / "r.png")]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "LeastAllocated" in out and "MostAllocated" in out
    doc = orjson.loads((tmp_path / "r.json").read_bytes())
    assert [r["label"] for r in doc["results"]] == ["LeastAllocated", "MostAllocated"]
    assert all(len(r["placements"]) == 200 for r in doc["results"])
    assert (tmp_path / "r.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("name", "argv", "error"),
    [
        ("no-source", ["replay"], "give a recording file or --workload"),
        (
            "both-sources",
            ["replay", "x.zst", "--workload", "basic"],
            "give a recording file or --workload",
        ),
        ("missing-file", ["replay", "/nonexistent.json.zst"], "/nonexistent.json.zst"),
        (
            "bad-config",
            ["replay", "--workload", "basic", "--config", "/nonexistent.yaml"],
            "cannot read config file",
        ),
    ],
)
def test_command_line_errors(
    name: str, argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert error in capsys.readouterr().err
