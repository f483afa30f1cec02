"""``kube-scheduler`` / ``ksched run``: schedule a real cluster until SIGTERM.

The composition root of the real thing, in the order of upstream's ``runCommand``: the
feature gates (:mod:`ksched.config.features`; a refusal is ``"command failed"``),
``--version``, the logs flags (:mod:`ksched.logs`; an invalid one is printed plain), the
``FLAG:`` lines at ``-v 1``, then the ``KubeSchedulerConfiguration`` with the flags
merged as upstream's ``ApplyTo`` merges them (:meth:`ksched.options.Options.apply`) and
validated again, ``"Using component config"`` at ``-v 2`` and ``--write-config-to``; then
one :class:`~ksched.framework.profile.Profile` per configured profile, the API server
connection (:mod:`ksched.client`), the informers (list, wait for the caches to sync — the
handlers run inline, so that is also "handlers synced"), and scheduling.

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

Feature gates: :class:`~ksched.config.features.FeatureGate` holds the command line's
gates; what configuration, profiles and the scheduler read is its
:meth:`~ksched.config.features.FeatureGate.config_gates` record
(:class:`~ksched.config.FeatureGates`), which :func:`serve` and :func:`new_scheduler`
take; the process-level gates (leader election, endpoints, logs) are read here.

Shutdown, as kube-scheduler's signal handling: the first SIGTERM (or SIGINT) stops
taking pods, lets the bindings and events in flight finish, releases the lease (holder
cleared, ``leaseDurationSeconds: 1``: a standby takes over at its next retry), stops the
informers and exits 0; a second signal exits at once with status 1. Unlike upstream,
which releases the lease as soon as the signal arrives, ksched keeps renewing while its
bindings drain and releases afterwards, so two replicas never bind at the same time.

Endpoints (:mod:`ksched.server`, :func:`build_server`): HTTPS on
``--bind-address:--secure-port`` (default ``0.0.0.0:10259``; port 0 disables it) with
upstream's paths and TLS flags. Delegated authentication and authorization use
``--authentication-kubeconfig``/``--authorization-kubeconfig``, else the in-cluster
configuration, else none (tokens are then anonymous and reviews deny), as upstream's
``getClient``; the client CA and request-header settings come from the flags or the
``extension-apiserver-authentication`` ConfigMap (:func:`_authentication`).

Scheduler extenders (``extenders:``) are called as kube-scheduler calls them
(:mod:`ksched.framework.extender`): filter and prioritize in the scheduling cycle, bind
instead of the Bind plugins, preempt from DefaultPreemption. An extender whose TLS
settings cannot be loaded stops ``ksched run`` before it connects.
``clientConnection.contentType`` is ignored: ksched always speaks JSON (no protobuf).

Profiles come from :func:`ksched.profiles.build_profiles` (shared with ``ksched
simulate --config``); the config is validated against the installed out-of-tree plugins
(the ``ksched.plugins`` entry points) too.

Metrics: ``ksched_unclaimed_pods{scheduler_name}`` — pods whose schedulerName no profile
of this scheduler handles and that nobody has tried — is collected at scrape time from
:meth:`ksched.scheduler.Scheduler.unclaimed_pods` and registered in the scheduler's
registry (``Scheduler.metrics.registry``, :mod:`ksched.metrics`) when it has one, else in
prometheus_client's default registry. ``/metrics`` renders that registry with the
component's families (:mod:`ksched.component_metrics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ksched import aio, logs, version
from ksched.cluster import APIError
from ksched.component_metrics import ComponentMetrics
from ksched.config import (
    DEFAULT_FEATURE_GATES,
    ConfigError,
    FeatureGates,
    KubeSchedulerConfiguration,
    decode_config_bytes,
    dump_yaml,
)
from ksched.config import errors as ferr
from ksched.config.errors import FieldError
from ksched.config.features import FeatureGate, FeatureGateError
from ksched.config.validation import validate
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
from ksched.options import Options, in_cluster, resolve_gates
from ksched.profiles import ProfileError, build_profiles
from ksched.scheduler import Scheduler
from ksched.server import (
    ClientCA,
    DelegatingAuth,
    EndpointServer,
    HealthCheck,
    HealthGroup,
    Profiling,
    RequestHeaderConfig,
    ServingOptions,
    ZPages,
)

if TYPE_CHECKING:
    from ksched.cluster import ClusterAPI

log = logs.get_logger(__name__)

_EMPTY_CONFIG = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

UNCLAIMED_PODS = "ksched_unclaimed_pods"


#: The Kubernetes version ksched follows, published in its LeaseCandidate
#: (binaryVersion and emulationVersion) for coordinated leader election.
KUBE_VERSION = "1.36.0"
#: ``NewLeaderHealthzAdaptor(time.Second * 20)`` in kube-scheduler.
LEADER_WATCHDOG_TOLERANCE = 20.0


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
class RunStatus:
    """What the readiness checks and the endpoints read while ``ksched run`` runs."""

    sched: Scheduler | None = None
    handlers_synced: bool = False
    leading: bool = False


def resolve_config(opts: Options, gate: FeatureGate | None = None) -> KubeSchedulerConfiguration:
    """Upstream ``Options.ApplyTo``: the config file (or the defaults), the flags that
    override it (:meth:`Options.apply`), then validation of the result. Raises
    :class:`ConfigError`."""
    gates = (gate or opts.gate).config_gates()
    registry = default_registry()
    extra = {"extra_plugins": registry.names(), "extension_points": registry.extension_points()}
    if opts.config:
        try:
            data = Path(opts.config).read_bytes()
        except OSError as exc:
            raise ConfigError(
                [FieldError(ferr.DECODE, "", detail=f"unable to read config file: {exc}")],
                opts.config,
            ) from exc
        cfg = decode_config_bytes(data, opts.config, gates=gates)
    else:
        cfg = decode_config_bytes(_EMPTY_CONFIG, gates=gates)
    opts.apply(cfg)
    errs = validate(cfg, gates=gates, **extra)  # type: ignore[arg-type]
    if errs:
        raise ConfigError(errs, opts.config or "<flags>")
    return cfg


def check_supported(cfg: KubeSchedulerConfiguration) -> None:
    """Refuse what ksched does not implement instead of pretending to."""
    for ext in extenders_from_config(cfg):
        ext.close()
    if cfg.client_connection.content_type not in ("", "application/json"):
        log.info(
            "clientConnection.contentType is not supported; using application/json",
            contentType=cfg.client_connection.content_type,
        )
    le = cfg.leader_election
    if le.leader_elect and le.resource_lock not in ("", "leases"):
        raise RunError(
            f"leaderElection.resourceLock {le.resource_lock!r} is not supported: only "
            "'leases' (the only lock kube-scheduler v1.36 accepts)"
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


def new_scheduler(
    cfg: KubeSchedulerConfiguration,
    api: ClusterAPI,
    *,
    profiles: Mapping[str, Profile] | None = None,
    seed: int | None = None,
    identity: str | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
    pod_max_in_unschedulable: float | None = None,
    make_scheduler: Callable[..., Scheduler] = Scheduler,
) -> Scheduler:
    """The scheduler ``ksched run`` builds from a loaded configuration (profiles,
    backoffs, extenders) and the feature gates, on ``api``; not started.
    ``pod_max_in_unschedulable`` is ``--pod-max-in-unschedulable-pods-duration`` in
    seconds (None: the queue's default, 5 minutes); ``make_scheduler`` builds it
    (:class:`~ksched.shadow.ShadowScheduler` in shadow mode)."""
    if profiles is None:
        profiles = profiles_from_config(cfg, gates)
    return make_scheduler(
        api,
        profiles,
        feature_gates=gates,
        pod_initial_backoff=float(cfg.pod_initial_backoff_seconds or 1),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds or 10),
        seed=seed,
        identity=identity,
        extenders=extenders_from_config(cfg),
        pod_max_in_unschedulable=pod_max_in_unschedulable,
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
    identity: str | None = None,
    elector: LeaderElector | None = None,
    status: RunStatus | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
    pod_max_in_unschedulable: float | None = None,
    make_scheduler: Callable[..., Scheduler] = Scheduler,
) -> Scheduler:
    """Schedule on ``api`` until ``stop`` is set, then shut down gracefully.

    Returns the (stopped) scheduler. ``on_started`` is called once the informers have
    synced and the scheduling loop runs. With an ``elector`` the scheduling loop runs
    only while this replica holds the lease (:mod:`ksched.leaderelection`) and every
    write passes the fence; losing the lease, or a fenced write, raises
    :class:`LeaderElectionLost` without waiting for bindings in flight. ``gates`` are
    the feature gates the scheduler reads (:meth:`FeatureGate.config_gates
    <ksched.config.features.FeatureGate.config_gates>`: pod groups, OpportunisticBatching,
    SchedulerPopFromBackoffQ, ...); ``pod_max_in_unschedulable`` is
    ``--pod-max-in-unschedulable-pods-duration`` in seconds; ``make_scheduler`` builds
    the scheduler (shadow mode's :class:`~ksched.shadow.ShadowScheduler`).
    """
    status = status if status is not None else RunStatus()
    loop = asyncio.get_running_loop()
    #: Set (with the reason) when this replica may no longer write.
    lapsed: asyncio.Future[str] = loop.create_future()
    fence: FencingGate | None = None
    sched_api: ClusterAPI = api
    set_write_guard = getattr(api, "set_write_guard", None)  # the real client has one
    if elector is not None:

        def on_lapse(reason: str) -> None:
            sched.stop_leading()
            status.leading = False
            if not lapsed.done():
                lapsed.set_result(reason)

        fence = FencingGate(
            renewed_at=lambda: elector.renewed_at,
            limit=elector.renew_deadline,
            lease=elector.lock.describe(),
            clock=elector.clock.monotonic,
            on_lapse=on_lapse,
        )
        sched_api = FencedClusterAPI(api, fence)
        if set_write_guard is not None:
            set_write_guard(fence.admit_request)
    sched = new_scheduler(
        cfg,
        sched_api,
        profiles=profiles,
        seed=seed,
        identity=identity,
        gates=gates,
        pod_max_in_unschedulable=pod_max_in_unschedulable,
        make_scheduler=make_scheduler,
    )
    status.sched = sched
    registry = registry if registry is not None else metrics_registry(sched)
    collectors: list[Collector] = [UnclaimedPodsCollector(sched)]
    if elector is not None:
        collectors.append(LeaderMetrics(elector))
    if fence is not None:
        collectors.append(FencingMetrics(fence))
    for c in collectors:
        registry.register(c)
    stopped = loop.create_task(stop.wait())
    run_task: asyncio.Task[None] | None = None
    renew_stop = asyncio.Event()
    renew_task: asyncio.Task[bool] | None = None
    delay = elector is not None and cfg.delay_cache_until_active

    async def start_informers() -> bool:
        log.v(2).info("Starting informers", profiles=list(sched.profiles))
        if not await _first(sched.start(), stopped, loop):
            return False
        status.handlers_synced = True
        log.info(
            "Caches are synced",
            nodes=len(sched.node_informer.store),
            pods=len(sched.pod_informer.store),
        )
        log.v(3).info("Handlers synced")
        # The synced objects live as long as the scheduler: out of the collector's way.
        aio.tune_gc()
        return True

    try:
        ready = delay or await start_informers()
        if ready and elector is not None:
            ready = await elector.acquire(stop)
            status.leading = ready
            if ready:
                log.v(2).info("Leading", identity=elector.identity)
                renew_task = loop.create_task(elector.renew(renew_stop))
                if delay:
                    log.info("Starting informers and waiting for sync...")
                    ready = await start_informers()
                    log.info("Sync completed")
        if ready and not stop.is_set():
            log.v(2).info("Scheduling", profiles=list(sched.profiles))
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
        log.info("Stopping: taking no new pods", bindingsInFlight=sched.binder.in_flight)
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
        if fence is not None and set_write_guard is not None:
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
    log.info("Stopped", boundPods=sched.stats.bound)
    return sched


def install_signal_handlers(stop: asyncio.Event) -> None:
    """First SIGTERM/SIGINT sets ``stop``; a second one exits the process at once."""
    loop = asyncio.get_running_loop()
    received = 0

    def handler(signum: int) -> None:
        nonlocal received
        received += 1
        if received == 1:
            log.info(
                "Received signal: stopping, finishing the bindings in flight",
                signal=signal.Signals(signum).name,
            )
            stop.set()
        else:
            log.info("Received signal again: exiting now", signal=signal.Signals(signum).name)
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


def _delegated_client(
    kubeconfig: str, what: str, connect: Callable[..., Any], error: type[Exception]
) -> Any:
    """Upstream ``getClient`` of the delegated authentication/authorization options: the
    given kubeconfig, else the in-cluster configuration, else none (optional)."""
    if kubeconfig:
        return connect(kubeconfig=kubeconfig, qps=200, burst=400)
    if not in_cluster():
        return None
    try:
        return connect(qps=200, burst=400)
    except error as exc:
        log.warning(f"failed to read in-cluster kubeconfig for delegated {what}: {exc}")
        return None


async def _authentication(
    opts: Options, authn: Any, closers: list[Any]
) -> tuple[ClientCA | None, RequestHeaderConfig | None]:
    """Upstream ``DelegatingAuthenticationOptions.ApplyTo``: the client CA and the
    request-header settings, from the flags or, unless ``--authentication-skip-lookup``,
    from the ``kube-system/extension-apiserver-authentication`` ConfigMap."""
    from ksched.client.authconfig import AUTH_CONFIGMAP, read_authentication_config

    get = opts.get
    client_ca: ClientCA | None = None
    request_header: RequestHeaderConfig | None = None
    lookup: dict[str, Any] | None = None
    skip = bool(get("authentication-skip-lookup"))
    where = f"configmap/{AUTH_CONFIGMAP[1]} in {AUTH_CONFIGMAP[0]}"

    async def cluster_config() -> dict[str, Any] | None:
        nonlocal lookup
        if lookup is None:
            lookup = await read_authentication_config(authn)
        return lookup

    if get("client-ca-file"):
        client_ca = ClientCA(Path(get("client-ca-file")).read_bytes(), get("client-ca-file"))
    elif not skip:
        if authn is None:
            log.warning(
                f"No authentication-kubeconfig provided in order to lookup client-ca-file in "
                f"{where}, so client certificate authentication won't work."
            )
        else:
            found = await cluster_config()
            pem = (found or {}).get("client-ca-file")
            if pem:
                client_ca = ClientCA(pem.encode(), "client-ca::" + AUTH_CONFIGMAP[0])
    if get("requestheader-client-ca-file"):
        request_header = RequestHeaderConfig(
            ca=ClientCA(
                Path(get("requestheader-client-ca-file")).read_bytes(),
                get("requestheader-client-ca-file"),
            ),
            username_headers=tuple(get("requestheader-username-headers")),
            uid_headers=tuple(get("requestheader-uid-headers")),
            group_headers=tuple(get("requestheader-group-headers")),
            extra_prefixes=tuple(get("requestheader-extra-headers-prefix")),
            allowed_names=tuple(get("requestheader-allowed-names")),
        )
    elif not skip:
        if authn is None:
            log.warning(
                f"No authentication-kubeconfig provided in order to lookup "
                f"requestheader-client-ca-file in {where}, so request-header client "
                "certificate authentication won't work."
            )
        else:
            try:
                found = await cluster_config()
            except (APIError, OSError, TimeoutError) as exc:
                if not get("authentication-tolerate-lookup-failure"):
                    raise RunError(
                        f"unable to load configmap based request-header-client-ca-file: {exc}"
                    ) from exc
                log.warning(f"Error looking up in-cluster authentication configuration: {exc}")
                log.warning(
                    "Continuing without authentication configuration. This may treat all "
                    "requests as anonymous."
                )
                log.warning(
                    "To require authentication configuration lookup to succeed, set "
                    "--authentication-tolerate-lookup-failure=false"
                )
                found = None
            pem = (found or {}).get("requestheader-client-ca-file")
            if found and pem:
                request_header = RequestHeaderConfig(
                    ca=ClientCA(pem.encode(), "requestheader::" + AUTH_CONFIGMAP[0]),
                    username_headers=tuple(found.get("requestheader-username-headers") or ()),
                    uid_headers=tuple(found.get("requestheader-uid-headers") or ()),
                    group_headers=tuple(found.get("requestheader-group-headers") or ()),
                    extra_prefixes=tuple(found.get("requestheader-extra-headers-prefix") or ()),
                    allowed_names=tuple(found.get("requestheader-allowed-names") or ()),
                )
    if request_header is not None and not opts.gate.enabled("RemoteRequestHeaderUID"):
        request_header = dataclasses.replace(request_header, uid_headers=())
    return client_ca, request_header


async def _run(
    cfg: KubeSchedulerConfiguration,
    opts: Options,
    profiles: Mapping[str, Profile],
    component: ComponentMetrics,
) -> int:
    # ksched.client pulls in aiohttp and kubernetes: only `ksched run` needs them.
    from ksched.client.api import KubeClusterAPI, connect
    from ksched.client.kubeconfig import ClientConfigError

    stop = asyncio.Event()
    install_signal_handlers(stop)
    cc = cfg.client_connection
    gate = opts.gate
    closers: list[KubeClusterAPI] = []
    try:
        api = connect(kubeconfig=cc.kubeconfig, master=opts.master, qps=cc.qps, burst=cc.burst)
        closers.append(api)
        authn = _delegated_client(
            opts.authentication_kubeconfig, "authentication", connect, ClientConfigError
        )
        if authn is not None:
            closers.append(authn)
        authz = _delegated_client(
            opts.authorization_kubeconfig, "authorization", connect, ClientConfigError
        )
        if authz is not None:
            closers.append(authz)
    except ClientConfigError as exc:
        log.error("command failed", err=exc)
        for c in closers:
            await c.close()
        return 1
    if authz is None and opts.secure_port > 0:
        log.warning(
            "No authorization-kubeconfig provided, so SubjectAccessReview of authorization "
            "tokens won't work."
        )
    log.v(2).info("API server", host=api.config.host, source=api.config.source)
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    le = cfg.leader_election
    elector: LeaderElector | None = None
    candidate: LeaseCandidate | None = None
    candidate_stop = asyncio.Event()
    coordinated = gate.enabled("CoordinatedLeaderElection")
    make_scheduler: Callable[..., Scheduler] = Scheduler
    if opts.shadow:
        from ksched.readonly import ReadOnlyClusterAPI
        from ksched.shadow import ShadowScheduler, shadow_targets

        # Nothing leaves the process but reads; no Lease either: every replica shadows.
        api = ReadOnlyClusterAPI(api, mode="shadow mode")  # type: ignore[assignment]
        targets = shadow_targets(profiles, opts.shadow_scheduler_names)
        make_scheduler = functools.partial(ShadowScheduler, shadowed=targets)
        if le.leader_elect:
            log.info("Shadow mode: leader election is off (it would write a Lease)")
        le.leader_elect = False
    if le.leader_elect:
        lock = LeaseLock(
            api, namespace=le.resource_namespace, name=le.resource_name, identity=identity
        )
        log.v(2).info("Leader election candidate", lease=lock.describe(), identity=identity)
        first_profile = next(iter(profiles), "default-scheduler")
        try:
            elector = LeaderElector(
                lock,
                lease_duration=le.lease_duration.total_seconds(),
                renew_deadline=le.renew_deadline.total_seconds(),
                retry_period=le.retry_period.total_seconds(),
                name=le.resource_name,
                coordinated=coordinated,
                record_event=lease_event_recorder(api, lock, first_profile),
                on_new_leader=lambda who: log.info("New leader elected", identity=who or ""),
            )
        except ValueError as exc:
            log.error("command failed", err=exc)
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
                emulation_version=f"{gate.emulation[0]}.{gate.emulation[1]}.0",
                poll_interval=le.retry_period.total_seconds(),
            )
    status = RunStatus()
    component.watch(status, elector)
    server: EndpointServer | None = None
    candidate_task: asyncio.Task[None] | None = None
    code = 0
    try:
        if opts.secure_port > 0:
            try:
                client_ca, request_header = await _authentication(opts, authn, closers)
            except (RunError, OSError, ValueError) as exc:
                log.error("command failed", err=exc)
                return 1
            server = build_server(
                cfg, opts, stop, status, elector, candidate, component,
                authn=authn, authz=authz, client_ca=client_ca, request_header=request_header,
            )  # fmt: skip
            try:
                await server.start()
            except (OSError, ValueError) as exc:
                log.error("command failed", err=f"failed to start secure server: {exc}")
                return 1
        if candidate is not None:
            candidate_task = asyncio.get_running_loop().create_task(candidate.run(candidate_stop))
        await serve(cfg, api, stop=stop, profiles=profiles, identity=identity,
                    elector=elector, status=status, gates=gate.config_gates(),
                    registry=component.scheduler_registry(status),
                    pod_max_in_unschedulable=opts.pod_max_in_unschedulable,
                    make_scheduler=make_scheduler)  # fmt: skip
    except LeaderElectionLost as exc:
        # Upstream exits at once (klog.FlushAndExit): bindings in flight are abandoned,
        # the new leader schedules whatever they leave pending.
        log.error("Leaderelection lost", err=exc)
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


def build_server(
    cfg: KubeSchedulerConfiguration,
    opts: Options,
    stop: asyncio.Event,
    status: RunStatus,
    elector: LeaderElector | None,
    candidate: LeaseCandidate | None,
    component: ComponentMetrics,
    *,
    authn: Any,
    authz: Any,
    client_ca: ClientCA | None,
    request_header: RequestHeaderConfig | None,
) -> EndpointServer:
    """The secure port with kube-scheduler's endpoints (``newEndpointsHandler``)."""
    get = opts.get
    gate = opts.gate
    healthz, livez, readyz = health_groups(stop, status, elector, candidate)
    for group in (healthz, livez, readyz):
        group.on_result = component.sli.record
    pems = [ca.pem for ca in (client_ca, request_header.ca if request_header else None) if ca]
    serving = ServingOptions(
        bind_address=opts.bind_address,
        secure_port=opts.secure_port,
        tls_cert_file=get("tls-cert-file"),
        tls_private_key_file=get("tls-private-key-file"),
        always_allow_paths=tuple(opts.always_allow_paths),
        cert_dir=get("cert-dir"),
        tls_min_version=get("tls-min-version"),
        cipher_suites=tuple(get("tls-cipher-suites")),
        curve_preferences=tuple(get("tls-curve-preferences")),
        sni=tuple((k.cert_file, k.key_file, k.names) for k in opts.sni_cert_keys),
        client_ca_pems=tuple(pems),
        reuse_address=bool(get("permit-address-sharing")),
        reuse_port=bool(get("permit-port-sharing")),
    )
    auth = DelegatingAuth(
        authn,
        authz_reviewer=authz,
        always_allow_paths=tuple(opts.always_allow_paths),
        cache_ttl=opts.token_cache_ttl,
        allow_ttl=opts.authorized_ttl,
        deny_ttl=opts.unauthorized_ttl,
        client_ca=client_ca,
        request_header=request_header,
        on_client_cert=component.auth.client_certificate,
        on_review=component.auth.review,
    )
    profiling = None
    if cfg.enable_profiling:
        profiling = Profiling(
            contention=bool(cfg.enable_contention_profiling), set_verbosity=logs.set_verbosity
        )
    zp = ZPages(
        flags=(lambda: {f.name: f.text() for f in opts.flags})
        if gate.enabled("ComponentFlagz")
        else None,
        statusz=gate.enabled("ComponentStatusz"),
        start_time=component.start_time,
        binary_version=version.BINARY_VERSION,
        emulation_version=f"{gate.emulation[0]}.{gate.emulation[1]}",
    )

    def resources() -> bytes:
        if not status.leading and elector is not None:
            return b""
        return component.resource_metrics(status)

    return EndpointServer(
        serving,
        auth=auth,
        healthz=healthz,
        livez=livez,
        readyz=readyz,
        metrics=lambda: component.exposition(status),
        configz=lambda: {"componentconfig": cfg.to_dict()},
        resource_metrics=resources,
        sli_metrics=component.sli.exposition,
        reset_metrics=lambda: component.reset(status),
        zpages_=zp,
        profiling=profiling,
        request_metrics=component.auth,
    )


def _logging_errors(opts: Options, gate: FeatureGate) -> list[str]:
    """component-base ``logsapi.Validate`` of the logs flags."""
    get = opts.get
    errs = []
    if get("log-flush-frequency") <= 0:
        errs.append(
            f'flushFrequency: Invalid value: "{opts.flags["log-flush-frequency"].text()}": '
            "Must be greater than zero"
        )
    fmt = get("logging-format")
    if fmt not in ("text", "json"):
        errs.append(f'format: Invalid value: "{fmt}": Unsupported log format')
    elif fmt == "json" and not gate.enabled("LoggingBetaOptions"):
        errs.append(
            "format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature"
        )
    if get("vmodule") and fmt != "text":
        errs.append("vmodule: Forbidden: Only supported for text log format")
    alpha = gate.enabled("LoggingAlphaOptions")
    for stream in ("text", "json"):
        if get(f"log-{stream}-split-stream") and not alpha:
            errs.append(
                f"options.{stream}.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled"
            )
        if get(f"log-{stream}-info-buffer-size") and not alpha:
            errs.append(
                f"options.{stream}.infoBufferSize: Forbidden: Feature LoggingAlphaOptions is "
                "disabled"
            )
    return errs


def apply_logging(opts: Options) -> None:
    """``logsapi.ValidateAndApply`` once the flags are valid."""
    get = opts.get
    fmt = get("logging-format")
    logs.configure(
        verbosity=opts.verbosity,
        fmt=fmt,
        vmodule=get("vmodule"),
        split_stream=bool(get(f"log-{fmt}-split-stream")),
        info_buffer_size=int(get(f"log-{fmt}-info-buffer-size")),
        flush_frequency=get("log-flush-frequency") / 1e9,
    )


def main(opts: Options) -> int:
    """``kube-scheduler``'s ``runCommand`` after flag parsing; returns the exit status."""
    try:
        gate = resolve_gates(opts)
    except FeatureGateError as exc:
        log.error("command failed", err=exc)
        return 1
    reported = opts.get("version")
    git_version = reported if reported not in ("true", "false", "raw") else version.GIT_VERSION
    if reported == "raw":
        print(version.raw(git_version))
        return 0
    if reported == "true":
        print(f"Kubernetes {git_version}")
        return 0
    errs = _logging_errors(opts, gate)
    if errs:
        print(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]", file=sys.stderr)
        return 1
    apply_logging(opts)
    if log.enabled(1):
        for line in opts.print_flags():
            log.v(1).infof("%s", line)
    gate.log_not_acted_on()
    try:
        cfg = resolve_config(opts, gate)
        check_supported(cfg)
        profiles = profiles_from_config(cfg, gate.config_gates())  # fail before connecting
        if opts.shadow:
            from ksched.shadow import ShadowError, shadow_targets

            if cfg.extenders:
                raise RunError("shadow mode does not call scheduler extenders: remove them")
            try:
                shadow_targets(profiles, opts.shadow_scheduler_names)
            except ShadowError as exc:
                raise RunError(str(exc)) from exc
    except (ConfigError, RunError) as exc:
        log.error("command failed", err=exc)
        return 1
    if log.enabled(2) or opts.write_config_to:
        text = dump_yaml(cfg)
        log.v(2).info("Using component config", config=text)
        if opts.write_config_to:
            try:
                Path(opts.write_config_to).write_text(text, encoding="utf-8")
            except OSError as exc:
                log.error("command failed", err=exc)
                return 1
            log.info("Wrote configuration", file=opts.write_config_to)
            return 0
    if opts.secure_port < 0 or opts.secure_port > 65535:
        log.error(
            "command failed",
            err=f"--secure-port {opts.secure_port} must be between 0 and 65535, inclusive. "
            "0 for turning off secure port",
        )
        return 1
    try:
        component = ComponentMetrics.from_options(opts, git_version=git_version)
    except ValueError as exc:
        log.error("command failed", err=exc)
        return 1
    log.info("Starting Kubernetes Scheduler", version=git_version)
    log.info(
        "Python settings",
        PYTHONOPTIMIZE=os.environ.get("PYTHONOPTIMIZE", ""),
        PYTHONMALLOC=os.environ.get("PYTHONMALLOC", ""),
        PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", ""),
    )
    return aio.run(_run(cfg, opts, profiles, component))
