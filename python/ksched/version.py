"""The version ksched reports: the Kubernetes release whose kube-scheduler it replaces.

``kube-scheduler --version`` prints ``Kubernetes <gitVersion>``, ``/statusz`` and
``kubernetes_build_info`` carry the same fields. ksched reports the Kubernetes version it
follows (v1.36.5) with its own version as SemVer build metadata
(``v1.36.5+ksched.0.1.0``): tools that compare versions see 1.36.5 (build metadata does
not take part in SemVer precedence), and a person reading it sees which program runs.
``GoVersion`` and ``Compiler`` are the Python runtime's, as ksched has no Go toolchain.
"""

from __future__ import annotations

import platform
import sys
from typing import Final

from ksched import __version__

__all__ = ["BINARY_VERSION", "GIT_VERSION", "info", "raw"]

#: The Kubernetes release ksched follows.
BINARY_VERSION: Final = "1.36.5"
GIT_VERSION: Final = f"v{BINARY_VERSION}+ksched.{__version__}"


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine)
    return f"{sys.platform}/{arch}"


def info(git_version: str = GIT_VERSION) -> dict[str, str]:
    """``version.Info``'s fields."""
    major, minor, _ = BINARY_VERSION.split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": _platform(),
    }


def raw(git_version: str = GIT_VERSION) -> str:
    """``--version=raw``: ``version.Info`` as Go's ``%#v`` prints it."""
    i = info(git_version)
    return (
        f'version.Info{{Major:"{i["major"]}", Minor:"{i["minor"]}", EmulationMajor:"", '
        f'EmulationMinor:"", MinCompatibilityMajor:"", MinCompatibilityMinor:"", '
        f'GitVersion:"{i["gitVersion"]}", GitCommit:"{i["gitCommit"]}", '
        f'GitTreeState:"{i["gitTreeState"]}", BuildDate:"{i["buildDate"]}", '
        f'GoVersion:"{i["goVersion"]}", Compiler:"{i["compiler"]}", '
        f'Platform:"{i["platform"]}"}}'
    )
