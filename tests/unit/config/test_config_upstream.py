"""ksched's effective config and errors against the real kube-scheduler v1.36.5.

``upstream/<case>.upstream.yaml`` is what ``kube-scheduler --write-config-to`` wrote
for a config it accepted, ``upstream/<case>.upstream.err`` the error it exited with
for one it rejected (``upstream/record.py`` records both; see ``upstream/README.md``).
ksched must write the same file byte for byte, and reject the same configs with the
same message, except where ksched deliberately says more (:data:`DELIBERATE`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ksched.config import ConfigError, dump_yaml, load_config
from ksched.config.errors import aggregate_message

HERE = Path(__file__).parent
UPSTREAM = HERE / "upstream"
GOLDEN = HERE / "golden"


def _input(case: str) -> Path:
    for path in (GOLDEN / f"{case}.in.yaml", *UPSTREAM.glob(f"{case}.in.*")):
        if path.exists():
            return path
    raise FileNotFoundError(f"no input for case {case!r}")


ACCEPTED = sorted(p.name.removesuffix(".upstream.yaml") for p in UPSTREAM.glob("*.upstream.yaml"))
REJECTED = sorted(p.name.removesuffix(".upstream.err") for p in UPSTREAM.glob("*.upstream.err"))


def _ksched_error(case: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(_input(case))
    return aggregate_message(info.value.errors)


def _framework_error(upstream: str, ksched: str) -> None:
    # Upstream finds an out-of-tree plugin missing only while building the framework;
    # ksched's validation names it, and lists the plugins it knows.
    plugin = upstream.rsplit('"', 2)[1]
    assert f'Invalid value: "{plugin}": plugin does not exist; known plugins: ' in ksched


def _fit_args_at_config_time(upstream: str, ksched: str) -> None:
    # Upstream's validatePluginConfig keys NodeResourcesFit under "NodeResourcesFitArgs",
    # so these args are checked only when the plugin is built (relative paths, after
    # the config was accepted). ksched checks them with the rest of the config.
    inner = upstream.split('initializing plugin "NodeResourcesFit": ', 1)[1]
    assert ksched == inner.replace("[", "[profiles[0].pluginConfig[0].args.", 1).replace(
        ", scoringStrategy.", ", profiles[0].pluginConfig[0].args.scoringStrategy."
    )


def _removed_plugins(upstream: str, ksched: str) -> None:
    # Upstream lists only EBSLimits & co. (at the per-point sets); the older removed
    # plugins are merely unknown to it. ksched names every removed plugin wherever it
    # is enabled and says what replaced it, after upstream's sentence.
    first = ksched.removeprefix("[").split("; ", 1)[0]
    assert first == upstream
    for name in ("NodeLabel", "NodePreferAvoidPods", "ServiceAffinity", "AzureDiskLimits"):
        assert f'"{name}": was invalid in version' in ksched


def _removed_version(upstream: str, ksched: str) -> None:
    # Upstream's scheme does not know the removed version; ksched says when it went
    # and what to use instead.
    assert 'for version "kubescheduler.config.k8s.io/v1beta3"' in upstream
    assert ksched.startswith(
        'apiVersion: apiVersion "kubescheduler.config.k8s.io/v1beta3" was removed in '
        "Kubernetes v1.29"
    )


def _strict_decoding(upstream: str, ksched: str) -> None:
    # Upstream's text depends on the parser (YAML line numbers, JSON field names);
    # ksched reports every unknown or repeated field by its path, in one list.
    assert upstream.startswith("strict decoding error: ")
    assert 'unknown field "profiles[0].unknownField"' in upstream
    assert ksched == '[duplicate field "parallelism", unknown field "profiles[0].unknownField"]'


#: Rejected configs whose ksched message deliberately differs from upstream's.
DELIBERATE: dict[str, Callable[[str, str], None]] = {
    "two_profiles": _framework_error,
    "weights": _framework_error,
    "invalid_fit_args": _fit_args_at_config_time,
    "invalid_removed_plugins": _removed_plugins,
    "invalid_beta": _removed_version,
    "invalid_decode": _strict_decoding,
}


def test_recorded_data_is_complete() -> None:
    inputs = {p.name.removesuffix(".in.yaml") for p in GOLDEN.glob("*.in.yaml")}
    inputs |= {p.name.split(".in.")[0] for p in UPSTREAM.glob("*.in.*")}
    assert inputs == set(ACCEPTED) | set(REJECTED)
    assert not set(ACCEPTED) & set(REJECTED)
    assert set(DELIBERATE) <= set(REJECTED)


@pytest.mark.parametrize("case", ACCEPTED)
def test_effective_config_equals_upstream(case: str) -> None:
    expected = (UPSTREAM / f"{case}.upstream.yaml").read_text(encoding="utf-8")
    assert dump_yaml(load_config(_input(case))) == expected


@pytest.mark.parametrize("case", REJECTED)
def test_rejected_like_upstream(case: str) -> None:
    upstream = (UPSTREAM / f"{case}.upstream.err").read_text(encoding="utf-8").rstrip("\n")
    ksched = _ksched_error(case)
    if case in DELIBERATE:
        DELIBERATE[case](upstream, ksched)
    else:
        assert ksched == upstream
