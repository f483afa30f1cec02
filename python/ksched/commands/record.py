"""``ksched record``: save what the scheduler reads from a live cluster to one file.

::

    ksched record -o cluster.json.zst                     # the cluster as it is now
    ksched record -o cluster.json.zst --duration 10m      # and the pods arriving for 10 min

The cluster is read through the read-only client (:mod:`ksched.readonly`); what is
recorded, and how pods are stripped, is :mod:`ksched.recording`'s. Secrets are never
read. ``ksched replay`` and ``ksched explain --cluster`` read the file.

Exit status: 0 when written, 2 on an error (the cluster unreachable, a kind the
identity may not list is only a note in the file).
"""

from __future__ import annotations

import argparse
import sys

from ksched import aio
from ksched.commands.common import CommandError, load_scheduler_config
from ksched.config.duration import parse_duration

__all__ = ["add_parser", "main"]


def _duration(text: str) -> float:
    try:
        return parse_duration(text) / 1e9 if not text.replace(".", "").isdigit() else float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 90s, 10m)") from exc


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "record",
        help="save what the scheduler reads from a live cluster (for replay and explain)",
        description="List every kind the scheduler and its plugins read (nodes, pods, "
        "namespaces, controllers, PodDisruptionBudgets, storage and DRA objects, "
        "PriorityClasses; never Secrets) through a read-only client, strip pods to what "
        "scheduling uses, and with --duration follow pod and node arrivals and departures "
        "for that long. Writes zstd-compressed JSON (plain JSON unless the name ends in .zst).",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="e.g. cluster.json.zst")
    p.add_argument(
        "--duration",
        type=_duration,
        default=0.0,
        metavar="D",
        help="also record arrivals for this long (Go duration: 90s, 10m; default: none)",
    )
    p.add_argument("--kubeconfig", default=None, help="kubeconfig of the cluster")
    p.add_argument("--master", default="", help="API server URL (overrides the kubeconfig)")
    p.add_argument("--config", help="KubeSchedulerConfiguration (its clientConnection)")
    p.set_defaults(func=main)


async def _main(args: argparse.Namespace) -> int:
    from ksched.client.api import connect
    from ksched.client.kubeconfig import ClientConfigError
    from ksched.readonly import ReadOnlyClusterAPI
    from ksched.recording import record

    cfg = load_scheduler_config(args.config)
    cc = cfg.client_connection
    try:
        client = connect(
            kubeconfig=args.kubeconfig or cc.kubeconfig,
            master=args.master,
            qps=cc.qps,
            burst=cc.burst,
        )
    except ClientConfigError as exc:
        raise CommandError(f"cannot configure the API client: {exc}") from exc
    try:
        rec = await record(
            ReadOnlyClusterAPI(client, mode="ksched record"),
            duration=args.duration,
            source=client.config.host,
            on_progress=lambda text: print(f"listed {text}", file=sys.stderr),
        )
    finally:
        await client.close()
    rec.save(args.output)
    pods = len(rec.of("pods"))
    arrivals = sum(1 for a in rec.arrivals if a.type == "ADDED")
    print(
        f"wrote {args.output}: {len(rec.of('nodes'))} nodes, {pods} pods "
        f"({len(rec.pending_pods)} pending), {arrivals} arrivals"
        + (f"; not served: {', '.join(sorted(rec.skipped))}" if rec.skipped else ""),
        file=sys.stderr,
    )
    return 0


def main(args: argparse.Namespace) -> int:
    from ksched.cluster import APIError
    from ksched.config import ConfigError

    try:
        return aio.run(_main(args))
    except (CommandError, ConfigError, APIError, OSError) as exc:
        print(f"ksched record: {exc}", file=sys.stderr)
        return 2
