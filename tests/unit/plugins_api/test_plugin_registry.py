"""The out-of-tree plugin registry: factories, extension points, entry points."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ksched.framework.interface import Handle
from ksched.framework.registry import (
    ENTRY_POINT_GROUP,
    Registry,
    RegistryError,
    extension_points_of,
)


class Scorer:
    name = "Scorer"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.args = args

    def pre_score(self, state: Any, pod: Any, nodes: Any) -> None:
        return None

    def score(self, state: Any, pod: Any, node: Any) -> int:
        return 1


def sort_factory(args: Mapping[str, Any] | None, handle: Handle) -> Any:
    raise AssertionError("not called")


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        pytest.param(Scorer, {"preScore", "score"}, id="class-methods"),
        pytest.param(sort_factory, None, id="function-says-nothing"),
    ],
)
def test_extension_points_of(factory: object, expected: set[str] | None) -> None:
    assert extension_points_of(factory) == expected


def test_declared_extension_points_win_and_are_checked() -> None:
    def f(args: Any, handle: Any) -> Any: ...

    f.extension_points = ["queueSort"]  # type: ignore[attr-defined]
    assert extension_points_of(f) == {"queueSort"}
    f.extension_points = ["sort"]  # type: ignore[attr-defined]
    with pytest.raises(RegistryError, match="unknown extension point"):
        extension_points_of(f)


@pytest.mark.parametrize(
    ("name", "factory", "message"),
    [
        pytest.param("NodeAffinity", Scorer, "in-tree plugin name", id="in-tree-name"),
        pytest.param("Sort", sort_factory, "cannot tell which extension points", id="no-points"),
    ],
)
def test_register_refuses(name: str, factory: Any, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        Registry().register(name, factory)


def test_register_refuses_a_second_plugin_with_one_name() -> None:
    reg = Registry()
    reg.register("Scorer", Scorer)
    with pytest.raises(RegistryError, match="a plugin named 'Scorer' already exists"):
        reg.register("Scorer", Scorer)


def test_create_passes_args_and_checks_the_name() -> None:
    reg = Registry()
    reg.register("Scorer", Scorer)
    reg.register("Other", Scorer)
    plugin = reg.create("Scorer", {"a": 1}, handle=None)  # type: ignore[arg-type]
    assert plugin.args == {"a": 1}
    assert reg.names() == {"Scorer", "Other"}
    assert reg.extension_points()["Scorer"] == {"preScore", "score"}
    with pytest.raises(RegistryError, match="returned a plugin named 'Scorer'"):
        reg.create("Other", None, handle=None)  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="'Missing' is not registered"):
        reg.create("Missing", None, handle=None)  # type: ignore[arg-type]


def test_create_wraps_factory_errors() -> None:
    def broken(args: Any, handle: Any) -> Any:
        raise ValueError("bad args")

    reg = Registry()
    reg.register("Broken", broken, extension_points=["filter"])
    with pytest.raises(RegistryError, match="initializing plugin 'Broken': ValueError: bad args"):
        reg.create("Broken", None, handle=None)  # type: ignore[arg-type]


def _fake_distribution(root: Path, entry_points: str, module: str) -> None:
    info = root / "fake_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    (root / "fake_plugins.py").write_text(textwrap.dedent(module))


def test_from_entry_points_registers_good_and_reports_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distribution(
        tmp_path,
        f"""\
        [{ENTRY_POINT_GROUP}]
        FakeFilter = fake_plugins:FakeFilter
        Missing = fake_plugins:DoesNotExist
        NodeName = fake_plugins:FakeFilter
        """,
        """\
        class FakeFilter:
            name = "FakeFilter"

            def __init__(self, args, handle):
                pass

            def filter(self, state, pod, node):
                return None
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry.from_entry_points()
    entry = reg.get("FakeFilter")
    assert entry is not None
    assert entry.extension_points == {"filter"}
    assert entry.source == "entry point FakeFilter = fake_plugins:FakeFilter (fake-plugins 1.0)"
    assert "Missing" not in reg and "AttributeError" in reg.errors["Missing"]
    assert "in-tree plugin name" in reg.errors["NodeName"]
