"""The framework runtime on its own: extension point rules, statuses, Permit waits.

Timers are fake (``FakeTimers``): a Permit timeout fires when the test says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ksched.api.pod import Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.profile import default_profile
from ksched.framework.runtime import MAX_PERMIT_TIMEOUT, Framework, go_duration
from ksched.framework.status import Code, Status
from tests.helpers import parsed_pod


class FakeTimers:
    """``call_later`` that records timers; ``fire`` runs the ones due by ``now``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[_Timer] = []

    def __call__(self, delay: float, fn: Callable[..., None], *args: Any) -> _Timer:
        t = _Timer(self.now + delay, fn, args)
        self.timers.append(t)
        return t

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for t in list(self.timers):
            if not t.cancelled and t.when <= self.now:
                t.cancelled = True
                t.fn(*t.args)


class _Timer:
    def __init__(self, when: float, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.when = when
        self.fn = fn
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Log(list[tuple[str, str]]):
    pass


class ReservePlugin:
    def __init__(self, name: str, log: Log, status: Status | None = None) -> None:
        self.name = name
        self.log = log
        self.status = status

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        self.log.append(("reserve", self.name))
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        self.log.append(("unreserve", self.name))


class PermitPlugin:
    def __init__(self, name: str, status: Status | None, timeout: float = 0.0) -> None:
        self.name = name
        self.status = status
        self.timeout = timeout

    def permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status | None, float]:
        return self.status, self.timeout


class Raising:
    name = "Raising"

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        raise RuntimeError("boom")

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        raise RuntimeError("unreserve boom")


class BindPlugin:
    def __init__(self, name: str, status: Status | None, log: Log) -> None:
        self.name = name
        self.status = status
        self.log = log

    async def bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        self.log.append(("bind", self.name))
        return self.status


def framework(*plugins: Any, timers: FakeTimers | None = None) -> Framework:
    return Framework(default_profile(), plugins=list(plugins), call_later=timers)


POD = parsed_pod("p")


# ---- Reserve / Unreserve ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("failing", "want_log", "want_code"),
    [
        pytest.param(
            None,
            [("reserve", "A"), ("reserve", "B"), ("reserve", "C")],
            None,
            id="all-reserve",
        ),
        pytest.param(
            "B",
            [("reserve", "A"), ("reserve", "B")],
            Code.UNSCHEDULABLE,
            id="stops-at-first-rejection",
        ),
    ],
)
def test_reserve_runs_in_order_and_stops_at_the_first_failure(
    failing: str | None, want_log: list[tuple[str, str]], want_code: Code | None
):
    log = Log()
    plugins = [
        ReservePlugin(n, log, Status(Code.UNSCHEDULABLE, "no") if n == failing else None)
        for n in "ABC"
    ]
    fw = framework(*plugins)
    s = fw.run_reserve(CycleState(), POD, "n1")
    assert log == want_log
    assert (s.code if s else None) == want_code
    if s is not None:
        assert s.plugin == failing


def test_unreserve_runs_every_reserve_plugin_in_reverse_order():
    log = Log()
    fw = framework(*(ReservePlugin(n, log) for n in "ABC"))
    fw.run_unreserve(CycleState(), POD, "n1")
    assert log == [("unreserve", "C"), ("unreserve", "B"), ("unreserve", "A")]


def test_plugin_that_raises_gets_an_error_status_naming_it():
    fw = framework(Raising())
    s = fw.run_reserve(CycleState(), POD, "n1")
    assert s is not None and s.code is Code.ERROR
    assert s.message == 'running Reserve plugin "Raising": boom'
    assert s.plugin == "Raising"
    fw.run_unreserve(CycleState(), POD, "n1")  # logged, never raised


def test_extension_point_durations_are_recorded_with_status():
    log = Log()
    fw = framework(ReservePlugin("A", log, Status(Code.UNSCHEDULABLE, "full")))
    fw.run_reserve(CycleState(), POD, "n1")
    series = fw.metrics.framework_extension_point_duration.series
    assert series[("Reserve", "Unschedulable", "default-scheduler")].count == 1


def test_plugin_durations_only_in_sampled_cycles():
    log = Log()
    fw = framework(ReservePlugin("A", log))
    fw.run_reserve(CycleState(record_plugin_metrics=False), POD, "n1")
    assert fw.metrics.plugin_execution_duration.series == {}
    fw.run_reserve(CycleState(record_plugin_metrics=True), POD, "n1")
    assert ("A", "Reserve", "Success") in fw.metrics.plugin_execution_duration.series


# ---- Permit ----------------------------------------------------------------------------------


async def test_permit_rejection_stops_at_once():
    fw = framework(
        PermitPlugin("Deny", Status(Code.UNSCHEDULABLE, "not now")),
        PermitPlugin("Wait", Status(Code.WAIT), 10),
    )
    s = fw.run_permit(CycleState(), POD, "n1")
    assert s is not None and s.code is Code.UNSCHEDULABLE and s.plugin == "Deny"
    assert len(fw.waiting_pods) == 0


async def test_permit_wait_until_every_waiting_plugin_allows():
    timers = FakeTimers()
    fw = framework(
        PermitPlugin("A", Status(Code.WAIT), 10),
        PermitPlugin("B", Status(Code.WAIT), 20),
        timers=timers,
    )
    s = fw.run_permit(CycleState(), POD, "n1")
    assert s is not None and s.code is Code.WAIT
    assert s.message == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    waiter = asyncio.get_running_loop().create_task(fw.wait_on_permit(POD))
    wp = fw.waiting_pods.get(POD.uid)
    assert wp is not None and sorted(wp.pending_plugins()) == ["A", "B"]
    wp.allow("A")
    await asyncio.sleep(0)
    assert not waiter.done()
    wp.allow("B")
    assert await waiter is None
    assert fw.waiting_pods.get(POD.uid) is None
    assert all(t.cancelled for t in timers.timers)
    assert fw.metrics.permit_wait_duration.series[("Success",)].count == 1


