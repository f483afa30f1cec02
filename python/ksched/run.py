"""``ksched run``: schedule a real cluster until SIGTERM.

The composition root of the real thing: load the ``KubeSchedulerConfiguration``, apply
the command-line overrides kube-scheduler honours next to ``--config`` (``--kubeconfig``,
``--leader-elect``), build one :class:`~ksched.framework.profile.Profile` per configured
profile, connect to the API server (:mod:`ksched.client`), start the informers (list,
wait for the caches to sync — the handlers run inline, so that is also "handlers
synced"), then schedule.

Shutdown, as kube-scheduler's signal handling: the first SIGTERM (or SIGINT) stops
taking pods, lets the bindings and events in flight finish, stops the informers and
exits 0; a second signal exits at once with status 1.

Not here yet, and refused rather than faked: leader election (issue 7). With
``leaderElection.leaderElect: true`` (the v1 default) ``ksched run`` logs why and exits
1 unless ``--leader-elect=false`` is given. Scheduler extenders are refused too.
``clientConnection.contentType`` is ignored: ksched always speaks JSON (no protobuf).

Profiles come from :func:`ksched.profiles.build_profiles` (shared with ``ksched
simulate --config``); the config is validated against the installed out-of-tree plugins
(the ``ksched.plugins`` entry points) too.

Metrics: ``ksched_unclaimed_pods{scheduler_name}`` — pending pods whose schedulerName no
profile of this scheduler handles — is collected at scrape time from
:meth:`ksched.scheduler.Scheduler.unclaimed_pods` and registered in the scheduler's
registry (``Scheduler.metrics.registry``, :mod:`ksched.metrics`) when it has one, else in
prometheus_client's default registry. Serving ``/metrics`` is the HTTP server's job
(``ksched.server``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ksched import aio
from ksched.config import (
    ConfigError,
    KubeSchedulerConfiguration,
    load_config,
    load_config_bytes,
    write_config,
)
from ksched.framework.profile import Profile
from ksched.framework.registry import default_registry
from ksched.profiles import ProfileError, build_profiles
from ksched.scheduler import Scheduler

if TYPE_CHECKING:
    from ksched.cluster import ClusterAPI

log = logging.getLogger(__name__)

_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

UNCLAIMED_PODS = "ksched_unclaimed_pods"


class RunError(Exception):
    """``ksched run`` cannot start; the message says why."""


# ------------------------------------------------------------------------- profiles


def profiles_from_config(cfg: KubeSchedulerConfiguration) -> dict[str, Profile]:
    """schedulerName → :class:`Profile` for every configured profile, with the installed
    out-of-tree plugins (:func:`ksched.profiles.build_profiles`, shared with
    ``ksched simulate --config``). Raises :class:`RunError` when a profile cannot be
    built."""
    try:
        return build_profiles(cfg)
    except ProfileError as exc:
        raise RunError(str(exc)) from exc


# -------------------------------------------------------------------------- metrics


class UnclaimedPodsCollector(Collector):
    """``ksched_unclaimed_pods{scheduler_name}``, read from the scheduler at scrape time."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            UNCLAIMED_PODS,
            "Pending pods whose spec.schedulerName no profile of this scheduler handles.",
            labels=["scheduler_name"],
        )
        for name, count in sorted(self._sched.unclaimed_pods().items()):
            family.add_metric([name], count)
        yield family


def metrics_registry(sched: Scheduler) -> CollectorRegistry:
    """The scheduler's own registry (``sched.metrics.registry``, :mod:`ksched.metrics`)
    when it has one, else prometheus_client's default registry."""
    registry = getattr(getattr(sched, "metrics", None), "registry", None)
    return registry if isinstance(registry, CollectorRegistry) else REGISTRY


# -------------------------------------------------------------------------- running


@dataclass(slots=True)
class RunOptions:
    """``ksched run`` flags (see :func:`main`)."""

    config: str | None = None
    kubeconfig: str | None = None
    master: str = ""
    leader_elect: bool | None = None
    write_config_to: str | None = None


def resolve_config(opts: RunOptions) -> KubeSchedulerConfiguration:
    """Load the config file (or the defaults) and apply the flags that override it."""
    if opts.config:
        registry = default_registry()
        cfg = load_config(
            opts.config,
            extra_plugins=registry.names(),
            extension_points=registry.extension_points(),
        )
    else:
        cfg = load_config_bytes(_EMPTY_CONFIG)
    if opts.kubeconfig is not None:
        cfg.client_connection.kubeconfig = opts.kubeconfig
    if opts.leader_elect is not None:
        cfg.leader_election.leader_elect = opts.leader_elect
    return cfg


