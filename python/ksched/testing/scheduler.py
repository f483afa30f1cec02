"""The real scheduler on an embedded cluster, driven from a test (``ksched_scheduler``).

:class:`EmbeddedScheduler` builds ksched's :class:`~ksched.scheduler.Scheduler` exactly as
``ksched run`` does from a ``KubeSchedulerConfiguration`` (a path, YAML text, a dict, or
None for the defaults), with the installed out-of-tree plugins and any given as
factories (``plugins={"GPUFit": GPUFit}``: a plugin under test need not be installed),
and runs it on a :class:`~ksched.testing.Cluster`.

It runs on an event loop of its own in a background thread, so the calls below are
plain blocking calls, from synchronous tests and from ``async`` ones alike:

* :meth:`EmbeddedScheduler.schedule` creates pods and waits until the scheduler has
  nothing left to do (every pod bound, or waiting as unschedulable for a cluster change;
  no binding, preemption or event in flight), then returns a :class:`ScheduleOutcome`:
  where each pod went and, for those that did not fit, the FailedScheduling message —
  the ``PodScheduled`` condition the scheduler wrote;
* :meth:`EmbeddedScheduler.explain` is ``ksched explain`` on the same scheduler: one
  attempt, node by node, binding nothing (:class:`~ksched.explain.Explanation`).

Placements are reproducible for a ``seed`` (the snapshot's tie-breaks and Python's
``random``, as ``ksched replay --seed``). ``feature_gates`` takes kube-scheduler's
``--feature-gates`` values (pod groups need ``GenericWorkload=true,GangScheduling=true``);
beside the scheduler runs what kube-controller-manager's PV controller and a
provisioner do with the volumes VolumeBinding's PreBind chose
(:mod:`ksched.sim.volume_controller`; ``volume_controller=False`` turns it off), so a pod with
an unbound claim binds as on a real cluster.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import random
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

if TYPE_CHECKING:
    from ksched.config import FeatureGates, KubeSchedulerConfiguration
    from ksched.explain import Explanation
    from ksched.framework.registry import Registry
    from ksched.scheduler import Scheduler
    from ksched.testing.assertions import Placement
    from ksched.testing.cluster import Cluster

__all__ = [
    "EmbeddedScheduler",
    "GateValues",
    "ScheduleOutcome",
    "feature_gates_of",
    "load_config_and_registry",
]

T = TypeVar("T")
Obj = dict[str, Any]

_HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


#: ``feature_gates``: kube-scheduler's ``--feature-gates`` text (``"A=true,B=false"``,
#: or several such), or gate name → value.
GateValues = str | Sequence[str] | Mapping[str, bool]


def feature_gates_of(values: GateValues | None) -> FeatureGates:
    """The :class:`~ksched.config.FeatureGates` the scheduler reads for ``values``, with
    kube-scheduler's checks (unknown gates, unmet dependencies raise
    :class:`~ksched.config.features.FeatureGateError`)."""
    from ksched.config import DEFAULT_FEATURE_GATES
    from ksched.config.features import FeatureGate

    if not values:
        return DEFAULT_FEATURE_GATES
    if isinstance(values, Mapping):
        flags = [",".join(f"{k}={str(bool(v)).lower()}" for k, v in values.items())]
    elif isinstance(values, str):
        flags = [values]
    else:
        flags = list(values)
    return FeatureGate.from_flags(flags).config_gates()


def load_config_and_registry(
    config: str | Path | Mapping[str, Any] | KubeSchedulerConfiguration | None,
    plugins: Mapping[str, Any] | None = None,
    gates: FeatureGates | None = None,
) -> tuple[KubeSchedulerConfiguration, Registry]:
    """The configuration (loaded and validated as ``ksched run --config`` does, for
    ``gates``) and the plugin registry: the installed plugins, and ``plugins`` (name →
    factory) over them. Raises :class:`~ksched.config.ConfigError` naming every problem."""
    from ksched.config import DEFAULT_FEATURE_GATES, KubeSchedulerConfiguration, load_config_bytes
    from ksched.framework.registry import Registry, default_registry

    registry = Registry([e for e in default_registry() if e.name not in (plugins or {})])
    for name, factory in (plugins or {}).items():
        registry.register(name, factory, source="given to ksched_scheduler")
    extra = {"extra_plugins": registry.names(), "extension_points": registry.extension_points()}
    if isinstance(config, KubeSchedulerConfiguration):
        return config, registry
    if config is None:
        data, source = yaml.safe_dump(_HEAD).encode(), "<defaults>"
    elif isinstance(config, Mapping):
        data, source = yaml.safe_dump({**_HEAD, **dict(config)}).encode(), "<dict>"
    elif isinstance(config, Path) or "\n" not in config:
        path = Path(config)
        data, source = path.read_bytes(), str(path)
    else:
        data, source = config.encode(), "<yaml>"
    cfg = load_config_bytes(data, source, gates=gates or DEFAULT_FEATURE_GATES, **extra)  # type: ignore[arg-type]
    return cfg, registry


@dataclass(slots=True)
class ScheduleOutcome:
    """What one :meth:`EmbeddedScheduler.schedule` call did with its pods."""

    #: ``namespace/name`` → node, for the pods that were bound.
    placements: dict[str, str]
    #: ``namespace/name`` → FailedScheduling message, for the pods that did not fit.
    unschedulable: dict[str, str]
    #: The whole cluster's placement afterwards (what the assertions read).
    placement: Placement
    #: Pods evicted by preemption meanwhile (``namespace/name``).
    evicted: list[str] = field(default_factory=list)

    def __getitem__(self, pod: str) -> str:
        """The node of a pod (``namespace/name``, or a name unique among the pods)."""
        return self.placements[self._key(pod, self.placements)]

    def _key(self, pod: str, among: Mapping[str, str]) -> str:
        if "/" in pod or pod in among:
            return pod
        found = [k for k in among if k.split("/", 1)[1] == pod]
        if len(found) != 1:
            raise KeyError(f"no single pod named {pod!r} among {sorted(among)[:10]}")
        return found[0]

    def node_of(self, pod: str) -> str | None:
        try:
            return self[pod]
        except KeyError:
            return None

    def message_of(self, pod: str) -> str:
        return self.unschedulable[self._key(pod, self.unschedulable)]


class EmbeddedScheduler:
    """ksched scheduling a :class:`~ksched.testing.Cluster`; see the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        config: str | Path | Mapping[str, Any] | KubeSchedulerConfiguration | None = None,
        *,
        plugins: Mapping[str, Any] | None = None,
        seed: int = 1,
        timeout: float = 120.0,
        feature_gates: GateValues | None = None,
        volume_controller: bool = True,
    ) -> None:
        from ksched.framework.extender import build_extenders
        from ksched.profiles import build_profiles

        self.cluster = cluster
        self.timeout = timeout
        #: The feature gates the scheduler runs with (``feature_gates``).
        self.gates = gates = feature_gates_of(feature_gates)
        self.config, self.registry = load_config_and_registry(config, plugins, gates)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="ksched-embedded-scheduler", daemon=True
        )
        self._thread.start()
        cluster._attach(self._call)
        self._closed = False
        cfg = self.config

        async def start() -> Scheduler:
            from ksched.scheduler import Scheduler

            random.seed(seed)
            sched = Scheduler(
                cluster.api,
                build_profiles(cfg, self.registry, gates=gates),
                seed=seed,
                feature_gates=gates,
                pod_initial_backoff=float(cfg.pod_initial_backoff_seconds or 1),
                pod_max_backoff=float(cfg.pod_max_backoff_seconds or 10),
                extenders=build_extenders(cfg.extenders),
            )
            await sched.start()
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(sched.run())
            self._volumes: asyncio.Task[None] | None = None
            if volume_controller:
                from ksched.sim.volume_controller import run as run_volume_controller

                self._volumes = loop.create_task(run_volume_controller(cluster.api))
            return sched

        try:
            self.scheduler: Scheduler = self._run(start())
        except BaseException:
            self.close()
            raise

    # ---- the loop thread ---------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("EmbeddedScheduler methods cannot be called from its own loop")
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout if timeout is not None else self.timeout + 30)

    def _call(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is self._thread:
            return fn()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(call)
        return done.result(self.timeout)

    # ---- scheduling --------------------------------------------------------------

    def schedule(self, pods: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> ScheduleOutcome:
        """Create ``pods`` and wait until the scheduler is idle; see the module
        docstring. Raises ``TimeoutError`` when it is still busy after ``timeout``."""
        objs = [pods] if isinstance(pods, Mapping) else list(pods)
        return self._run(self._schedule([copy.deepcopy(dict(p)) for p in objs]))

    async def _schedule(self, objs: list[Obj]) -> ScheduleOutcome:
        from ksched.replay import wait_idle
        from ksched.testing.assertions import Placement

        api = self.cluster.api
        before = {_key(p) for p in api.objects("pods")}
        keys = []
        for obj in objs:
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", "default")
            keys.append(_key(api.create("pods", obj)))
        if not await wait_idle(self.scheduler, api, time.perf_counter() + self.timeout):
            raise TimeoutError(
                f"the scheduler was still busy after {self.timeout:.0f}s "
                f"({self.scheduler.queue.counts()})"
            )
        # The events it recorded (Scheduled, FailedScheduling...) are in the cluster too.
        await self.scheduler.recorder.drain()
        current = {_key(p): p for p in api.objects("pods")}
        placements: dict[str, str] = {}
        unschedulable: dict[str, str] = {}
        for key in keys:
            now = current.get(key)
            if now is None:
                continue
            node = (now.get("spec") or {}).get("nodeName")
            if node:
                placements[key] = node
            else:
                unschedulable[key] = _condition_message(now)
        evicted = sorted(k for k in before if k not in current)
        return ScheduleOutcome(
            placements,
            unschedulable,
            Placement.of(api.objects("nodes"), list(current.values())),
            evicted,
        )

    def explain(
        self,
        pod: Mapping[str, Any] | str,
        *,
        all_nodes: bool = False,
        profile: str | None = None,
    ) -> Explanation:
        """``ksched explain`` for a pod object (not created: as ``-f``) or the
        ``namespace/name`` of a pending pod of the cluster; binds nothing."""
        return self._run(self._explain(pod, all_nodes=all_nodes, profile=profile))

    async def _explain(
        self, pod: Mapping[str, Any] | str, *, all_nodes: bool, profile: str | None
    ) -> Explanation:
        from ksched.api.pod import Pod
        from ksched.commands.explain import pod_from_manifest
        from ksched.explain import explain_pod

        sched = self.scheduler
        if isinstance(pod, str):
            key = pod if "/" in pod else f"default/{pod}"
            obj = sched.pod_informer.store.get(key)
            if obj is None:
                raise KeyError(f"no pod {key} in the cluster")
            parsed = Pod.from_dict(obj)
        else:
            classes = {
                str(pc["metadata"]["name"]): int(pc.get("value", 0))
                for pc in self.cluster.api.objects("priorityclasses")
            }
            parsed = pod_from_manifest(dict(pod), "pod", namespace=None, classes=classes)
        return await explain_pod(sched, parsed, profile=profile, all_nodes=all_nodes)

    def metrics(self) -> str:
        """The scheduler's ``/metrics`` text."""
        from prometheus_client import generate_latest

        return self._call(lambda: generate_latest(self.scheduler.metrics.registry).decode())

    # ---- lifecycle -----------------------------------------------------------------

    def close(self) -> None:
        """Stop the scheduler (bindings in flight finish) and its thread."""
        if getattr(self, "_closed", True):
            return
        self._closed = True

        async def stop() -> None:
            sched = getattr(self, "scheduler", None)
            if sched is not None:
                await sched.shutdown()
                tasks = [t for t in (self._task, self._volumes) if t is not None]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

        try:
            if getattr(self, "scheduler", None) is not None:
                self._run(stop(), timeout=60)
        finally:
            self.cluster._attach(None)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    def __enter__(self) -> EmbeddedScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _condition_message(obj: Mapping[str, Any]) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if (
            isinstance(cond, dict)
            and cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
        ):
            return str(cond.get("message") or cond.get("reason") or "")
    return "not attempted"
