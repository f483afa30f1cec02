"""An Event's name and ``eventTime`` (``ksched.events``): RFC 3339 with microseconds, and
one reading of the clock for both, as upstream's ``makeEvent``
(``GenerateEventName(name, timestamp.UnixNano())``)."""

from __future__ import annotations

import calendar
import time

import pytest

from ksched.api.pod import Pod
from ksched.events import _now, make_event
from ksched.sim.workloads import make_pod

NS = 1_000_000_000
BASE = calendar.timegm((2026, 12, 2, 1, 2, 3)) * NS

CASES = [
    ("whole-second", BASE, "2026-12-02T01:02:03.000000Z"),
    ("microseconds", BASE + 123_456_000, "2026-12-02T01:02:03.123456Z"),
    ("nanoseconds-truncated", BASE + 999_999_999, "2026-12-02T01:02:03.999999Z"),
    ("next-second", BASE + NS + 1_000, "2026-12-02T01:02:04.000001Z"),
]


@pytest.mark.parametrize(("ns", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_micro_time(ns: int, text: str) -> None:
    assert _now(ns) == text


def test_name_and_event_time_share_one_reading() -> None:
    obj = make_pod("web-0")
    obj["metadata"].update(uid="u", resourceVersion="1")
    pod = Pod.from_dict(obj)
    before = time.time_ns()
    ev = make_event(
        pod,
        type_="Normal",
        reason="Scheduled",
        action="Binding",
        note="x",
        reporting_controller="default-scheduler",
        reporting_instance="default-scheduler-host",
    )
    name, _, suffix = ev["metadata"]["name"].rpartition(".")
    assert name == "web-0"
    stamp = int(suffix, 16)
    assert before <= stamp <= time.time_ns()
    assert ev["eventTime"] == _now(stamp)