async def test_permit_waiting_pod_rejected_from_elsewhere():
    fw = framework(PermitPlugin("A", Status(Code.WAIT), 10), timers=FakeTimers())
    fw.run_permit(CycleState(), POD, "n1")
    waiter = asyncio.get_running_loop().create_task(fw.wait_on_permit(POD))
    wp = fw.waiting_pods.get(POD.uid)
    assert wp is not None
    wp.reject("Coscheduling", "gang incomplete")
    s = await waiter
    assert s is not None and s.code is Code.UNSCHEDULABLE
    assert (s.plugin, s.message) == ("Coscheduling", "gang incomplete")


@pytest.mark.parametrize(
    ("timeout", "want_message"),
    [
        pytest.param(10, "rejected due to timeout after waiting 10s at plugin A", id="seconds"),
        pytest.param(0.5, "rejected due to timeout after waiting 500ms at plugin A", id="millis"),
        pytest.param(
            3600, "rejected due to timeout after waiting 15m0s at plugin A", id="capped-at-15m"
        ),
    ],
)
async def test_permit_timeout_rejects_the_pod(timeout: float, want_message: str):
    timers = FakeTimers()
    fw = framework(PermitPlugin("A", Status(Code.WAIT), timeout), timers=timers)
    fw.run_permit(CycleState(), POD, "n1")
    waiter = asyncio.get_running_loop().create_task(fw.wait_on_permit(POD))
    timers.advance(min(timeout, MAX_PERMIT_TIMEOUT) - 0.001)
    await asyncio.sleep(0)
    assert not waiter.done()
    timers.advance(0.001)
    s = await waiter
    assert s is not None and s.code is Code.UNSCHEDULABLE
    assert s.message == want_message
    assert fw.metrics.permit_wait_duration.series[("Unschedulable",)].count == 1


async def test_wait_on_permit_without_waiting_pod_returns_at_once():
    fw = framework()
    assert await fw.wait_on_permit(POD) is None


# ---- Bind ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "want_calls", "want_code"),
    [
        pytest.param([None, None], ["First"], None, id="first-binder-wins"),
        pytest.param([Status(Code.SKIP), None], ["First", "Second"], None, id="skip-passes-on"),
        pytest.param(
            [Status(Code.SKIP), Status(Code.SKIP)], ["First", "Second"], Code.SKIP, id="all-skip"
        ),
        pytest.param(
            [Status(Code.ERROR, "etcd down"), None], ["First"], Code.ERROR, id="error-stops"
        ),
    ],
)
async def test_bind_runs_until_a_plugin_does_not_skip(
    statuses: list[Status | None], want_calls: list[str], want_code: Code | None
):
    log = Log()
    fw = framework(BindPlugin("First", statuses[0], log), BindPlugin("Second", statuses[1], log))
    s = await fw.run_bind(CycleState(), POD, "n1")
    assert [name for _, name in log] == want_calls
    assert (s.code if s else None) == want_code
    if want_code is Code.ERROR:
        assert s is not None and s.message == 'running Bind plugin "First": etcd down'


async def test_no_bind_plugin_is_a_skip():
    fw = framework()
    s = await fw.run_bind(CycleState(), POD, "n1")
    assert s is not None and s.code is Code.SKIP


# ---- statuses and helpers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "rejected"),
    [
        (Code.SUCCESS, False),
        (Code.ERROR, False),
        (Code.UNSCHEDULABLE, True),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, True),
        (Code.PENDING, True),
        (Code.WAIT, False),
        (Code.SKIP, False),
    ],
)
def test_status_rejection_codes(code: Code, rejected: bool):
    assert Status(code).is_rejected() is rejected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.5, "500ms"),
        (1.5, "1.5s"),
        (10, "10s"),
        (90, "1m30s"),
        (900, "15m0s"),
        (3661, "1h1m1s"),
    ],
)
def test_go_duration(seconds: float, text: str):
    assert go_duration(seconds) == text


def test_default_framework_has_python_side_defaults():
    fw = Framework(default_profile())
    assert [p.name for p in fw.points.pre_enqueue] == [
        "SchedulingGates",
        "DynamicResources",
        "DefaultPreemption",
    ]
    assert [p.name for p in fw.points.post_filter] == ["DynamicResources", "DefaultPreemption"]
    assert [p.name for p in fw.points.bind] == ["DefaultBinder"]
    assert [p.name for p in fw.points.queue_sort] == ["PrioritySort"]
    # DynamicResources runs in Python, but only for pods that name ResourceClaims.
    assert fw.python_placement
    pod = parsed_pod("plain")
    plain = fw.for_pod(pod)
    assert not plain.python_placement
    # VolumeBinding's Reserve is there, for pods with claims only; DynamicResources' is gone.
    assert [p.name for p in plain.points.reserve] == ["VolumeBinding"]
    assert not plain.needs_reserve_or_permit(pod) and not plain.needs_kernel_pre_filter(pod)
    assert fw.needs_reserve_or_permit(pod)  # DynamicResources' Reserve has no applies_to
    assert [p.name for p in plain.points.post_filter] == ["DynamicResources", "DefaultPreemption"]
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}
    with_claim = parsed_pod("with-claim")
    with_claim.raw["spec"].update(claims)
    assert fw.for_pod(with_claim) is fw
    names = {name for name, _ in fw.enqueue_registrations()}
    assert {"NodeResourcesFit", "NodeUnschedulable", "NodeName", "SchedulingGates"} <= names
