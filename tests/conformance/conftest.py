"""Fixtures of the conformance tests: one ``ksched-conformance`` process per session.

The harness binary is built with the test control plane (``make control-plane``, or on
demand by :func:`ksched.testing.controlplane.ensure_binaries`); like the integration
tests, these tests are skipped when ``KSCHED_SKIP_INTEGRATION`` is set (no Go toolchain).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conformance.upstream import Upstream, binary


def started_harness(
    request: pytest.FixtureRequest, binary: Callable[[], Path], env: str
) -> Iterator[Upstream]:
    """A harness process from ``binary()`` (built on first use, its progress shown
    rather than captured), skipped under ``KSCHED_SKIP_INTEGRATION`` unless ``env``
    names a binary."""
    if os.environ.get("KSCHED_SKIP_INTEGRATION", "") not in ("", "0") and not os.environ.get(env):
        pytest.skip(f"KSCHED_SKIP_INTEGRATION is set and {env} is not: no harness binary")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            path = binary()
    else:
        path = binary()
    with Upstream(path) as up:
        yield up


@pytest.fixture(scope="session")
def upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    yield from started_harness(request, binary, "KSCHED_CONFORMANCE_BIN")
