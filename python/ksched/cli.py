"""The ``ksched`` and ``kube-scheduler`` command lines.

``kube-scheduler [flags]`` is kube-scheduler v1.36's command: its 62 flags with pflag's
syntax (:mod:`ksched.options`), its help, its error output (the usage then
``Error: ...``, exit 1) and ``--version``; ``ksched run [flags]`` is the same command.
``ksched simulate`` runs the whole scheduler on the embedded in-memory cluster and
reports its figures (``--config`` takes the profiles from a KubeSchedulerConfiguration);
``ksched bench`` runs the benchmark workload files (embedded, or on a real apiserver
side by side with kube-scheduler); ``ksched validate-config FILE`` prints the effective
configuration or every error in it. Out-of-tree plugins installed under the
``ksched.plugins`` entry points are known to all of them. The help texts of the
``ksched`` subcommands are plain text (what ``--help`` prints), written here rather than
taken from docstrings; ``ksched run --help`` is kube-scheduler's. Logs are klog's text
format (:mod:`ksched.logs`) from the first line on.
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import orjson

from ksched import __version__, logs

#: ``ksched simulate`` exit statuses.
EXIT_ALL_PLACED = 0
EXIT_UNSCHEDULABLE = 1
EXIT_ERROR = 2


def _simulate(args: argparse.Namespace) -> int:
    from ksched import simulate
    from ksched.sim.workloads import WORKLOADS

    if args.workload not in WORKLOADS:
        print(
            f"ksched simulate: unknown workload {args.workload!r} "
            f"(known: {', '.join(sorted(WORKLOADS))})",
            file=sys.stderr,
        )
        return EXIT_ERROR
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
            return EXIT_ERROR
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
        timeout=args.timeout,
    )
    print(report.format())
    if args.json:
        with open(args.json, "wb") as f:
            f.write(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2))
    if report.outcome == simulate.ALL_PLACED:
        return EXIT_ALL_PLACED
    if report.outcome == simulate.UNSCHEDULABLE:
        return EXIT_UNSCHEDULABLE
    print(
        f"ksched simulate: --timeout {args.timeout:g}s reached with {report.pending} pods "
        "pending while the scheduler could still make progress",
        file=sys.stderr,
    )
    return EXIT_ERROR


def kube_scheduler(
    argv: Sequence[str], prog: str = "kube-scheduler", *, shadow: bool = False
) -> int:
    """``kube-scheduler [flags]`` (cobra's ``Execute`` then ``runCommand``); with
    ``shadow``, ``ksched shadow [flags]`` (the same flags and ``--shadow-scheduler-name``)."""
    from ksched.options import LONG_HELP, SHADOW_HELP, FlagError, HelpRequested, parse
    from ksched.options.flags import new_flag_sets

    def usage() -> str:
        return new_flag_sets(shadow=shadow).usage()

    long_help = SHADOW_HELP if shadow else LONG_HELP
    try:
        opts = parse(argv, shadow=shadow)
    except HelpRequested:
        print(long_help + "\n\n" + usage(), end="")
        return 0
    except FlagError as exc:
        print(usage(), file=sys.stderr)
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if opts.get("help"):
        print(long_help + "\n\n" + usage(), end="")
        return 0
    if any(opts.args):
        got = ", ".join(orjson.dumps(a).decode() for a in opts.args)
        print(f'Error: "{prog}" does not take any arguments, got [{got}]', file=sys.stderr)
        return 1
    from ksched import run

    return run.main(opts)


def _run(args: argparse.Namespace) -> int:
    return kube_scheduler(args.flags, prog="ksched run")


def _shadow(args: argparse.Namespace) -> int:
    return kube_scheduler(args.flags, prog="ksched shadow", shadow=True)


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
    shadow = sub.add_parser(
        "shadow",
        help="decide beside the cluster's scheduler and compare, writing nothing "
        "(kube-scheduler's flags and --shadow-scheduler-name; see 'ksched shadow --help')",
        add_help=False,
        prefix_chars="\0",
    )
    shadow.add_argument("flags", nargs=argparse.REMAINDER)
    shadow.set_defaults(func=_shadow)


_DESCRIPTION = """\
ksched: a drop-in replacement for kube-scheduler v1.36 with a Rust core.

It reads kube-scheduler's KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1),
claims the pods whose spec.schedulerName matches one of its profiles and binds them
through the Kubernetes API. Out-of-tree plugins installed under the 'ksched.plugins'
entry points are known to every command."""

_EPILOG = """\
examples:
  ksched simulate --nodes 5000 --pods 10000       the scheduler on an embedded cluster
  ksched bench --workload basic --scale 0.1       the benchmark workloads, measured
  ksched run --config sched.yaml                  schedule a real cluster
  ksched explain default/web-1 --node node-7      why a pod is pending, why not node-7
  ksched replay cluster.json.zst --config a.yaml --config b.yaml
                                                  a configuration change, A/B tested
  ksched shadow --config sched.yaml               judge the active scheduler, write nothing
  ksched validate-config sched.yaml               the effective configuration

'ksched COMMAND --help' explains each command's options."""


def _simulate_help() -> tuple[str, str]:
    from ksched.sim.workloads import WORKLOADS

    lines = []
    for name, wl in sorted(WORKLOADS.items()):
        nodes, existing, pods = wl.sizes
        text = (
            f"{wl.description}; default {nodes:,} nodes, {existing:,} existing pods, "
            f"{pods:,} new pods"
        )
        lines.append(
            textwrap.fill(
                text,
                width=88,
                initial_indent=f"  {name:<20} ",
                subsequent_indent=" " * 23,
            )
        )
    description = (
        "Run the whole scheduler, unchanged, on the embedded in-memory cluster: create "
        "the nodes and the existing (already bound) pods, start the scheduler, create "
        "the new pods, and report throughput, attempt latency percentiles, peak RSS "
        "and a placement summary. The run ends when every pod is bound, or when no "
        "progress is possible (every pod left waits as unschedulable and nothing is in "
        "flight); it then counts the unschedulable pods with their FailedScheduling "
        "messages."
    )
    epilog = (
        "workloads (modelled on kube-scheduler's scheduler_perf):\n"
        + "\n".join(lines)
        + "\n\nsizes not given follow the workload's defaults, scaled to --nodes.\n\n"
        "exit status:\n"
        f"  {EXIT_ALL_PLACED}  every pod was placed\n"
        f"  {EXIT_UNSCHEDULABLE}  some pods are unschedulable (no progress was possible)\n"
        f"  {EXIT_ERROR}  error: bad arguments or configuration, or --timeout passed while "
        "pods were still being scheduled"
    )
    return description, epilog


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="ksched", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=raw
    )
    parser.add_argument("--version", action="version", version=f"ksched {__version__}")
    parser.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=0,
        metavar="N",
        help="log verbosity, as kube-scheduler's -v (0: warnings and errors, 1-3: info, "
        "4 and up: debug)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    description, epilog = _simulate_help()
    sim = sub.add_parser(
        "simulate",
        help="run the scheduler on the embedded cluster and report its figures",
        description=description,
        epilog=epilog,
        formatter_class=raw,
    )
    sim.add_argument(
        "--workload",
        default="basic",
        metavar="NAME",
        help="the workload to run (listed below; default basic)",
    )
    sim.add_argument("--nodes", type=int, help="nodes to create (default: the workload's)")
    sim.add_argument(
        "--pods",
        type=int,
        help="new pods to schedule (default: the workload's, scaled to --nodes)",
    )
    sim.add_argument(
        "--existing-pods",
        type=int,
        help="pods bound before the run starts (default: the workload's, scaled to --nodes)",
    )
    sim.add_argument(
        "--seed", type=int, default=None, help="seed of the workload and the tie-breaking"
    )
    sim.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="end the run after this long even if pods are still being scheduled "
        "(a last resort; exit status 2; default 600)",
    )
    sim.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    sim.add_argument("--progress", action="store_true", help="progress bar even without a tty")
    sim.add_argument("--no-progress", action="store_true", help="no progress bar")
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
    from ksched.commands import explain as explain_command
    from ksched.commands import record as record_command
    from ksched.commands import replay as replay_command

    explain_command.add_parser(sub)
    record_command.add_parser(sub)
    replay_command.add_parser(sub)
    check = sub.add_parser(
        "validate-config",
        help="print the effective configuration, or every error (exit 1)",
        description="Load, default and validate a KubeSchedulerConfiguration as "
        "'ksched run --config' would; print the effective config (what "
        "--write-config-to writes) or every error.",
    )
    check.add_argument("file", metavar="FILE", help="the KubeSchedulerConfiguration file")
    check.set_defaults(func=_validate_config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    logs.configure(verbosity=0)
    if argv[:1] == ["run"]:
        # kube-scheduler's flags are parsed by its own (pflag) parser, untouched.
        return kube_scheduler(argv[1:], prog="ksched run")
    if argv[:1] == ["shadow"]:
        return kube_scheduler(argv[1:], prog="ksched shadow", shadow=True)
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
