"""Fixtures of the conformance tests: one ``ksched-conformance`` process per session.

The harness binary is built with the test control plane (``make control-plane``, or on
demand by :func:`ksched.testing.controlplane.ensure_binaries`); like the integration
tests, these tests are skipped when ``KSCHED_SKIP_INTEGRATION`` is set (no Go toolchain).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conformance.upstream import Upstream, binary


@pytest.fixture(scope="session")
def upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    if os.environ.get("KSCHED_SKIP_INTEGRATION", "") not in ("", "0") and not os.environ.get(
        "KSCHED_CONFORMANCE_BIN"
    ):
        pytest.skip("KSCHED_SKIP_INTEGRATION is set: no ksched-conformance binary")
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            path = binary()
    else:
        path = binary()
    with Upstream(path) as up:
        yield up
