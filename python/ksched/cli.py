"""The ``ksched`` and ``kube-scheduler`` command lines.

``kube-scheduler [flags]`` is kube-scheduler v1.36's command: its 62 flags with pflag's
syntax (:mod:`ksched.options`), its help, its error output (the usage then
``Error: ...``, exit 1) and ``--version``; ``ksched run [flags]`` is the same command.
``ksched simulate`` runs the whole scheduler on the embedded in-memory cluster and
reports its figures (``--config`` takes the profiles from a KubeSchedulerConfiguration);
``ksched validate-config FILE`` prints the effective configuration or every error in it.
Out-of-tree plugins installed under the ``ksched.plugins`` entry points are known to
all of them. Logs are klog's text format (:mod:`ksched.logs`) from the first line on.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from ksched import __version__, logs


def _simulate(args: argparse.Namespace) -> int:
    from ksched import simulate
    from ksched.sim.workloads import WORKLOADS

    if args.workload not in WORKLOADS:
        print(
            f"ksched simulate: unknown workload {args.workload!r} "
            f"(known: {', '.join(sorted(WORKLOADS))})",
            file=sys.stderr,
        )
        return 2
    profiles = None
    extenders: list[Any] = []
    if args.config:
        from ksched.config import ConfigError
        from ksched.framework.extender import ExtenderError
        from ksched.profiles import ProfileError

        try:
            profiles, extenders = simulate.load_setup(args.config)
        except (ConfigError, ProfileError, ExtenderError, ValueError) as exc:
            print(f"ksched simulate: {exc}", file=sys.stderr)
            return 1
    # Sizes not given follow the workload's, scaled to the nodes given.
    d_nodes, d_existing, d_pods = WORKLOADS[args.workload].sizes
    nodes = d_nodes if args.nodes is None else args.nodes
    scale = nodes / d_nodes
    report = simulate.run(
        nodes=nodes,
        pods=round(d_pods * scale) if args.pods is None else args.pods,
        existing_pods=round(d_existing * scale)
        if args.existing_pods is None
        else args.existing_pods,
        workload=args.workload,
        seed=args.seed,
        profiles=profiles,
        extenders=extenders,
        progress=(not args.no_progress and sys.stderr.isatty()) or args.progress,
    )
    print(report.format())
    if args.json:
        with open(args.json, "wb") as f:
            f.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2))
    return 0 if report.scheduled >= report.pods else 1


def kube_scheduler(argv: Sequence[str], prog: str = "kube-scheduler") -> int:
    """``kube-scheduler [flags]`` (cobra's ``Execute`` then ``runCommand``)."""
    from ksched.options import LONG_HELP, FlagError, HelpRequested, parse
    from ksched.options.flags import new_flag_sets

    def usage() -> str:
        return new_flag_sets().usage()

    try:
        opts = parse(argv)
    except HelpRequested:
        print(LONG_HELP + "\n\n" + usage(), end="")
        return 0
    except FlagError as exc:
        print(usage(), file=sys.stderr)
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if opts.get("help"):
        print(LONG_HELP + "\n\n" + usage(), end="")
        return 0
    if any(opts.args):
        got = ", ".join(orjson.dumps(a).decode() for a in opts.args)
        print(f'Error: "{prog}" does not take any arguments, got [{got}]', file=sys.stderr)
        return 1
    from ksched import run

    return run.main(opts)


def _run(args: argparse.Namespace) -> int:
    return kube_scheduler(args.flags, prog="ksched run")


def _validate_config(args: argparse.Namespace) -> int:
    from ksched.config import validate_config_main
    from ksched.framework.registry import default_registry

    registry = default_registry()
    return validate_config_main(
        args.file, extra_plugins=registry.names(), extension_points=registry.extension_points()
    )


def _add_run_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ksched run``: kube-scheduler's command line, flags and all."""
    p = sub.add_parser(
        "run",
        help="schedule a real cluster until SIGTERM (kube-scheduler's flags; see "
        "'kube-scheduler --help')",
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("flags", nargs=argparse.REMAINDER)
    p.set_defaults(func=_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ksched", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"ksched {__version__}")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, help="log verbosity")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="run the scheduler on the embedded cluster")
    sim.add_argument("--nodes", type=int, help="nodes (default 5000)")
    sim.add_argument(
        "--pods",
        type=int,
        help="new pods to schedule (default: 2 per node; preemption: 1 per node)",
    )
    sim.add_argument(
        "--existing-pods",
        type=int,
        help="pods bound before the run (default: none; preemption: 4 low-priority pods per node)",
    )
    sim.add_argument("--workload", default="basic")
    sim.add_argument("--seed", type=int, default=None)
    sim.add_argument("--json", help="also write the report as JSON to this file")
    sim.add_argument("--progress", action="store_true", help="progress bar even without a tty")
    sim.add_argument("--no-progress", action="store_true")
    sim.add_argument(
        "--config",
        metavar="FILE",
        help="KubeSchedulerConfiguration whose profiles schedule the workload "
        "(its pods use schedulerName default-scheduler)",
    )
    sim.set_defaults(func=_simulate)
    _add_run_command(sub)
    from ksched.bench import command as bench_command

    bench_command.add_parser(sub)
    check = sub.add_parser(
        "validate-config",
        help="print the effective configuration, or every error (exit 1)",
        description="Load, default and validate a KubeSchedulerConfiguration as "
        "'ksched run --config' would; print the effective config (what "
        "--write-config-to writes) or every error.",
    )
    check.add_argument("file", metavar="FILE")
    check.set_defaults(func=_validate_config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logs.configure(verbosity=0)
    if argv[:1] == ["run"]:
        # kube-scheduler's flags are parsed by its own (pflag) parser, untouched.
        return kube_scheduler(argv[1:], prog="ksched run")
    args = build_parser().parse_args(argv)
    logs.configure(verbosity=args.verbosity)
    if args.verbosity <= 0:
        logging.getLogger().setLevel(logging.WARNING)
    return int(args.func(args))


def kube_scheduler_main() -> int:
    """The ``kube-scheduler`` console entry point."""
    logs.configure(verbosity=0)
    return kube_scheduler(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
