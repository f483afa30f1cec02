"""Fixtures of the chaos suite: a control plane of its own, the loop sizes, the figures.

Each scenario runs ``ksched run`` replicas against a real kube-apiserver + etcd that
only this suite uses (it restarts the apiserver and compacts etcd), with bounded
loops, and checks the invariants of :mod:`tests.chaos.harness` at the end.

Sizes: ``make test`` runs one short round of each scenario; ``make chaos`` sets
``KSCHED_CHAOS_FULL=1`` (the full loops: 15 leader kills during 5,000 pods, 5 paused
leader rounds, two apiserver restarts and a compaction with 1,000 pods each) and
``KSCHED_CHAOS_ROUNDS=N`` repeats each full loop N times. The figures (failover
times, drain times, what each round bound and deleted) are printed in the terminal
summary.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ksched.testing.controlplane import ControlPlane
from ksched.testing.pytest_plugin import started_control_plane
from tests.chaos.harness import FIGURES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.chaos)


def pytest_terminal_summary(
    terminalreporter: object, exitstatus: int, config: pytest.Config
) -> None:
    if not FIGURES:
        return
    write = getattr(terminalreporter, "write_line")  # noqa: B009 - a pytest plugin object
    section = getattr(terminalreporter, "section")  # noqa: B009
    section("chaos figures")
    for line in FIGURES:
        write(line)


@pytest.fixture(scope="session")
def chaos_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A control plane of the suite's own: the scenarios restart its apiserver and
    compact its etcd, which the session's shared one must not see."""
    with started_control_plane(request.config) as cp:
        yield cp
