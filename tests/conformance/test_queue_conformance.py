"""ksched's queue, fed by its Scheduler's informer handlers, puts a pending pod where
kube-scheduler v1.36.5's own queue puts it, step by step, on seeded cases of cluster
events (:mod:`tests.conformance.queue`). ``python -m tests.conformance.queue --cases N
--seed S`` runs more and prints the first disagreements."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator

import pytest

from ksched.backend.queue.cluster_event import NODE, ActionType
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from tests.conformance.conftest import started_harness
from tests.conformance.queue import PROFILE, binary, compare, first_difference, generate
from tests.conformance.upstream import Upstream

SEED = 20261201
CASES = 1000


@pytest.fixture(scope="module")
def queue_upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    yield from started_harness(request, binary, "KSCHED_QUEUE_CONFORMANCE_BIN")


def test_seeded_cases_put_the_pod_where_upstreams_queue_does(queue_upstream: Upstream) -> None:
    disagreeing = []
    errors = []
    seen: Counter[str] = Counter()
    for case, theirs, ours, error in compare(
        (generate(SEED, i) for i in range(CASES)), queue_upstream
    ):
        if error:
            errors.append((case["id"], error))
            continue
        seen.update(theirs)
        d = first_difference(theirs, ours)
        if d is not None:
            disagreeing.append((case, d, theirs, ours))
    assert not errors, f"upstream refused cases: {errors[:3]}"
    if disagreeing:
        case, d, theirs, ours = disagreeing[0]
        raise AssertionError(
            f"{len(disagreeing)}/{CASES} cases disagree; the first, {case['id']}, at step {d}: "
            f"upstream {theirs[d]}, ksched {ours[d]}\n"
            + json.dumps(case["steps"][: d + 1], indent=1)[:6000]
        )
    # The cases visit every sub-queue, so agreement is not agreement on one answer.
    for where in ("active", "backoff", "unschedulable", "gated", "in-flight", "absent"):
        assert seen[where] >= CASES // 20, (where, seen)


def test_the_default_profiles_registrations_are_upstreams(queue_upstream: Upstream) -> None:
    """Every EventsToRegister entry of the default profile, as upstream's plugins return
    them (resource, action bits, whether a hint is set), plus buildQueueingHintMap's
    Node/UpdateNodeTaint for plugins registering Node/Add without it."""
    out = subprocess.run(
        [str(queue_upstream.path), "-events"], capture_output=True, check=True, timeout=120
    ).stdout
    theirs = {(r["plugin"], r["resource"], r["action"], r["hint"]) for r in json.loads(out)}
    node_add = {p for p, res, action, _ in theirs if res == NODE and action & ActionType.ADD}
    node_taint = {
        p for p, res, action, _ in theirs if res == NODE and action & ActionType.UPDATE_NODE_TAINT
    }
    theirs |= {(p, NODE, int(ActionType.UPDATE_NODE_TAINT), False) for p in node_add - node_taint}
    sched = Scheduler(InMemoryCluster(), {PROFILE: default_profile()}, seed=1)
    ours = {
        (p, r.event.resource, int(r.event.action), r.hint is not None)
        for p, r in sched.frameworks[PROFILE].enqueue_registrations()
    }
    assert sorted(ours - theirs) == [] and sorted(theirs - ours) == []
