"""The assume cache of PVs and PVCs (upstream ``passiveAssumeCache``).

VolumeBinding decides in the scheduling cycle which PV a claim binds to and which node a
claim is provisioned on, but writes those decisions in the binding cycle (PreBind), later.
Meanwhile the next pods must see them: Reserve *assumes* the changed objects here, and
every read of the cache returns the assumed version while the informer still holds the
version it was made from.

The rules, as upstream's:

* :meth:`AssumeCache.assume` accepts an object only if its ``resourceVersion`` is the
  one the informer holds (it is made from the latest object);
* a read (:meth:`get`, :meth:`by_index`) returns the assumed object while the informer's
  object has that same version, the informer's otherwise;
* any informer event for the key drops the assumed object unless the informer's
  object still has its version (a resync), so the API's answer always wins;
* :meth:`restore` (Unreserve, a failed PreBind) drops the assumed object if it is the
  one given (same version);
* :meth:`get_api_obj` reads the informer's object alone (PreBind checks the API's state).

An index on the informer's objects (the PV's storage class) serves ``by_index`` without
scanning; assumed objects never change the index, as upstream's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.backend.shared_informers import SharedInformer

__all__ = ["AssumeCache", "AssumeError"]

Obj = dict[str, Any]


class AssumeError(Exception):
    """An object cannot be assumed (missing, or out of sync with the informer)."""


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class AssumeCache:
    """Assumed objects over one shared informer. ``resource`` names the kind in
    NotFound messages (``persistentvolumes``); ``index`` maps an informer object to its
    index value."""

    def __init__(
        self,
        informer: SharedInformer,
        resource: str,
        index: Callable[[Obj], str] | None = None,
    ) -> None:
        self._informer = informer
        self.resource = resource
        self._assumed: dict[str, Obj] = {}
        self._index_fn = index
        self._index: dict[str, dict[str, None]] = {}
        self._index_of: dict[str, str] = {}
        informer.add_handler(
            on_add=self._added, on_update=lambda old, new: self._added(new), on_delete=self._deleted
        )
        for obj in list(informer.store.values()):
            self._reindex(_key(obj), obj)

    # ---- informer events -------------------------------------------------------------

    def _reindex(self, key: str, obj: Obj | None) -> None:
        if self._index_fn is None:
            return
        old = self._index_of.pop(key, None)
        if old is not None:
            members = self._index.get(old)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self._index[old]
        if obj is not None:
            value = self._index_fn(obj)
            self._index_of[key] = value
            self._index.setdefault(value, {})[key] = None

    def _added(self, obj: Obj) -> None:
        key = _key(obj)
        self._reindex(key, obj)
        self._may_expire(key)

    def _deleted(self, obj: Obj) -> None:
        key = _key(obj)
        self._reindex(key, None)
        self._may_expire(key)

    def _may_expire(self, key: str) -> None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return
        stored = self._informer.store.get(key)
        if stored is None or _rv(stored) != _rv(assumed):
            del self._assumed[key]

    # ---- reads -----------------------------------------------------------------------

    def get_api_obj(self, key: str) -> Obj | None:
        """The informer's object (None: not found)."""
        return self._informer.store.get(key)

    def not_found(self, key: str) -> str:
        """upstream's NotFound error text for ``key`` (``persistentvolumes "pv-1" not found``)."""
        return f'{self.resource} "{key}" not found'

    def get(self, key: str) -> Obj | None:
        """The assumed object while it matches the informer's version, else the
        informer's (None: not found)."""
        stored = self._informer.store.get(key)
        if stored is None:
            return None
        assumed = self._assumed.get(key)
        if assumed is None or _rv(assumed) != _rv(stored):
            return stored
        return assumed

    def by_index(self, value: str) -> list[Obj]:
        """The informer's objects with index ``value`` (each replaced by its assumed
        version when there is one of the same version), in informer order."""
        store = self._informer.store
        out: list[Obj] = []
        for key in self._index.get(value, ()):
            stored = store.get(key)
            if stored is None:
                continue
            assumed = self._assumed.get(key)
            out.append(assumed if assumed is not None and _rv(assumed) == _rv(stored) else stored)
        return out

    # ---- writes ----------------------------------------------------------------------

    def assume(self, obj: Obj) -> None:
        """Hold ``obj`` as the latest version; it must be made from the informer's."""
        key = _key(obj)
        stored = self._informer.store.get(key)
        if stored is None:
            raise AssumeError(self.not_found(key))
        if _rv(stored) != _rv(obj):
            raise AssumeError(f'"{key}" is out of sync (stored: {_rv(stored)}, assume: {_rv(obj)})')
        self._assumed[key] = obj

    def restore(self, obj: Obj) -> None:
        """Drop the assumed version of ``obj``'s key if it is ``obj``'s version."""
        key = _key(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and _rv(assumed) == _rv(obj):
            del self._assumed[key]

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed
