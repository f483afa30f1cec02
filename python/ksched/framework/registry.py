"""The registry of out-of-tree plugins: name → factory, fed by the ``ksched.plugins``
entry-point group.

Upstream kube-scheduler compiles out-of-tree plugins in (``app.WithPlugin(name,
factory)``) and enables them by name in a profile. ksched's plugins are Python
packages instead: a distribution declares

.. code-block:: toml

    [project.entry-points."ksched.plugins"]
    GPUFit = "ksched_gpu_memory:GPUFit"

and every ``ksched`` command finds it through :mod:`importlib.metadata`. The entry
point's name is the plugin name a profile enables; the object it names is the
**factory**, called once per profile that enables the plugin as
``factory(args, handle)`` (upstream ``PluginFactory``):

* ``args`` - the ``pluginConfig[].args`` of that plugin in that profile, as the plain
  mapping the user wrote (``apiVersion``/``kind`` included if given), or ``None``;
* ``handle`` - the :class:`~ksched.framework.interface.Handle` of the scheduler that
  will run the plugin. The profile is built before its scheduler exists, so the
  handle becomes usable when the scheduler is (from the plugin's ``setup`` on, and in
  every extension point); calling it inside the factory raises ``RuntimeError``.

The factory returns the plugin object (a class whose ``__init__(self, args, handle)``
is the factory is the usual shape). Its ``name`` must be the registered name.

Configuration needs to know which extension points a plugin implements before any
instance exists (to expand ``multiPoint``, to reject a plugin enabled at a point it
does not implement). The registry reads them from the factory's
``extension_points`` attribute (config names such as ``"filter"``, ``"score"``) when
it has one, else from the methods of the factory when it is a class
(:data:`METHOD_POINTS`).

Names must not collide with in-tree plugins or with each other; an entry point that
cannot be loaded or described is left out, logged, and kept in :attr:`Registry.errors`
so the config error that follows ("plugin does not exist") can be explained.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

from ksched.config.plugins import BUILT_IN_PLUGINS, EXTENSION_POINTS, IN_TREE_PLUGINS

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

__all__ = [
    "ENTRY_POINT_GROUP",
    "METHOD_POINTS",
    "PluginEntry",
    "PluginFactory",
    "Registry",
    "RegistryError",
    "default_registry",
    "extension_points_of",
]

log = logging.getLogger(__name__)

#: The entry-point group out-of-tree plugin packages register their factories in.
ENTRY_POINT_GROUP: Final = "ksched.plugins"

#: ``factory(args, handle) -> plugin`` (upstream ``runtime.PluginFactory``).
PluginFactory = Callable[[Mapping[str, Any] | None, "Handle"], Any]

#: The method that marks each extension point (see :mod:`ksched.framework.interface`),
#: with the point's name in the configuration.
METHOD_POINTS: Final[Mapping[str, str]] = {
    "pre_enqueue": "preEnqueue",
    "less": "queueSort",
    "kernel_pre_filter": "preFilter",
    "pre_filter": "preFilter",
    "filter": "filter",
    "post_filter": "postFilter",
    "pre_score": "preScore",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "preBind",
    "bind": "bind",
    "post_bind": "postBind",
}


class RegistryError(Exception):
    """A plugin cannot be registered or created; the message names it."""


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One registered out-of-tree plugin."""

    name: str
    factory: PluginFactory
    #: Configuration names of the extension points it implements.
    extension_points: frozenset[str]
    #: Where it came from, for messages (``entry point GPUFit = pkg:GPUFit (dist 1.0)``).
    source: str = ""


