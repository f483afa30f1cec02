"""Shared helpers for the config tests: load a YAML snippet, assert exact errors."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

import pytest

from ksched.config import ConfigError, FeatureGates, KubeSchedulerConfiguration
from ksched.config.defaults import DEFAULT_FEATURE_GATES
from ksched.config.load import load_config_bytes

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(
    body: str,
    *,
    extra: Iterable[str] = (),
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
    header: bool = True,
) -> KubeSchedulerConfiguration:
    text = (HEADER if header else "") + textwrap.dedent(body)
    return load_config_bytes(text.encode(), "test.yaml", extra_plugins=extra, gates=gates)


def errors_of(
    body: str,
    *,
    extra: Iterable[str] = (),
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
    header: bool = True,
) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(body, extra=extra, gates=gates, header=header)
    return info.value.lines()
