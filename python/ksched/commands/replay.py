"""``ksched replay``: a recorded cluster under several configurations, side by side.

::

    ksched replay cluster.json.zst --config least.yaml --config most.yaml --seed 1
    ksched replay --workload scheduling-basic --scale 0.1 --config a.yaml --config b.yaml

Each configuration replays the recording's pending and arriving pods on a fresh
embedded cluster (:mod:`ksched.replay`: deterministic for a seed); the table goes to
stdout, ``--json`` and ``--plot`` write the results and the side-by-side plot (the plot
needs ``pip install 'ksched[bench]'``). Without ``--config``, the default profile.

Exit status: 0 when every configuration placed every pod, 1 when some pod stayed
unschedulable under some configuration, 2 on an error.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from ksched.commands.common import CommandError, add_gate_arguments, gates_of, recording_of

__all__ = ["add_parser", "main"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a recording (or a workload file) under several configurations, side by side",
        description="Schedule a recorded cluster's pending and arriving pods on the embedded "
        "cluster under each --config (deterministic for a --seed) and compare: pods placed "
        "and unschedulable, preemption victims, per-node utilization and its spread, "
        "topology-spread skew, throughput.",
        epilog="exit status: 0 every pod placed under every config, 1 some pod unschedulable, "
        "2 error",
    )
    p.add_argument("recording", nargs="?", metavar="RECORDING", help="a ksched record file")
    p.add_argument(
        "--workload", default=None, metavar="NAME", help="generate the cluster from a workload file"
    )
    p.add_argument("--scale", type=float, default=1.0, help="with --workload: scale its counts")
    p.add_argument(
        "--config",
        action="append",
        default=None,
        metavar="FILE",
        help="a KubeSchedulerConfiguration to replay under (repeatable)",
    )
    add_gate_arguments(p)
    p.add_argument("--seed", type=int, default=1, help="seed of the tie-breaks (default 1)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per configuration")
    p.add_argument("--json", default="", metavar="FILE", help="write the results as JSON")
    p.add_argument("--plot", default="", metavar="FILE", help="write the side-by-side plot (PNG)")
    p.set_defaults(func=main, cluster=None)


def main(args: argparse.Namespace) -> int:
    from ksched import replay
    from ksched.bench.workload import WorkloadError
    from ksched.config import ConfigError
    from ksched.profiles import ProfileError
    from ksched.recording import RecordingError

    try:
        if bool(args.recording) == bool(args.workload):
            raise CommandError("give a recording file or --workload NAME")
        args.cluster = args.recording
        rec = recording_of(args)
        assert rec is not None
        paths = args.config or []
        gates = gates_of(args)
        stems = Counter(Path(p).stem for p in paths)
        configs = [
            replay.load_replay_config(
                p,
                Path(p).stem if stems[Path(p).stem] == 1 else f"{i + 1}:{Path(p).stem}",
                gates=gates,
            )
            for i, p in enumerate(paths)
        ] or [replay.default_replay_config(gates)]
    except (CommandError, ConfigError, ProfileError, RecordingError, WorkloadError) as exc:
        print(f"ksched replay: {exc}", file=sys.stderr)
        return 2
    results = replay.run(rec, configs, seed=args.seed, timeout=args.timeout)
    print(replay.table(rec, results))
    if args.json:
        replay.write_json(args.json, rec, results)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot:
        try:
            replay.plot(args.plot, results)
            print(f"wrote {args.plot}", file=sys.stderr)
        except replay.PlotUnavailable as exc:
            print(f"ksched replay: no plot written: {exc}", file=sys.stderr)
    return 1 if any(r.unschedulable for r in results) else 0
