"""What the tool commands share: the configuration and the cluster they read.

:func:`load_scheduler_config` loads a KubeSchedulerConfiguration exactly as ``ksched
run --config`` does (the installed out-of-tree plugins are known; no file: the
defaults), and :func:`scheduler_parts` builds its profiles and extenders with the same
functions, for the feature gates of ``--feature-gates`` (:func:`gates_of`: kube-scheduler's
syntax and checks; the workload gates turn on pod groups, StorageCapacityScoring the
volume capacity score). :func:`open_cluster` opens the cluster a command reads:

* a live API server (``--kubeconfig``/``--master``), always through
  :class:`~ksched.readonly.ReadOnlyClusterAPI`, so nothing a command runs can write;
* ``--cluster FILE``: a recording (:mod:`ksched.recording`) loaded into the embedded
  cluster;
* ``--workload NAME [--scale X]``: a cluster generated from a workload file of
  ``ksched/bench/workloads/``.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ksched.cluster import APIError, ClusterAPI
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    FeatureGates,
    KubeSchedulerConfiguration,
    load_config,
    load_config_bytes,
)
from ksched.config.features import FeatureGate, FeatureGateError
from ksched.framework.extender import HTTPExtender, build_extenders
from ksched.framework.profile import Profile
from ksched.framework.registry import default_registry
from ksched.profiles import build_profiles
from ksched.readonly import ReadOnlyClusterAPI
from ksched.recording import Recording

__all__ = [
    "ClusterSource",
    "add_cluster_arguments",
    "add_gate_arguments",
    "gates_of",
    "load_scheduler_config",
    "open_cluster",
    "scheduler_parts",
]

_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class CommandError(Exception):
    """A command cannot run; the message says why (exit status 2)."""


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="A=true,B=false",
        help="feature gates, as kube-scheduler's --feature-gates (repeatable); e.g. "
        "GenericWorkload=true,GangScheduling=true for pod groups",
    )


def gates_of(args: argparse.Namespace) -> FeatureGates:
    """The :class:`~ksched.config.FeatureGates` of ``--feature-gates`` (v1.36's defaults
    without it). Raises :class:`CommandError` with kube-scheduler's message."""
    values = getattr(args, "feature_gates", None) or []
    if not values:
        return DEFAULT_FEATURE_GATES
    try:
        gate = FeatureGate.from_flags(values)
    except FeatureGateError as exc:
        raise CommandError(f"--feature-gates: {exc}") from exc
    gate.log_not_acted_on()
    return gate.config_gates()


def load_scheduler_config(
    path: str | None, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> KubeSchedulerConfiguration:
    """The config at ``path`` (or the defaults), validated with the installed plugins
    and ``gates``. Raises :class:`~ksched.config.ConfigError`."""
    registry = default_registry()
    if not path:
        return load_config_bytes(_EMPTY_CONFIG, gates=gates)
    return load_config(
        path,
        extra_plugins=registry.names(),
        extension_points=registry.extension_points(),
        gates=gates,
    )


def scheduler_parts(
    cfg: KubeSchedulerConfiguration, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> tuple[dict[str, Profile], list[HTTPExtender]]:
    """The profiles and extenders ``ksched run`` would build from ``cfg``. Raises
    :class:`~ksched.profiles.ProfileError` or
    :class:`~ksched.framework.extender.ExtenderError`."""
    return build_profiles(cfg, gates=gates), build_extenders(cfg.extenders)


def add_cluster_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("the cluster (default: the live one of the kubeconfig)")
    g.add_argument("--kubeconfig", default=None, help="kubeconfig of the live cluster")
    g.add_argument("--master", default="", help="API server URL (overrides the kubeconfig)")
    g.add_argument(
        "--cluster",
        metavar="FILE",
        default=None,
        help="a recording (ksched record) instead of the live cluster",
    )
    g.add_argument(
        "--workload",
        metavar="NAME",
        default=None,
        help="a cluster generated from a workload file (ksched bench's: scheduling-basic, ...)",
    )
    g.add_argument("--scale", type=float, default=1.0, help="with --workload: multiply its counts")


@dataclass(slots=True)
class ClusterSource:
    """The cluster a command reads and how to let go of it."""

    api: ClusterAPI
    description: str
    close: Callable[[], Awaitable[None]]
    #: PriorityClass name → value, for pods from manifests.
    priority_classes: Callable[[], Awaitable[dict[str, int]]]


async def _no_close() -> None:
    return None


def recording_of(args: argparse.Namespace) -> Recording | None:
    """The recording ``--cluster``/``--workload`` name, or None for the live cluster."""
    if args.cluster and args.workload:
        raise CommandError("--cluster and --workload are exclusive")
    if args.cluster:
        return Recording.load(args.cluster)
    if args.workload:
        from ksched.bench import workload
        from ksched.replay import recording_from_workload

        spec = workload.find(args.workload, workload.load_all()).scaled(args.scale)
        return recording_from_workload(spec)
    return None


async def open_cluster(
    args: argparse.Namespace, cfg: KubeSchedulerConfiguration, *, mode: str
) -> ClusterSource:
    """The cluster of ``args`` (see the module docstring). Raises :class:`CommandError`,
    :class:`~ksched.recording.RecordingError`,
    :class:`~ksched.bench.workload.WorkloadError`."""
    rec = recording_of(args)
    if rec is not None:
        from ksched.sim.recorded import load_recording

        cluster = load_recording(rec)
        classes = rec.priority_classes()

        async def recorded_classes() -> dict[str, int]:
            return classes

        return ClusterSource(cluster, rec.source or "a recording", _no_close, recorded_classes)
    from ksched.client.api import connect
    from ksched.client.kubeconfig import ClientConfigError

    cc = cfg.client_connection
    try:
        client = connect(
            kubeconfig=args.kubeconfig or cc.kubeconfig, master=args.master, qps=cc.qps,
            burst=cc.burst,
        )  # fmt: skip
    except ClientConfigError as exc:
        raise CommandError(f"cannot configure the API client: {exc}") from exc
    api = ReadOnlyClusterAPI(client, mode=mode)

    async def live_classes() -> dict[str, int]:
        try:
            listed = await api.list(kind="priorityclasses")
        except APIError:
            return {}
        return _classes(listed.items)

    return ClusterSource(api, client.config.host, client.close, live_classes)


def _classes(items: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for pc in items:
        name = (pc.get("metadata") or {}).get("name")
        if isinstance(name, str) and isinstance(pc.get("value"), int):
            out[name] = pc["value"]
        if pc.get("globalDefault") and isinstance(pc.get("value"), int):
            out[""] = pc["value"]
    return out
