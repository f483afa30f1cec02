"""How ``ksched simulate --workload basic`` scales with the cluster: pods/s and CPU per
pod at 1,000, 5,000 and 15,000 nodes (issue 21: at 15,000 nodes and 30,000 pods, basic
keeps at least 60% of its 5,000-node rate).

Each point is the median of ``--repeat`` runs, each a fresh ``python -m ksched simulate``
process (the workload's default sizes scaled to the node count: 0.2 existing and 2 new
pods per node), so one run's heap never carries into the next. CPU per pod is the
process's CPU time over the measured window divided by the pods bound (the embedded
cluster's own work included). Writes the figures as JSON and the curve as a PNG::

    python benches/scaling.py --repeat 5 --json benches/scaling.json --plot benches/scaling.png

State the machine's load average beside any figure you quote (``uptime``); the script
records it at the start and the end of every run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

NODE_COUNTS = (1000, 5000, 15000)


def run_once(nodes: int, workload: str, seed: int) -> dict[str, Any]:
    """One ``ksched simulate`` process; its JSON report with the load averages."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        load_before = os.getloadavg()[0]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ksched",
                "simulate",
                f"--workload={workload}",
                f"--nodes={nodes}",
                f"--seed={seed}",
                f"--json={out}",
                "--no-progress",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        report: dict[str, Any] = json.loads(out.read_text())
    report["load_before"] = load_before
    report["load_after"] = os.getloadavg()[0]
    return report


def summarize(nodes: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    rates = [r["pods_per_second"] for r in runs]
    cpu_us = [r["cpu_seconds"] / max(r["scheduled"], 1) * 1e6 for r in runs]
    return {
        "nodes": nodes,
        "pods": runs[0]["pods"],
        "existing_pods": runs[0]["existing_pods"],
        "pods_per_second_median": statistics.median(rates),
        "pods_per_second": rates,
        "cpu_us_per_pod_median": statistics.median(cpu_us),
        "attempt_p99_us_median": statistics.median(r["attempt_p99_us"] for r in runs),
        "peak_rss_mib_median": statistics.median(r["peak_rss_mib"] for r in runs),
        "load": [(r["load_before"], r["load_after"]) for r in runs],
    }


def plot(points: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = [p["nodes"] for p in points]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(nodes, [p["pods_per_second_median"] for p in points], "o-", color="tab:blue")
    ax.set_xlabel("nodes")
    ax.set_ylabel("pods/s (median)", color="tab:blue")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(nodes, [p["cpu_us_per_pod_median"] for p in points], "s--", color="tab:red")
    ax2.set_ylabel("CPU µs per pod (median)", color="tab:red")
    ax2.set_ylim(bottom=0)
    ax.set_xticks(nodes)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--nodes", type=int, action="append", help="node counts (default 1k 5k 15k)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workload", default="basic")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default="benches/scaling.json")
    p.add_argument("--plot", default="benches/scaling.png")
    args = p.parse_args(argv)
    points = []
    for nodes in args.nodes or NODE_COUNTS:
        runs = [run_once(nodes, args.workload, args.seed) for _ in range(args.repeat)]
        point = summarize(nodes, runs)
        points.append(point)
        print(
            f"{nodes:>6} nodes, {point['pods']:>6} pods: "
            f"{point['pods_per_second_median']:>9,.0f} pods/s, "
            f"{point['cpu_us_per_pod_median']:6.1f} µs CPU per pod, "
            f"attempt p99 {point['attempt_p99_us_median']:.0f} µs "
            f"(load {min(x for r in point['load'] for x in r):.1f}"
            f"-{max(x for r in point['load'] for x in r):.1f})",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(points, indent=2) + "\n")
    if args.plot:
        loads = [x for pt in points for r in pt["load"] for x in r]
        title = (
            f"ksched simulate --workload {args.workload}: medians of {args.repeat} "
            f"(load average {min(loads):.1f}-{max(loads):.1f})"
        )
        plot(points, Path(args.plot), title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