def check_supported(cfg: KubeSchedulerConfiguration) -> None:
    """Refuse what ksched does not implement instead of pretending to."""
    if cfg.leader_election.leader_elect:
        raise RunError(
            "leader election is not implemented yet (issue 7): refusing to start with "
            "leaderElection.leaderElect=true; run a single instance with "
            "--leader-elect=false"
        )
    if cfg.extenders:
        raise RunError("scheduler extenders are not supported by ksched")
    if cfg.client_connection.content_type not in ("", "application/json"):
        log.info(
            "clientConnection.contentType %s is not supported; using application/json",
            cfg.client_connection.content_type,
        )


async def serve(
    cfg: KubeSchedulerConfiguration,
    api: ClusterAPI,
    *,
    stop: asyncio.Event,
    profiles: Mapping[str, Profile] | None = None,
    registry: CollectorRegistry | None = None,
    on_started: Callable[[Scheduler], None] | None = None,
    seed: int | None = None,
) -> Scheduler:
    """Schedule on ``api`` until ``stop`` is set, then shut down gracefully.

    Returns the (stopped) scheduler. ``on_started`` is called once the informers have
    synced and the scheduling loop runs.
    """
    if profiles is None:
        profiles = profiles_from_config(cfg)
    sched = Scheduler(
        api,
        profiles,
        pod_initial_backoff=float(cfg.pod_initial_backoff_seconds or 1),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds or 10),
        seed=seed,
    )
    registry = registry if registry is not None else metrics_registry(sched)
    collector = UnclaimedPodsCollector(sched)
    registry.register(collector)
    loop = asyncio.get_running_loop()
    stopped = loop.create_task(stop.wait())
    run_task: asyncio.Task[None] | None = None
    try:
        log.info("starting informers; profiles: %s", ", ".join(profiles))
        start = loop.create_task(sched.start())
        await asyncio.wait({start, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if start.done():
            start.result()
            log.info(
                "caches synced: %d nodes, %d pods; scheduling",
                len(sched.node_informer.store),
                len(sched.pod_informer.store),
            )
            run_task = loop.create_task(sched.run())
            if on_started is not None:
                on_started(sched)
            await asyncio.wait({run_task, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if run_task.done() and not stopped.done():
                run_task.result()  # the loop ended on its own: surface why
        else:
            start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await start
        log.info("stopping: no new pods; finishing %d binding(s) in flight", sched.binder.in_flight)
        await sched.shutdown()
    finally:
        stopped.cancel()
        if run_task is not None and not run_task.done():
            run_task.cancel()
            await asyncio.gather(run_task, return_exceptions=True)
        registry.unregister(collector)
    log.info("stopped: %d pod(s) bound", sched.stats.bound)
    return sched


def install_signal_handlers(stop: asyncio.Event) -> None:
    """First SIGTERM/SIGINT sets ``stop``; a second one exits the process at once."""
    loop = asyncio.get_running_loop()
    received = 0

    def handler(signum: int) -> None:
        nonlocal received
        received += 1
        if received == 1:
            log.warning(
                "received %s: stopping (finishing bindings in flight)",
                signal.Signals(signum).name,
            )
            stop.set()
        else:
            log.warning("received %s again: exiting now", signal.Signals(signum).name)
            logging.shutdown()
            os._exit(1)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, handler, sig)


async def _run(
    cfg: KubeSchedulerConfiguration, opts: RunOptions, profiles: Mapping[str, Profile]
) -> int:
    # ksched.client pulls in aiohttp and kubernetes: only `ksched run` needs them.
    from ksched.client.api import connect
    from ksched.client.kubeconfig import ClientConfigError

    stop = asyncio.Event()
    install_signal_handlers(stop)
    cc = cfg.client_connection
    try:
        api = connect(kubeconfig=cc.kubeconfig, master=opts.master, qps=cc.qps, burst=cc.burst)
    except ClientConfigError as exc:
        log.error("cannot configure the API client: %s", exc)
        return 1
    log.info("API server %s (%s)", api.config.host, api.config.source)
    try:
        await serve(cfg, api, stop=stop, profiles=profiles)
    finally:
        await api.close()
    return 0


def main(opts: RunOptions | argparse.Namespace) -> int:
    """``ksched run``; returns the exit status."""
    if isinstance(opts, argparse.Namespace):
        opts = RunOptions(
            config=opts.config,
            kubeconfig=opts.kubeconfig,
            master=opts.master or "",
            leader_elect=opts.leader_elect,
            write_config_to=opts.write_config_to,
        )
    try:
        cfg = resolve_config(opts)
    except ConfigError as exc:
        log.error("%s", exc)
        return 1
    if opts.write_config_to:
        write_config(cfg, opts.write_config_to)
        log.info("wrote configuration to %s", opts.write_config_to)
        return 0
    try:
        check_supported(cfg)
        profiles = profiles_from_config(cfg)  # fail before connecting
    except RunError as exc:
        log.error("%s", exc)
        return 1
    return aio.run(_run(cfg, opts, profiles))
