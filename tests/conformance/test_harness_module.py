"""The harness modules pin exactly the test control plane's modules.

``tests/conformance/harness`` (and ``tests/conformance/queueharness``, the queueing-hint
harness) is a Go module of its own (so that its sources do not
change the kube group's build stamp), but it must run the very code kube-scheduler is
built from: its ``go`` and ``godebug`` lines, ``require`` and ``replace`` blocks and
``go.sum`` equal ``hack/controlplane/kube``'s. These tests fail when one of the two is
bumped alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "hack" / "controlplane" / "kube"
HARNESSES = [ROOT / "tests" / "conformance" / d for d in ("harness", "queueharness")]


def directives(go_mod: str) -> dict[str, list[str]]:
    """``go.mod`` as {directive: [entries]}, blocks and single lines alike, comments kept
    (``// indirect`` is part of a requirement's line)."""
    out: dict[str, list[str]] = {}
    lines = iter(go_mod.splitlines())
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        m = re.match(r"^(\w+)\s+\($", line)
        if m:
            block = out.setdefault(m.group(1), [])
            for inner in lines:
                entry = inner.strip()
                if entry == ")":
                    break
                if entry and not entry.startswith("//"):
                    block.append(entry)
            continue
        name, _, rest = line.partition(" ")
        out.setdefault(name, []).append(rest.strip())
    return out


@pytest.mark.parametrize("harness", HARNESSES, ids=lambda p: p.name)
@pytest.mark.parametrize("directive", ["go", "godebug", "require", "replace"])
def test_go_mod_pins_the_same_modules(harness: Path, directive: str) -> None:
    kube = directives((KUBE / "go.mod").read_text())
    ours = directives((harness / "go.mod").read_text())
    assert sorted(ours.get(directive, [])) == sorted(kube.get(directive, []))


@pytest.mark.parametrize("harness", HARNESSES, ids=lambda p: p.name)
def test_go_sum_is_the_kube_groups(harness: Path) -> None:
    assert (harness / "go.sum").read_text() == (KUBE / "go.sum").read_text()


@pytest.mark.parametrize("harness", HARNESSES, ids=lambda p: p.name)
def test_the_module_is_named_after_its_directory(harness: Path) -> None:
    assert directives((harness / "go.mod").read_text())["module"] == [
        f"ksched.local/tests/conformance/{harness.name}"
    ]


def test_directives_reads_blocks_and_lines() -> None:
    text = "module m\n\ngo 1.26.0\n\nrequire (\n\ta v1 // indirect\n\t// note\n\tb v2\n)\n"
    assert directives(text) == {
        "module": ["m"],
        "go": ["1.26.0"],
        "require": ["a v1 // indirect", "b v2"],
    }
