"""``ksched bench``: the workload files, on the embedded cluster or a real apiserver.

::

    ksched bench --workload basic                      # embedded, 5,000 nodes
    ksched bench --workload all --scale 0.1            # every workload, a tenth of the size
    ksched bench --workload basic --against kube-scheduler --scale 0.2 --repeat 3
    ksched bench --workload basic --against kube-scheduler --against bare-binder --mode backlog

``--against kube-scheduler`` (or ``--target apiserver``) starts the test control plane
(etcd + kube-apiserver v1.36, :mod:`ksched.testing.controlplane`) and runs each workload
end to end with ksched and, with ``--against``, upstream kube-scheduler on the same
apiserver and nodes, alternating which goes first on each repeat; ``--against
bare-binder`` adds the bare binder (:mod:`ksched.bench.barebinder`), and the table gives
ksched's throughput as a fraction of it. The table goes to
stdout (progress to stderr), the JSON to ``--json`` and the throughput plot to
``--plot``. Exit status 0 when every measured pod was bound in every run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ksched.bench.report import BARE_BINDER, KSCHED, UPSTREAM, Comparison, Progress, RunResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark workloads (embedded cluster, or real apiserver side by side with "
        "kube-scheduler)",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument(
        "--workload",
        action="append",
        default=None,
        help="workload file stem or scheduler_perf name (repeatable; 'all' for every file; "
        "default: scheduling-basic)",
    )
    p.add_argument("--target", choices=("embedded", "apiserver"), default=None)
    p.add_argument(
        "--against",
        choices=(UPSTREAM, BARE_BINDER),
        action="append",
        default=None,
        help="also run upstream kube-scheduler v1.36, or the bare binder (a client that "
        "only POSTs bindings round-robin, the end-to-end limit), on the same apiserver "
        "(repeatable; implies --target apiserver)",
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply every count param")
    p.add_argument("--nodes", type=int, default=None, help="set initNodes")
    p.add_argument("--existing-pods", type=int, default=None, help="set initPods")
    p.add_argument("--pods", type=int, default=None, help="set measurePods")
    p.add_argument("--repeat", type=int, default=1, help="runs per scheduler; medians reported")
    p.add_argument("--qps", type=float, default=5000.0, help="clientConnection.qps of both")
    p.add_argument("--burst", type=int, default=5000, help="clientConnection.burst of both")
    p.add_argument(
        "--mode",
        choices=("scheduler_perf", "backlog"),
        default="scheduler_perf",
        help="apiserver target: create the measured pods while the scheduler runs "
        "(first created to last bound, as scheduler_perf) or before it starts "
        "(backlog: first bound to last bound)",
    )
    p.add_argument(
        "--profile-dir",
        default=None,
        help="apiserver target: sample the ksched process with py-spy during each measured "
        "op and write collapsed stacks and a summary here",
    )
    p.add_argument(
        "--memory-profile",
        action="store_true",
        help="with --profile-dir: run ksched under tracemalloc and write its heaviest "
        "allocation sites (slows ksched; for memory only)",
    )
    p.add_argument("--concurrency", type=int, default=32, help="harness requests in flight")
    p.add_argument("--timeout", type=float, default=None, help="seconds per measured op")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--json", default="ksched-bench.json", help="results file ('' for none)")
    p.add_argument("--plot", default="ksched-bench.png", help="throughput plot ('' for none)")
    p.add_argument("--progress", action="store_true", help="progress line even without a tty")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=main)


def _specs(args: argparse.Namespace) -> list[Any]:
    from ksched.bench import workload

    known = workload.load_all()
    names = args.workload or ["scheduling-basic"]
    picked = list(known.values()) if "all" in names else [workload.find(n, known) for n in names]
    return [
        s.scaled(args.scale, nodes=args.nodes, existing_pods=args.existing_pods, pods=args.pods)
        for s in picked
    ]


def run_embedded(
    specs: Sequence[Any],
    *,
    repeat: int,
    seed: int | None,
    timeout: float,
    progress: Progress,
) -> list[Comparison]:
    from ksched.bench import embedded

    out = []
    for spec in specs:
        c = Comparison(spec.key, spec.label, "embedded")
        for i in range(repeat):
            tag = f"{spec.label} [embedded, ksched, run {i + 1}/{repeat}]"
            progress.show(tag)

            def show(text: str, tag: str = tag) -> None:
                progress.show(f"{tag}: {text}")

            r = embedded.run(spec, seed=seed, timeout=timeout, on_progress=show)
            progress.done(f"{tag}: {_summary(r)}")
            c.add(r)
        out.append(c)
    return out


def run_apiserver(
    specs: Sequence[Any],
    *,
    schedulers: Sequence[str],
    repeat: int,
    timeout: float,
    qps: float,
    burst: int,
    concurrency: int,
    mode: str,
    progress: Progress,
    profile_dir: str | None = None,
    memory_profile: bool = False,
) -> list[Comparison]:
    from ksched import aio
    from ksched.bench import e2e
    from ksched.testing.controlplane import ControlPlane, ensure_binaries

    progress.show("building/locating etcd, kube-apiserver and kube-scheduler v1.36")
    bin_dir = ensure_binaries()
    progress.show("starting etcd + kube-apiserver")
    out: list[Comparison] = []
    with ControlPlane(bin_dir=bin_dir) as cp:
        progress.done(f"control plane up in {cp.start_seconds:.1f}s at {cp.url}")

        async def main() -> None:
            bench = e2e.Bench(
                cp,
                options=e2e.E2EOptions(
                    qps=qps,
                    burst=burst,
                    concurrency=concurrency,
                    timeout=timeout,
                    mode=mode,
                    profile_dir=profile_dir,
                    memory_profile=memory_profile,
                ),
                on_progress=progress.show,
            )
            try:
                for spec in specs:
                    c = Comparison(
                        spec.key,
                        spec.label,
                        "apiserver" + ("-backlog" if mode == "backlog" else ""),
                    )
                    for i in range(repeat):
                        order = list(schedulers) if i % 2 == 0 else list(reversed(schedulers))
                        for which in order:
                            r = await bench.run(spec, which)
                            progress.done(
                                f"{spec.label} [apiserver, {which}, run {i + 1}/{repeat}]: "
                                f"{_summary(r)}"
                            )
                            c.add(r)
                    out.append(c)
            finally:
                await bench.close()

        aio.run(main())
    return out


def _summary(r: RunResult) -> str:
    return f"{r.bound}/{r.pods} bound in {r.seconds:.2f}s, {r.pods_per_second:,.0f} pods/s" + (
        f" ({'; '.join(r.notes)})" if r.notes else ""
    )


def main(args: argparse.Namespace) -> int:
    from ksched.bench import report
    from ksched.bench.workload import WorkloadError

    try:
        specs = _specs(args)
    except WorkloadError as exc:
        print(f"ksched bench: {exc}", file=sys.stderr)
        return 2
    target = args.target or ("apiserver" if args.against else "embedded")
    if args.against and target != "apiserver":
        print("ksched bench: --against needs --target apiserver", file=sys.stderr)
        return 2
    show = (not args.no_progress and sys.stderr.isatty()) or args.progress
    progress = Progress(sys.stderr if show else None)
    t0 = time.monotonic()
    comparisons: list[Comparison]
    if target == "embedded":
        comparisons = run_embedded(
            specs,
            repeat=args.repeat,
            seed=args.seed,
            timeout=args.timeout or 300.0,
            progress=progress,
        )
    else:
        comparisons = run_apiserver(
            specs,
            schedulers=[KSCHED, *dict.fromkeys(args.against or ())],
            repeat=args.repeat,
            timeout=args.timeout or 600.0,
            qps=args.qps,
            burst=args.burst,
            concurrency=args.concurrency,
            mode=args.mode,
            progress=progress,
            profile_dir=args.profile_dir,
            memory_profile=args.memory_profile,
        )
    print(report.table(comparisons))
    meta = {
        "target": target,
        "against": args.against,
        "scale": args.scale,
        "repeat": args.repeat,
        "mode": args.mode if target == "apiserver" else None,
        "qps": args.qps,
        "burst": args.burst,
        "seconds": time.monotonic() - t0,
        "argv": sys.argv[1:],
    }
    _write(args.json, lambda p: report.write_json(p, comparisons, meta=meta))
    try:
        _write(args.plot, lambda p: report.plot(p, comparisons))
    except report.PlotUnavailable as exc:
        print(f"ksched bench: no plot written: {exc}", file=sys.stderr)
    ok = all(r.completed for c in comparisons for rs in c.runs.values() for r in rs)
    return 0 if ok else 1


def _write(path: str, fn: Callable[[Path], None]) -> None:
    if path:
        fn(Path(path))
        print(f"wrote {path}", file=sys.stderr)
