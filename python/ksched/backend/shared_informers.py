"""Shared informers: one list-and-watch per kind, for every plugin that reads it.

Upstream's plugins take listers from the ``SharedInformerFactory`` their handle gives them,
and the scheduler registers queue event handlers for every kind the plugins' events name
(``eventhandlers.go``, ``addAllEventHandlers``). This is the same: a plugin asks
:meth:`SharedInformers.get` for the kinds it reads (in ``setup``, before the scheduler
starts), reads the informer's :attr:`SharedInformer.store` at any extension point, and may
add handlers of its own, e.g. an assume cache that must see every update. The scheduler
starts every informer asked for before it lists nodes and pods, so a pod's first attempt
sees the objects it refers to.

Handlers run in the order they were added; the scheduler adds its queue handler (which
turns each change into a cluster event) last, so a plugin's own cache is up to date when
the queueing hints of the event run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.client.informer import Informer
from ksched.cluster import KIND_NAMES, ClusterAPI, Kind

Obj = dict[str, Any]

__all__ = ["SharedInformer", "SharedInformers", "kind_of_resource"]

#: Pods and nodes are not among them: the scheduler's own informers turn their changes
#: into the parsed ``Pod``/``Node``/``AssignedPod`` events the hints expect.
_RESOURCE_KINDS: dict[str, Kind] = {
    name: kind  # type: ignore[misc]
    for kind, name in KIND_NAMES.items()
    if kind not in ("pods", "nodes")
}


def kind_of_resource(resource: str) -> Kind | None:
    """The informer kind of a cluster-event resource (``PersistentVolumeClaim`` →
    ``persistentvolumeclaims``); None for resources the scheduler watches itself."""
    return _RESOURCE_KINDS.get(resource)


class SharedInformer:
    """One informer and its handlers. ``store`` maps ``namespace/name`` (or ``name`` for
    cluster-scoped kinds) to the object as last seen; objects are read-only."""

    def __init__(self, api: ClusterAPI, kind: Kind) -> None:
        self.kind = kind
        self._adds: list[Callable[[Obj], None]] = []
        self._updates: list[Callable[[Obj, Obj], None]] = []
        self._deletes: list[Callable[[Obj], None]] = []
        self.informer = Informer(
            api, kind, on_add=self._on_add, on_update=self._on_update, on_delete=self._on_delete
        )

    @property
    def store(self) -> dict[str, Obj]:
        return self.informer.store

    def get(self, namespace: str, name: str) -> Obj | None:
        """The object ``namespace/name`` (``namespace`` empty for cluster-scoped kinds)."""
        return self.informer.store.get(f"{namespace}/{name}" if namespace else name)

    def add_handler(
        self,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        """Call these on every change after the ones added before. A handler that
        raises is logged by the informer; the next handlers still run."""
        if on_add is not None:
            self._adds.append(on_add)
        if on_update is not None:
            self._updates.append(on_update)
        if on_delete is not None:
            self._deletes.append(on_delete)

    # The informer logs and counts an exception of its handler; run each of ours in
    # turn so that one failing handler does not starve the rest.
    def _on_add(self, obj: Obj) -> None:
        _each(self._adds, obj)

    def _on_update(self, old: Obj, new: Obj) -> None:
        _each(self._updates, old, new)

    def _on_delete(self, obj: Obj) -> None:
        _each(self._deletes, obj)


def _each(handlers: list[Callable[..., None]], *args: Obj) -> None:
    error: Exception | None = None
    for fn in handlers:
        try:
            fn(*args)
        except Exception as exc:  # re-raised below, after the other handlers
            error = exc
    if error is not None:
        raise error


class SharedInformers:
    """The informers of the kinds plugins read, created on first request."""

    def __init__(self, api: ClusterAPI) -> None:
        self._api = api
        self._informers: dict[Kind, SharedInformer] = {}
        self._frozen = False

    def get(self, kind: Kind) -> SharedInformer:
        """The shared informer of ``kind`` (created, not yet started, on first use).
        Ask before the scheduler starts (a plugin's ``setup``): a kind first asked for
        afterwards would never be listed, so that raises ``RuntimeError``."""
        inf = self._informers.get(kind)
        if inf is None:
            if self._frozen:
                raise RuntimeError(
                    f"the {kind} informer was asked for after the scheduler was built; "
                    "ask for it in the plugin's setup(handle)"
                )
            inf = self._informers[kind] = SharedInformer(self._api, kind)
        return inf

    def freeze(self) -> None:
        """No new kinds from now on: the scheduler has taken the list it starts."""
        self._frozen = True

    def __contains__(self, kind: object) -> bool:
        return kind in self._informers

    def all(self) -> list[SharedInformer]:
        return list(self._informers.values())
