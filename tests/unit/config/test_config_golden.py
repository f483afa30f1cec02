"""Golden tests: the effective config (``--write-config-to`` output) of sample files.

Each ``golden/<case>.in.yaml`` names, in its header comment, the upstream test case
(``pkg/scheduler/apis/config/v1/defaults_test.go``, ``default_plugins_test.go``,
``scheme/scheme_test.go``) whose expected struct it mirrors.  The expected output is
``<case>.out.yaml``; ``<case>.expanded.yaml`` holds the per-extension-point plugin
lists the framework builds from each profile (``name`` or ``name:weight`` for score).

Regenerate after a deliberate change with ``KSCHED_UPDATE_GOLDEN=1`` and review the
diff against the cited upstream case.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.config import dump_yaml, expand_profile_plugins, load_config

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name.removesuffix(".in.yaml") for p in GOLDEN.glob("*.in.yaml"))
UPDATE = os.environ.get("KSCHED_UPDATE_GOLDEN") == "1"

# Out-of-tree plugins the cases enable, as the plugin registry would describe them.
EXTENSION_POINTS = {
    "BarPlugin": ["bind"],
    "CustomScorer": ["preScore", "score"],
    "FooPlugin": ["filter"],
}


def _expanded(case: str) -> dict[str, Any]:
    cfg = load_config(
        GOLDEN / f"{case}.in.yaml",
        extra_plugins=EXTENSION_POINTS,
        extension_points=EXTENSION_POINTS,
    )
    out: dict[str, Any] = {}
    for prof in cfg.profiles:
        points = expand_profile_plugins(prof, EXTENSION_POINTS)
        out[prof.scheduler_name or ""] = {
            point: [f"{n}:{w}" if point == "score" else n for n, w in plugins]
            for point, plugins in points.items()
            if plugins
        }
    return out


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path.name}; run with KSCHED_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES)
def test_effective_config(case: str) -> None:
    cfg = load_config(
        GOLDEN / f"{case}.in.yaml",
        extra_plugins=EXTENSION_POINTS,
        extension_points=EXTENSION_POINTS,
    )
    _check(GOLDEN / f"{case}.out.yaml", dump_yaml(cfg))


@pytest.mark.parametrize("case", CASES)
def test_expanded_plugins(case: str) -> None:
    text = yaml.safe_dump(_expanded(case), sort_keys=False, default_flow_style=None, width=200)
    _check(GOLDEN / f"{case}.expanded.yaml", text)


@pytest.mark.parametrize("case", CASES)
def test_effective_config_round_trips(case: str, tmp_path: Path) -> None:
    """Feeding the written config back in yields the same effective config."""
    cfg = load_config(
        GOLDEN / f"{case}.in.yaml",
        extra_plugins=EXTENSION_POINTS,
        extension_points=EXTENSION_POINTS,
    )
    first = dump_yaml(cfg)
    again = tmp_path / "again.yaml"
    again.write_text(first, encoding="utf-8")
    cfg2 = load_config(again, extra_plugins=EXTENSION_POINTS, extension_points=EXTENSION_POINTS)
    assert dump_yaml(cfg2) == first
