"""ksched's pytest plugin: fixtures for scheduling-policy tests and benchmarks.

Registered under the ``pytest11`` entry point, so it is active wherever ksched is
installed; it imports nothing of ksched's scheduler and starts nothing until a test asks
for one of its fixtures:

``ksched_cluster``
    A fresh :class:`~ksched.testing.Cluster` (embedded, in memory) per test.
``ksched_scheduler(config=None, *, cluster=None, plugins=None, seed=1, timeout=120)``
    The real scheduler (:class:`~ksched.testing.EmbeddedScheduler`) on ``ksched_cluster``
    (or ``cluster``) with a KubeSchedulerConfiguration (a path, YAML text, a dict);
    ``plugins`` maps out-of-tree plugin names to factories. Stopped after the test.
``ksched_benchmark(workload, *, rounds=3, warmup_rounds=0, before_each=None,
config=None, plugins=None, nodes=None, pods=None, existing_pods=None, scale=1.0, seed=1)``
    Runs a workload with pytest-benchmark's ``benchmark`` (``pedantic``, one run per
    round; ``before_each`` is called, untimed, before every round) and records pods/s,
    attempt p50/p99 and peak RSS in its ``extra_info``; returns a
    :class:`~ksched.testing.BenchmarkResult`. Needs ``pytest-benchmark``.
``ksched_control_plane``
    A real kube-apiserver v1.36 + etcd (:class:`~ksched.testing.ControlPlane`) for the
    session; ``start_controller_manager([...])`` adds kube-controller-manager. The first
    use builds the binaries from Go modules (a few minutes; needs Go and a source
    checkout of ksched, or ``KSCHED_CONTROLPLANE_BIN_DIR`` pointing at built binaries)
    into ``~/.cache/ksched/`` (``$KSCHED_CACHE_DIR``); later sessions start in seconds.
    Override the ``ksched_control_plane_options`` fixture to pass ControlPlane
    arguments (an audit policy, apiserver flags). ``KSCHED_SKIP_INTEGRATION=1`` skips
    the tests that use it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ksched.testing.benchmark import BenchmarkResult
    from ksched.testing.cluster import Cluster
    from ksched.testing.controlplane import ControlPlane
    from ksched.testing.scheduler import EmbeddedScheduler

__all__ = [
    "ksched_benchmark",
    "ksched_cluster",
    "ksched_control_plane",
    "ksched_control_plane_options",
    "ksched_scheduler",
]


@pytest.fixture
def ksched_cluster() -> Cluster:
    """A fresh embedded cluster (:class:`ksched.testing.Cluster`)."""
    from ksched.testing.cluster import Cluster

    return Cluster()


@pytest.fixture
def ksched_scheduler(ksched_cluster: Cluster) -> Iterator[Callable[..., EmbeddedScheduler]]:
    """``ksched_scheduler(config=None, *, cluster=None, plugins=None, seed=1,
    timeout=120, feature_gates=None, volume_controller=True)``: the real scheduler on
    ``ksched_cluster`` (or ``cluster``); ``feature_gates`` as kube-scheduler's
    ``--feature-gates`` (``"GenericWorkload=true,GangScheduling=true"`` for pod groups);
    ``volume_controller`` binds the claims VolumeBinding chose volumes for
    (:mod:`ksched.sim.volume_controller`)."""
    from ksched.testing.scheduler import EmbeddedScheduler

    started: list[EmbeddedScheduler] = []

    def make(
        config: Any = None,
        *,
        cluster: Cluster | None = None,
        plugins: Any = None,
        seed: int = 1,
        timeout: float = 120.0,
        feature_gates: Any = None,
        volume_controller: bool = True,
    ) -> EmbeddedScheduler:
        sched = EmbeddedScheduler(
            cluster if cluster is not None else ksched_cluster,
            config,
            plugins=plugins,
            seed=seed,
            timeout=timeout,
            feature_gates=feature_gates,
            volume_controller=volume_controller,
        )
        started.append(sched)
        return sched

    yield make
    for sched in reversed(started):
        sched.close()


@pytest.fixture
def ksched_benchmark(request: pytest.FixtureRequest) -> Callable[..., BenchmarkResult]:
    """``ksched_benchmark(workload, *, rounds=3, ...)``: pytest-benchmark's
    ``benchmark`` running a ksched workload; see the module docstring."""
    from ksched.testing.benchmark import BenchmarkResult, run_workload

    try:
        benchmark = request.getfixturevalue("benchmark")
    except pytest.FixtureLookupError:
        pytest.fail("ksched_benchmark needs pytest-benchmark: pip install pytest-benchmark")

    def run(
        workload: str,
        *,
        rounds: int = 3,
        warmup_rounds: int = 0,
        before_each: Callable[[], object] | None = None,
        **kw: Any,
    ) -> BenchmarkResult:
        rounds_done = []

        def once() -> None:
            rounds_done.append(run_workload(workload, **kw))

        def setup() -> None:
            if before_each is not None:
                before_each()

        benchmark.pedantic(
            once,
            rounds=rounds,
            iterations=1,
            warmup_rounds=warmup_rounds,
            setup=setup if before_each is not None else None,
        )
        # Warm-up rounds are not measured (pytest-benchmark discards them too).
        result = BenchmarkResult(rounds_done[warmup_rounds:] or rounds_done)
        benchmark.extra_info.update(result.extra_info())
        return result

    return run


@pytest.fixture(scope="session")
def ksched_control_plane_options() -> dict[str, Any]:
    """Keyword arguments of :class:`~ksched.testing.ControlPlane` for
    ``ksched_control_plane``; override it in a ``conftest.py``."""
    return {}


@pytest.fixture(scope="session")
def ksched_control_plane(
    request: pytest.FixtureRequest, ksched_control_plane_options: dict[str, Any]
) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver v1.36 for the session (see the module docstring)."""
    if os.environ.get("KSCHED_SKIP_INTEGRATION", "") not in ("", "0"):
        pytest.skip("KSCHED_SKIP_INTEGRATION is set")
    from ksched.testing.controlplane import ControlPlane, ensure_binaries

    # The first build can take minutes: show its progress instead of capturing it.
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            bin_dir = ensure_binaries()
    else:
        bin_dir = ensure_binaries()
    cp = ControlPlane(bin_dir=bin_dir, **ksched_control_plane_options)
    cp.start()
    try:
        yield cp
    finally:
        cp.stop()
