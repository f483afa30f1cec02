"""Reproducible installs: the Docker image pins its base images by digest and installs
the same locked Python set as every other install (constraints.txt), and that set
covers each dependency pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt: {line!r} is not pinned with =="
        pins[_name(name)] = version
    return pins


def test_every_base_image_is_pinned_by_digest() -> None:
    froms = [
        line.split()[1]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("FROM ")
    ]
    assert len(froms) == 2
    for image in froms:
        assert re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", image), image


def test_the_image_installs_the_locked_set() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("-c constraints.txt") + text.count("-c /tmp/constraints.txt") == 2
    assert "--locked" in text  # Cargo.lock


def test_constraints_pin_every_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += extra
    pins = _constraints()
    missing = sorted({_name(r) for r in declared} - set(pins))
    assert not missing, f"constraints.txt lacks {missing} (run make constraints)"
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert all(_name(r) in pins for r in build)
