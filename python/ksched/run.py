"""``ksched run``: schedule a real cluster until SIGTERM.

The composition root of the real thing: load the ``KubeSchedulerConfiguration``, apply
the command-line overrides kube-scheduler honours next to ``--config`` (``--kubeconfig``,
``--leader-elect``), build one :class:`~ksched.framework.profile.Profile` per configured
profile, connect to the API server (:mod:`ksched.client`), start the informers (list,
wait for the caches to sync — the handlers run inline, so that is also "handlers
synced"), then schedule.

Leader election (:mod:`ksched.leaderelection`), as kube-scheduler's ``Run``: with
``leaderElection.leaderElect: true`` (the v1 default) the replica starts its informers
(unless ``delayCacheUntilActive``), then competes for the Lease
``resourceNamespace/resourceName`` under the identity ``<hostname>_<uuid>``; once it
leads it schedules (and, with ``delayCacheUntilActive: true``, only then starts the
informers). Losing the lease stops scheduling at once and exits 1. With
``--feature-gates=CoordinatedLeaderElection=true`` it also publishes a LeaseCandidate
and lets the API server's controller pick the holder. ``leaderElect: false`` schedules
without a lease.

Fencing (:mod:`ksched.leaderelection.fencing`): with leader election the scheduler
gets a :class:`~ksched.leaderelection.fencing.FencedClusterAPI` instead of the client,
and the client checks the same gate right before each write is sent, so nothing is
written once the last Lease renewal is older than ``renewDeadline`` (leaseDuration
minus the margin ``leaseDuration - renewDeadline``), whether or not the renew loop has
noticed yet (a paused and resumed process runs whatever was ready first). The first
refused write, or the renew loop giving up, stops taking pods at once, forgets the
assumed pods and exits 1. ksched exits, as upstream does, rather than re-acquiring
the Lease in place: a replica whose lease lapsed holds a queue, nominations,
preemptions in flight and plugins' assume caches (volumes, claims) built while it led
on a cache that may be seconds old; re-acquiring safely would mean resetting every one
of them and relisting every informer, which a restarted process does by construction
(a Deployment restarts it as a fresh hot standby within seconds, and it can lead again
only after another full leaseDuration anyway).

Shutdown, as kube-scheduler's signal handling: the first SIGTERM (or SIGINT) stops
taking pods, lets the bindings and events in flight finish, releases the lease (holder
cleared, ``leaseDurationSeconds: 1``: a standby takes over at its next retry), stops the
informers and exits 0; a second signal exits at once with status 1. Unlike upstream,
which releases the lease as soon as the signal arrives, ksched keeps renewing while its
bindings drain and releases afterwards, so two replicas never bind at the same time.

Endpoints (:mod:`ksched.server`): HTTPS on ``--bind-address:--secure-port`` (default
``0.0.0.0:10259``; port 0 disables it) with ``/healthz``, ``/livez``, ``/readyz``,
``/metrics`` and ``/configz``, authenticated and authorized through the API server.

Scheduler extenders (``extenders:``) are called as kube-scheduler calls them
(:mod:`ksched.framework.extender`): filter and prioritize in the scheduling cycle, bind
instead of the Bind plugins, preempt from DefaultPreemption. An extender whose TLS
settings cannot be loaded stops ``ksched run`` before it connects.
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
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ksched import aio
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    ConfigError,
    FeatureGates,
    KubeSchedulerConfiguration,
    load_config,
    load_config_bytes,
    write_config,
)
from ksched.framework.extender import ExtenderError, HTTPExtender, build_extenders
from ksched.framework.profile import Profile
from ksched.framework.registry import default_registry
from ksched.leaderelection import (
    LeaderElector,
    LeaderMetrics,
    LeaseCandidate,
    LeaseLock,
    lease_event_recorder,
)
from ksched.leaderelection.fencing import FencedClusterAPI, FencingGate, FencingMetrics
from ksched.profiles import ProfileError, build_profiles
from ksched.scheduler import Scheduler
from ksched.server import (
    ALWAYS_ALLOW_PATHS,
    DelegatingAuth,
    EndpointServer,
    HealthCheck,
    HealthGroup,
    ServingOptions,
)

if TYPE_CHECKING:
    from ksched.cluster import ClusterAPI

log = logging.getLogger(__name__)

_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

UNCLAIMED_PODS = "ksched_unclaimed_pods"


#: The Kubernetes version ksched follows, published in its LeaseCandidate
#: (binaryVersion and emulationVersion) for coordinated leader election.
KUBE_VERSION = "1.36.0"
#: ``NewLeaderHealthzAdaptor(time.Second * 20)`` in kube-scheduler.
LEADER_WATCHDOG_TOLERANCE = 20.0
#: Feature gates ``ksched run`` knows (others are accepted and ignored, with a warning).
FEATURE_GATES = {
    "CoordinatedLeaderElection": False,
    # VolumeBinding's storage capacity score (alpha in v1.36).
    "StorageCapacityScoring": False,
    # Workload-aware scheduling (alpha in v1.36): the Workload/PodGroup API, gang
    # scheduling, topology-aware placements and workload-aware preemption.
    "GenericWorkload": False,
    "GangScheduling": False,
    "TopologyAwareWorkloadScheduling": False,
    "WorkloadAwarePreemption": False,
    # NodeDeclaredFeatures (beta, on in v1.36) and the gates that depend on it: turning
    # it off needs them off too, as for kube-scheduler.
    "NodeDeclaredFeatures": True,
    "RestartAllContainersOnContainerExits": True,
    "ExtendWebSocketsToKubelet": True,
    "InPlacePodLevelResourcesVerticalScaling": True,
    "InPlacePodVerticalScalingInitContainers": True,
}


class RunError(Exception):
    """``ksched run`` cannot start; the message says why."""


class LeaderElectionLost(RunError):
    """The lease could not be renewed within renewDeadline: stop and exit non-zero."""


# ------------------------------------------------------------------------- profiles


def profiles_from_config(
    cfg: KubeSchedulerConfiguration, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> dict[str, Profile]:
    """schedulerName → :class:`Profile` for every configured profile, with the installed
    out-of-tree plugins (:func:`ksched.profiles.build_profiles`, shared with
    ``ksched simulate --config``). Raises :class:`RunError` when a profile cannot be
    built."""
    try:
        return build_profiles(cfg, gates=gates)
    except ProfileError as exc:
        raise RunError(str(exc)) from exc


def extenders_from_config(cfg: KubeSchedulerConfiguration) -> list[HTTPExtender]:
    """The configured extenders, in order (upstream ``buildExtenders``). Raises
    :class:`RunError` when one cannot be built (its TLS settings)."""
    try:
        return build_extenders(cfg.extenders)
    except ExtenderError as exc:
        raise RunError(f"extender: {exc}") from exc


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
    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    authentication_kubeconfig: str = ""
    authorization_kubeconfig: str = ""
    authorization_always_allow_paths: Sequence[str] = ALWAYS_ALLOW_PATHS
    feature_gates: dict[str, bool] = field(default_factory=dict)

    def gates(self) -> FeatureGates:
        """The gates that change scheduling (``--feature-gates`` over v1.36's defaults).
        Raises :class:`RunError` when an enabled gate depends on a disabled one."""
        try:
            return DEFAULT_FEATURE_GATES.with_flags(self.feature_gates)
        except ValueError as exc:
            raise RunError(f"--feature-gates: {exc}") from exc


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates=A=true,B=false`` (component-base syntax)."""
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise RunError(f"invalid feature gate {part!r}: want NAME=true|false")
        gates[key.strip()] = value.strip().lower() == "true"
    for key in gates:
        if key not in FEATURE_GATES:
            log.warning("feature gate %s is not used by ksched; ignoring it", key)
    return gates


@dataclass(slots=True)
class RunStatus:
    """What the readiness checks and the endpoints read while ``ksched run`` runs."""

    sched: Scheduler | None = None
    handlers_synced: bool = False
    leading: bool = False


def resolve_config(opts: RunOptions) -> KubeSchedulerConfiguration:
    """Load the config file (or the defaults) and apply the flags that override it."""
    gates = opts.gates()
    if opts.config:
        registry = default_registry()
        cfg = load_config(
            opts.config,
            extra_plugins=registry.names(),
            extension_points=registry.extension_points(),
            gates=gates,
        )
    else:
        cfg = load_config_bytes(_EMPTY_CONFIG, gates=gates)
    if opts.kubeconfig is not None:
        cfg.client_connection.kubeconfig = opts.kubeconfig
    if opts.leader_elect is not None:
        cfg.leader_election.leader_elect = opts.leader_elect
    return cfg


def check_supported(cfg: KubeSchedulerConfiguration) -> None:
    """Refuse what ksched does not implement instead of pretending to."""
    for ext in extenders_from_config(cfg):
        ext.close()
    if cfg.client_connection.content_type not in ("", "application/json"):
        log.info(
            "clientConnection.contentType %s is not supported; using application/json",
            cfg.client_connection.content_type,
        )
    le = cfg.leader_election
    if le.leader_elect and le.resource_lock not in ("", "leases"):
        raise RunError(
            f"leaderElection.resourceLock {le.resource_lock!r} is not supported: only "
            "'leases' (the only lock kube-scheduler v1.36 accepts)"
        )


def new_scheduler(
    cfg: KubeSchedulerConfiguration,
    api: ClusterAPI,
    *,
    profiles: Mapping[str, Profile] | None = None,
    seed: int | None = None,
    identity: str | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> Scheduler:
    """The scheduler ``ksched run`` builds from a loaded configuration (profiles,
    backoffs, extenders) and the feature gates, on ``api``; not started."""
    if profiles is None:
        profiles = profiles_from_config(cfg, gates)
    return Scheduler(
        api,
        profiles,
        feature_gates=gates,
        pod_initial_backoff=float(cfg.pod_initial_backoff_seconds or 1),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds or 10),
        seed=seed,
        identity=identity,
        extenders=extenders_from_config(cfg),
    )


async def _first(
    coro: Coroutine[Any, Any, Any], stopped: asyncio.Future[Any], loop: asyncio.AbstractEventLoop
) -> bool:
    """Await ``coro`` unless ``stopped`` completes first (then cancel it); True if it ran
    to completion."""
    task = loop.create_task(coro)
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


async def serve(
    cfg: KubeSchedulerConfiguration,
    api: ClusterAPI,
    *,
    stop: asyncio.Event,
    profiles: Mapping[str, Profile] | None = None,
    registry: CollectorRegistry | None = None,
    on_started: Callable[[Scheduler], None] | None = None,
    seed: int | None = None,
    identity: str | None = None,
    elector: LeaderElector | None = None,
    status: RunStatus | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> Scheduler:
    """Schedule on ``api`` until ``stop`` is set, then shut down gracefully.

    Returns the (stopped) scheduler. ``on_started`` is called once the informers have
    synced and the scheduling loop runs. With an ``elector`` the scheduling loop runs
    only while this replica holds the lease (:mod:`ksched.leaderelection`); losing it
    raises :class:`LeaderElectionLost` without waiting for bindings in flight.
    """
    status = status if status is not None else RunStatus()
    loop = asyncio.get_running_loop()
    #: Set (with the reason) when this replica may no longer write.
    lapsed: asyncio.Future[str] = loop.create_future()
    gate: FencingGate | None = None
    sched_api: ClusterAPI = api
    set_write_guard = getattr(api, "set_write_guard", None)  # the real client has one
    if elector is not None:

        def on_lapse(reason: str) -> None:
            sched.stop_leading()
            status.leading = False
            if not lapsed.done():
                lapsed.set_result(reason)

        gate = FencingGate(
            renewed_at=lambda: elector.renewed_at,
            limit=elector.renew_deadline,
            lease=elector.lock.describe(),
            clock=elector.clock.monotonic,
            on_lapse=on_lapse,
        )
        sched_api = FencedClusterAPI(api, gate)
        if set_write_guard is not None:
            set_write_guard(gate.admit_request)
    sched = new_scheduler(
        cfg, sched_api, profiles=profiles, seed=seed, identity=identity, gates=gates
    )
    status.sched = sched
    registry = registry if registry is not None else metrics_registry(sched)
    collectors: list[Collector] = [UnclaimedPodsCollector(sched)]
    if elector is not None:
        collectors.append(LeaderMetrics(elector))
    if gate is not None:
        collectors.append(FencingMetrics(gate))
    for c in collectors:
        registry.register(c)
    stopped = loop.create_task(stop.wait())
    run_task: asyncio.Task[None] | None = None
    renew_stop = asyncio.Event()
    renew_task: asyncio.Task[bool] | None = None
    delay = elector is not None and cfg.delay_cache_until_active

    async def start_informers() -> bool:
        log.info("starting informers; profiles: %s", ", ".join(sched.profiles))
        if not await _first(sched.start(), stopped, loop):
            return False
        status.handlers_synced = True
        log.info(
            "caches synced: %d nodes, %d pods",
            len(sched.node_informer.store),
            len(sched.pod_informer.store),
        )
        # The synced objects live as long as the scheduler: out of the collector's way.
        aio.tune_gc()
        return True

    try:
        ready = delay or await start_informers()
        if ready and elector is not None:
            ready = await elector.acquire(stop)
            status.leading = ready
            if ready:
                log.info("leading as %s", elector.identity)
                renew_task = loop.create_task(elector.renew(renew_stop))
                if delay:
                    log.info("starting informers and waiting for sync (delayCacheUntilActive)")
                    ready = await start_informers()
        if ready and not stop.is_set():
            log.info("scheduling")
            run_task = loop.create_task(sched.run())
            if on_started is not None:
                on_started(sched)
            waiting: set[asyncio.Future[Any]] = {run_task, stopped, lapsed}
            if renew_task is not None:
                waiting.add(renew_task)
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if lapsed.done():
                raise LeaderElectionLost(f"leaderelection lost: {lapsed.result()}")
            if renew_task is not None and renew_task.done() and not renew_task.result():
                sched.stop_leading()
                status.leading = False
                raise LeaderElectionLost(
                    f"leaderelection lost: lease {elector.lock.describe() if elector else ''} "
                    "not renewed within renewDeadline"
                )
            if run_task.done() and not stopped.done():
                run_task.result()  # the loop ended on its own: surface why
        log.info("stopping: no new pods; finishing %d binding(s) in flight", sched.binder.in_flight)
        await sched.shutdown()  # the lease is still renewed meanwhile
        if renew_task is not None:
            renew_stop.set()
            if await renew_task and elector is not None and not lapsed.done():
                await elector.release()
            status.leading = False
        if lapsed.done():
            # The lease lapsed while the bindings drained: what was left was refused.
            raise LeaderElectionLost(f"leaderelection lost: {lapsed.result()}")
    finally:
        if gate is not None and set_write_guard is not None:
            set_write_guard(None)
        stopped.cancel()
        if not lapsed.done():
            lapsed.cancel()
        renew_stop.set()
        for task in (run_task, renew_task):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        for c in collectors:
            registry.unregister(c)
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


def health_groups(
    stop: asyncio.Event,
    status: RunStatus,
    elector: LeaderElector | None,
    candidate: LeaseCandidate | None,
) -> tuple[HealthGroup, HealthGroup, HealthGroup]:
    """``/healthz``, ``/livez``, ``/readyz`` with kube-scheduler's checks."""
    checks: list[HealthCheck] = []
    ready: list[HealthCheck] = []
    if elector is not None:
        watchdog = HealthCheck("leaderElection", lambda: elector.check(LEADER_WATCHDOG_TOLERANCE))
        checks.append(watchdog)
        ready.append(watchdog)
    ready.append(
        HealthCheck("shutdown", lambda: "process is shutting down" if stop.is_set() else None)
    )
    ready.append(
        HealthCheck(
            "sched-handler-sync",
            lambda: None if status.handlers_synced else "waiting for handlers to sync",
        )
    )
    if candidate is not None:
        ready.append(
            HealthCheck(
                "informer-sync",
                lambda: None if candidate.synced.is_set() else "lease candidate not synced",
            )
        )
    return HealthGroup("healthz", checks), HealthGroup("livez", []), HealthGroup("readyz", ready)


async def _run(
    cfg: KubeSchedulerConfiguration, opts: RunOptions, profiles: Mapping[str, Profile]
) -> int:
    # ksched.client pulls in aiohttp and kubernetes: only `ksched run` needs them.
    from ksched.client.api import KubeClusterAPI, connect
    from ksched.client.kubeconfig import ClientConfigError

    stop = asyncio.Event()
    install_signal_handlers(stop)
    cc = cfg.client_connection
    closers: list[KubeClusterAPI] = []
    try:
        api = connect(kubeconfig=cc.kubeconfig, master=opts.master, qps=cc.qps, burst=cc.burst)
        closers.append(api)
        authn = authz = api
        if opts.authentication_kubeconfig:
            authn = connect(kubeconfig=opts.authentication_kubeconfig)
            closers.append(authn)
        if opts.authorization_kubeconfig:
            authz = connect(kubeconfig=opts.authorization_kubeconfig)
            closers.append(authz)
    except ClientConfigError as exc:
        log.error("cannot configure the API client: %s", exc)
        for c in closers:
            await c.close()
        return 1
    log.info("API server %s (%s)", api.config.host, api.config.source)
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    le = cfg.leader_election
    elector: LeaderElector | None = None
    candidate: LeaseCandidate | None = None
    candidate_stop = asyncio.Event()
    coordinated = opts.feature_gates.get("CoordinatedLeaderElection", False)
    if le.leader_elect:
        lock = LeaseLock(
            api, namespace=le.resource_namespace, name=le.resource_name, identity=identity
        )

        try:
            elector = LeaderElector(
                lock,
                lease_duration=le.lease_duration.total_seconds(),
                renew_deadline=le.renew_deadline.total_seconds(),
                retry_period=le.retry_period.total_seconds(),
                name=le.resource_name,
                coordinated=coordinated,
                record_event=lease_event_recorder(api, lock, "ksched"),
                on_new_leader=lambda who: log.info("new leader elected: %s", who or "(none)"),
            )
        except ValueError as exc:
            log.error("leader election: %s", exc)
            for c in closers:
                await c.close()
            return 1
        if coordinated:
            candidate = LeaseCandidate(
                api,
                namespace=le.resource_namespace,
                name=identity,
                lease_name=le.resource_name,
                binary_version=KUBE_VERSION,
                emulation_version=KUBE_VERSION,
                poll_interval=le.retry_period.total_seconds(),
            )
    status = RunStatus()
    server: EndpointServer | None = None
    candidate_task: asyncio.Task[None] | None = None
    code = 0
    try:
        if opts.secure_port > 0:
            healthz, livez, readyz = health_groups(stop, status, elector, candidate)
            server = EndpointServer(
                ServingOptions(
                    bind_address=opts.bind_address,
                    secure_port=opts.secure_port,
                    tls_cert_file=opts.tls_cert_file,
                    tls_private_key_file=opts.tls_private_key_file,
                    client_ca_file=opts.client_ca_file,
                    always_allow_paths=tuple(opts.authorization_always_allow_paths),
                ),
                auth=DelegatingAuth(
                    authn,
                    authz_reviewer=authz,
                    always_allow_paths=tuple(opts.authorization_always_allow_paths),
                ),
                healthz=healthz,
                livez=livez,
                readyz=readyz,
                metrics=lambda: generate_latest(
                    metrics_registry(status.sched) if status.sched is not None else REGISTRY
                ),
                configz=lambda: {"componentconfig": cfg.to_dict()},
            )
            try:
                await server.start()
            except (OSError, ValueError) as exc:
                log.error("failed to start the secure server: %s", exc)
                return 1
        if candidate is not None:
            candidate_task = asyncio.get_running_loop().create_task(candidate.run(candidate_stop))
        await serve(cfg, api, stop=stop, profiles=profiles, identity=identity,
                    elector=elector, status=status, gates=opts.gates())  # fmt: skip
    except LeaderElectionLost as exc:
        # Upstream exits at once (klog.FlushAndExit): bindings in flight are abandoned,
        # the new leader schedules whatever they leave pending.
        log.error("%s", exc)
        code = 1
        current = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not current]
        for t in others:
            t.cancel()
        await asyncio.gather(*others, return_exceptions=True)
    finally:
        candidate_stop.set()
        if candidate_task is not None:
            await asyncio.gather(candidate_task, return_exceptions=True)
        if server is not None:
            await server.stop()
        for c in closers:
            await c.close()
    return code


def _paths(text: str | None) -> list[str]:
    if text is None:
        return list(ALWAYS_ALLOW_PATHS)
    return [p.strip() for p in text.split(",") if p.strip()]


def main(opts: RunOptions | argparse.Namespace) -> int:
    """``ksched run``; returns the exit status."""
    if isinstance(opts, argparse.Namespace):
        try:
            gates = parse_feature_gates(getattr(opts, "feature_gates", None) or "")
        except RunError as exc:
            log.error("%s", exc)
            return 1
        get = vars(opts).get
        opts = RunOptions(
            config=opts.config,
            kubeconfig=opts.kubeconfig,
            master=opts.master or "",
            leader_elect=opts.leader_elect,
            write_config_to=opts.write_config_to,
            bind_address=get("bind_address") or "0.0.0.0",
            secure_port=int(get("secure_port", 10259)),
            tls_cert_file=get("tls_cert_file") or "",
            tls_private_key_file=get("tls_private_key_file") or "",
            client_ca_file=get("client_ca_file") or "",
            authentication_kubeconfig=get("authentication_kubeconfig") or "",
            authorization_kubeconfig=get("authorization_kubeconfig") or "",
            authorization_always_allow_paths=_paths(get("authorization_always_allow_paths")),
            feature_gates=gates,
        )
    try:
        cfg = resolve_config(opts)
    except (ConfigError, RunError) as exc:
        log.error("%s", exc)
        return 1
    if opts.write_config_to:
        write_config(cfg, opts.write_config_to)
        log.info("wrote configuration to %s", opts.write_config_to)
        return 0
    try:
        check_supported(cfg)
        profiles = profiles_from_config(cfg, opts.gates())  # fail before connecting
    except RunError as exc:
        log.error("%s", exc)
        return 1
    return aio.run(_run(cfg, opts, profiles))
