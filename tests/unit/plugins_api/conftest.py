"""Fixtures for the out-of-tree plugin API: the example package installed for real."""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from ksched.framework.registry import Registry

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "gpu-memory-plugin"
DIST = "ksched-gpu-memory-plugin"


def _installed_matches_source() -> bool:
    """The installed copy of the example equals the source tree (skip reinstalling)."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    src = EXAMPLE / "src" / "ksched_gpu_memory" / "__init__.py"
    installed = dist.locate_file("ksched_gpu_memory/__init__.py")
    return Path(str(installed)).is_file() and Path(str(installed)).read_bytes() == src.read_bytes()


def install_example() -> None:
    """``pip install examples/gpu-memory-plugin`` into this interpreter's environment.

    Offline first (the environment's own setuptools), then with pip's isolated build
    (fetches setuptools from the index) when the local setuptools cannot build wheels.
    """
    if _installed_matches_source():
        return
    base = [sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", "-q"]
    attempts = [[*base, "--no-build-isolation", "--no-index", str(EXAMPLE)], [*base, str(EXAMPLE)]]
    outputs = []
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode == 0:
            importlib.invalidate_caches()
            return
        outputs.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    pytest.fail("cannot install examples/gpu-memory-plugin:\n" + "\n".join(outputs))


@pytest.fixture(scope="session")
def installed_registry() -> Registry:
    """The registry of the installed plugins, the example's GPUFit among them."""
    install_example()
    registry = Registry.from_entry_points()
    assert "GPUFit" in registry, registry.errors
    return registry
