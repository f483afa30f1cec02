"""``ksched run`` for the end-to-end benchmark, with a stats file.

``python -m ksched.bench.kschedproc --config C --stats-file F [--ready-file R]`` runs
exactly what ``ksched run --config C --leader-elect=false`` runs (the same
:func:`ksched.run.resolve_config`, :func:`~ksched.run.check_supported`,
:func:`~ksched.run.profiles_from_config`, API client and :func:`ksched.run.serve`),
and adds what the harness needs while ``ksched run`` serves no ``/metrics`` yet
(issue 7):

* ``--ready-file``: written once the informers have synced and the scheduling loop
  runs (the moment kube-scheduler's ``scheduler_cache_size`` reaches the node count);
* ``--stats-file``: on ``SIGUSR1``, and once more after the graceful shutdown that
  ``SIGTERM`` starts, the scheduler's Prometheus exposition (the same
  ``scheduler_scheduling_attempt_duration_seconds`` the harness scrapes from
  kube-scheduler) and the scheduling-cycle latencies, as JSON, replaced atomically.
  The signal handler runs on the event loop, so the metrics are read between cycles.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import generate_latest

from ksched import aio, run
from ksched.config import ConfigError
from ksched.scheduler import Scheduler

log = logging.getLogger(__name__)


def memory_top(limit: int = 30) -> list[str]:
    """The heaviest allocation sites (file and line) while ``--tracemalloc`` is on."""
    import gc
    import tracemalloc

    if not tracemalloc.is_tracing():
        return []
    gc.collect()
    snap = tracemalloc.take_snapshot()
    total = sum(st.size for st in snap.statistics("filename"))
    out = [f"total traced {total / 2**20:.1f} MiB"]
    for key in ("filename", "lineno"):
        for st in snap.statistics(key)[:limit]:
            frame = st.traceback[0]
            where = frame.filename if key == "filename" else f"{frame.filename}:{frame.lineno}"
            out.append(f"{st.size / 2**20:8.1f} MiB {st.count:9d}  {where}")
    return out


def stats_of(sched: Scheduler, seq: int) -> dict[str, Any]:
    """What the stats file holds: counters, the metrics text, cycle percentiles (and the
    heaviest allocation sites under ``--tracemalloc``)."""
    import numpy as np

    lat = sched.stats.attempt_ns
    p50 = p99 = 0.0
    if lat:
        arr = np.frombuffer(lat, dtype=np.int64)
        p50, p99 = (float(x) / 1e3 for x in np.percentile(arr, [50, 99]))
    return {
        "seq": seq,
        "time": time.time(),
        "bound": sched.stats.bound,
        "scheduled": sched.stats.scheduled,
        "unschedulable": sched.stats.unschedulable,
        "errors": sched.stats.errors,
        "bind_errors": sched.stats.bind_errors,
        "attempts": len(lat),
        "cycle_p50_us": p50,
        "cycle_p99_us": p99,
        "metrics": generate_latest(run.metrics_registry(sched)).decode(),
        "memory": memory_top(),
    }


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


async def _main(args: argparse.Namespace) -> int:
    from ksched.client.api import connect
    from ksched.options import parse, resolve_gates

    argv = ["--leader-elect=false"]
    if args.config:
        argv.append(f"--config={args.config}")
    elif args.kubeconfig:
        argv.append(f"--kubeconfig={args.kubeconfig}")
    if args.feature_gates:
        argv.append(f"--feature-gates={args.feature_gates}")
    opts = parse(argv)
    gate = resolve_gates(opts)
    cfg = run.resolve_config(opts, gate)
    if args.config and args.kubeconfig:
        cfg.client_connection.kubeconfig = args.kubeconfig
    run.check_supported(cfg)
    gates = gate.config_gates()
    profiles = run.profiles_from_config(cfg, gates)
    stop = asyncio.Event()
    run.install_signal_handlers(stop)
    stats_path = Path(args.stats_file)
    holder: list[Scheduler] = []
    seq = 0

    def dump() -> None:
        nonlocal seq
        if holder:
            seq += 1
            write_atomic(stats_path, orjson.dumps(stats_of(holder[0], seq)))

    def started(sched: Scheduler) -> None:
        holder.append(sched)
        if args.ready_file:
            write_atomic(Path(args.ready_file), f"{os.getpid()}\n".encode())

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump)
    cc = cfg.client_connection
    api = connect(kubeconfig=cc.kubeconfig, qps=cc.qps, burst=cc.burst)
    try:
        await run.serve(cfg, api, stop=stop, profiles=profiles, on_started=started, gates=gates)
    finally:
        await api.close()
    dump()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ksched.bench.kschedproc")
    p.add_argument("--config", required=True)
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--stats-file", required=True)
    p.add_argument("--ready-file", default=None)
    p.add_argument("--feature-gates", default="", help="as ksched run's --feature-gates")
    p.add_argument(
        "--tracemalloc", action="store_true", help="trace allocations (slow; for memory profiles)"
    )
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=0)
    args = p.parse_args(argv)
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
    logging.basicConfig(
        level=logging.INFO if args.verbosity > 0 else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return aio.run(_main(args))
    except (run.RunError, ConfigError) as exc:
        log.error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