def extension_points_of(factory: object) -> frozenset[str] | None:
    """The extension points a factory's plugins implement, or ``None`` if it does not say.

    An ``extension_points`` attribute wins; otherwise a class is inspected for the
    methods of :data:`METHOD_POINTS`.
    """
    declared = getattr(factory, "extension_points", None)
    if declared is not None:
        points = frozenset(str(p) for p in declared)
        unknown = points - set(EXTENSION_POINTS)
        if unknown:
            raise RegistryError(
                f"unknown extension point(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(EXTENSION_POINTS)}"
            )
        return points
    if inspect.isclass(factory):
        return frozenset(
            point
            for method, point in METHOD_POINTS.items()
            if callable(getattr(factory, method, None))
        )
    return None


class Registry:
    """Out-of-tree plugin factories by name."""

    def __init__(self, entries: Iterable[PluginEntry] = ()) -> None:
        self._entries: dict[str, PluginEntry] = {}
        #: Entry points that could not be registered: name → why.
        self.errors: dict[str, str] = {}
        for entry in entries:
            self._add(entry)

    def _add(self, entry: PluginEntry) -> None:
        if entry.name in IN_TREE_PLUGINS:
            raise RegistryError(f"plugin {entry.name!r} is an in-tree plugin name ({entry.source})")
        if entry.name in BUILT_IN_PLUGINS:
            raise RegistryError(
                f"plugin {entry.name!r} is a scheduler-plugins plugin built into ksched "
                f"({entry.source})"
            )
        if entry.name in self._entries:
            raise RegistryError(
                f"a plugin named {entry.name!r} already exists "
                f"({self._entries[entry.name].source or 'registered in code'})"
            )
        self._entries[entry.name] = entry

    def register(
        self,
        name: str,
        factory: PluginFactory,
        *,
        extension_points: Iterable[str] | None = None,
        source: str = "",
    ) -> None:
        """Register ``factory`` under ``name`` (upstream ``Registry.Register``)."""
        points = (
            frozenset(extension_points)
            if extension_points is not None
            else extension_points_of(factory)
        )
        if points is None:
            raise RegistryError(
                f"plugin {name!r}: cannot tell which extension points it implements; give "
                "the factory an extension_points attribute or make it a class"
            )
        self._add(PluginEntry(name, factory, points, source))

    @classmethod
    def from_entry_points(cls, group: str = ENTRY_POINT_GROUP) -> Registry:
        """Every plugin installed under the ``group`` entry points."""
        reg = cls()
        for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            source = f"entry point {ep.name} = {ep.value}"
            if dist is not None:
                source += f" ({dist.name} {dist.version})"
            try:
                factory = ep.load()
                reg.register(ep.name, factory, source=source)
            except Exception as exc:  # a broken package must not take the scheduler down
                why = f"{source}: {type(exc).__name__}: {exc}"
                reg.errors[ep.name] = why
                log.warning("out-of-tree plugin %s not registered: %s", ep.name, why)
        return reg

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[PluginEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: str) -> PluginEntry | None:
        return self._entries.get(name)

    def names(self) -> frozenset[str]:
        """Registered names (pass as ``extra_plugins`` to config loading)."""
        return frozenset(self._entries)

    def extension_points(self) -> dict[str, frozenset[str]]:
        """name → extension points (pass as ``extension_points`` to config loading)."""
        return {e.name: e.extension_points for e in self._entries.values()}

    def create(self, name: str, args: Mapping[str, Any] | None, handle: Handle) -> Any:
        """A new instance of plugin ``name`` for one profile."""
        entry = self._entries.get(name)
        if entry is None:
            raise RegistryError(f"plugin {name!r} is not registered")
        try:
            plugin = entry.factory(args, handle)
        except Exception as exc:
            raise RegistryError(
                f"initializing plugin {name!r}: {type(exc).__name__}: {exc}"
            ) from exc
        got = getattr(plugin, "name", None)
        if got != name:
            raise RegistryError(
                f"plugin {name!r}: the factory returned a plugin named {got!r}; the name "
                "must be the registered one"
            )
        return plugin


@functools.cache
def default_registry() -> Registry:
    """The plugins installed in this environment (read once per process)."""
    return Registry.from_entry_points()
