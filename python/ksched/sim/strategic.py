"""Strategic merge patches for the embedded cluster, as the API server applies them.

A strategic merge patch is a JSON merge patch whose lists merge by the ``patchStrategy``
and ``patchMergeKey`` tags of the Go API types, plus directives (``$patch``,
``$deleteFromPrimitiveList/<field>``); the API server applies it with apimachinery's
``strategicpatch.StrategicMergeMapPatch`` (``mergeMap``/``mergeSlice``) over the typed
object's patch metadata. The tags live in Go struct tags, not in the JSON, so the
embedded cluster carries them per kind in :data:`SCHEMAS`, transcribed from
``k8s.io/api@v0.36.5`` (every ``patchStrategy`` tag of the kinds listed, and
ObjectMeta's); a kind without an entry is refused (415), as before, rather than merged
with wrong list semantics.

This is a port of apimachinery's merge (the ``IgnoreUnmatchedNulls`` and
``MergeParallelList`` options the API server uses): ``null`` deletes a field, maps merge
recursively, a list with the ``merge`` strategy merges its elements by the merge key
(primitives: a set union), ``$patch: delete`` / ``replace`` in a map or a list element,
``$deleteFromPrimitiveList``, and the merged list's order (patch items in the patch's
order, interleaved with the server-only ones by the live order, apimachinery's
``normalizeElementOrder``). Written by hand because no maintained Python library
applies strategic merge patches; ``$setElementOrder`` and ``$retainKeys`` (emitted by
``kubectl apply``, never by the scheduler) are refused with a clear error.

The typed decoding the API server does afterwards is modelled only where it matters to
a merged list: a list field of the schema left empty is dropped (``omitempty``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SCHEMAS", "Field", "StrategicMergeError", "strategic_merge_patch"]

DIRECTIVE = "$patch"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"
RETAIN_KEYS = "$retainKeys"


class StrategicMergeError(ValueError):
    """The patch cannot be applied (apimachinery's error text)."""


@dataclass(frozen=True, slots=True)
class Field:
    """A field's patch metadata: ``strategy`` (``merge``, ``replace`` or "" for the
    default: lists are replaced, maps merged), the list's ``merge_key`` (empty for a
    list of primitives) and the patch metadata of the value's (or elements') fields."""

    strategy: str = ""
    merge_key: str = ""
    fields: dict[str, Field] = field(default_factory=dict)


_NONE = Field()

#: ObjectMeta's tagged fields (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
_OBJECT_META = Field(
    fields={
        "ownerReferences": Field("merge", "uid"),
        "finalizers": Field("merge"),
    }
)

#: Per kind, the top-level fields' patch metadata. resource.k8s.io/v1 tags only
#: ResourceClaimStatus.reservedFor (merge by uid); its other kinds have no tags.
SCHEMAS: dict[str, dict[str, Field]] = {
    "resourceclaims": {
        "metadata": _OBJECT_META,
        "status": Field(fields={"reservedFor": Field("merge", "uid")}),
    },
    "resourceslices": {"metadata": _OBJECT_META},
    "deviceclasses": {"metadata": _OBJECT_META},
}


def strategic_merge_patch(original: Any, patch: Any, schema: dict[str, Field]) -> Any:
    """``original`` with ``patch`` applied (neither is modified)."""
    if not isinstance(patch, dict):
        raise StrategicMergeError("a strategic merge patch must be a JSON object")
    merged = _merge_map(copy.deepcopy(original) or {}, copy.deepcopy(patch), schema)
    _drop_empty_lists(merged, schema)
    return merged


def _fields(schema: dict[str, Field], key: str) -> Field:
    return schema.get(key, _NONE)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: dict[str, Field]) -> Any:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            del patch[DIRECTIVE]
            return patch
        if directive == "delete":
            return {}
        raise StrategicMergeError(f"unknown patch type: {directive} in map: {_go(patch)}")
    for key in patch:
        if key == RETAIN_KEYS or key.startswith(SET_ELEMENT_ORDER):
            raise StrategicMergeError(
                f"the embedded cluster does not apply the {key.split('/')[0]} directive"
            )
    for key, value in patch.items():
        delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if delete_list:
            key = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
            continue
        current = original[key]
        if type(current) is not type(value):
            if not delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    del original[key]
            continue
        meta = _fields(schema, key)
        if isinstance(current, dict):
            if meta.strategy == "replace":
                original[key] = value
            else:
                original[key] = _merge_map(current, value, meta.fields)
        elif isinstance(current, list):
            if meta.strategy == "merge" or delete_list:
                original[key] = _merge_list(current, value, meta, delete_list)
            else:
                original[key] = value
        else:
            kept, keep = _remove_directives(value)
            if keep:
                original[key] = kept
            else:
                del original[key]
    return original


def _merge_list(original: list[Any], patch: list[Any], meta: Field, delete_list: bool) -> list[Any]:
    """apimachinery ``mergeSlice``."""
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    key = meta.merge_key
    if kind is not dict:
        if delete_list:
            return [v for v in original if v not in patch]
        merged = _deduplicate([*original, *patch])
    else:
        if not key:
            raise StrategicMergeError("cannot merge lists without merge key")
        original, patch = _special_elements(original, patch, key)
        merged = list(original)
        for item in patch:
            if key not in item:
                raise StrategicMergeError(
                    f"map: {_go(item)} does not contain declared merge key: {key}"
                )
            at = _find(merged, key, item[key])
            if at is None:
                merged.append(item)
            else:
                merged[at] = _merge_map(merged[at], item, meta.fields)
    if kind is dict:
        in_patch = [v for v in merged if _find(patch, key, v[key]) is not None]
        server_only = [v for v in merged if _find(patch, key, v[key]) is None]
    else:
        in_patch = [v for v in merged if v in patch]
        server_only = [v for v in merged if v not in patch]
    return _normalize_order(in_patch, server_only, patch, original, key, kind)


def _element_kind(*lists: list[Any]) -> type:
    """apimachinery ``sliceElementType``."""
    kind: type | None = None
    for items in lists:
        for v in items:
            t = type(v)
            if kind is None:
                if t is list:
                    raise StrategicMergeError("lists of lists are not supported")
                kind = t
            elif t is not kind:
                raise StrategicMergeError(f"list element types are not identical: {list(lists)}")
    if kind is None:
        raise StrategicMergeError("no elements in any of the given slices")
    return kind


def _special_elements(
    original: list[Any], patch: list[Any], key: str
) -> tuple[list[Any], list[Any]]:
    """apimachinery ``mergeSliceWithSpecialElements``: ``$patch`` elements."""
    rest: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            rest.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if key not in item:
                raise StrategicMergeError(
                    f"map: {_go(item)} does not contain declared merge key: {key}"
                )
            original = [
                v for v in original if not (isinstance(v, dict) and v.get(key) == item[key])
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise StrategicMergeError("merging lists cannot yet be specified in the patch")
        else:
            raise StrategicMergeError(f"unknown patch type: {directive} in map: {_go(item)}")
    if replace:
        return rest, []
    return original, rest


def _find(items: list[Any], key: str, value: Any) -> int | None:
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            raise StrategicMergeError(f"value for key {i} is not a map")
        if key in v and v[key] == value:
            return i
    return None


def _index(items: list[Any], value: Any, key: str, kind: type) -> int:
    def val(v: Any) -> Any:
        if kind is dict:
            return v.get(key) if isinstance(v, dict) else None
        return v

    want = val(value)
    for i, v in enumerate(items):
        if val(v) == want:
            return i
    return -1


def _sort_by(items: list[Any], order: list[Any], key: str, kind: type) -> list[Any]:
    """apimachinery ``normalizeSliceOrder``: a stable sort by ``order`` where both
    items are in it (``$patch: delete`` elements go last)."""
    deletes: list[Any] = []
    if kind is dict:
        deletes = [v for v in items if v.get(DIRECTIVE) == "delete"]
        items = [v for v in items if v.get(DIRECTIVE) != "delete"]
    # sort.SliceStable with less(i, j) = index(i) < index(j) when both are found, else
    # true: Go's stable sort is an insertion sort on up to 20 elements, which this
    # reproduces exactly (longer lists may come out in another order than Go's).
    out = list(items)
    for i in range(1, len(out)):
        j = i
        while j > 0 and _less(out[j], out[j - 1], order, key, kind):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out + deletes


def _less(a: Any, b: Any, order: list[Any], key: str, kind: type) -> bool:
    ia = _index(order, a, key, kind)
    if ia >= 0:
        ib = _index(order, b, key, kind)
        if ib >= 0:
            return ia < ib
    return True


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    key: str,
    kind: type,
) -> list[Any]:
    """apimachinery ``normalizeElementOrder`` + ``mergeSortedSlice``."""
    right = _sort_by(patch_items, patch_order, key, kind)
    left = _sort_by(server_only, server_order, key, kind)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], key, kind)
            ri = _index(server_order, right[j], key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _deduplicate(items: list[Any]) -> list[Any]:
    """apimachinery ``deduplicateScalars`` (it moves the last element into a
    duplicate's place)."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if s[i] == s[j]:
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _go(value: Any) -> str:
    """A JSON value as Go's ``%v`` prints it (apimachinery's error texts)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """apimachinery ``removeDirectives``: (value without directives, keep it)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            kept, keep = _remove_directives(value[k])
            if keep:
                value[k] = kept
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        out = []
        for v in value:
            kept, keep = _remove_directives(v)
            if keep:
                out.append(kept)
        return out, True
    return value, True


def _drop_empty_lists(obj: Any, schema: dict[str, Field]) -> None:
    """The typed round trip: a schema list field left empty is omitted
    (``omitempty``)."""
    if not isinstance(obj, dict):
        return
    for key, meta in schema.items():
        value = obj.get(key)
        if isinstance(value, list):
            if not value and meta.strategy:
                del obj[key]
            else:
                for item in value:
                    _drop_empty_lists(item, meta.fields)
        elif isinstance(value, dict):
            _drop_empty_lists(value, meta.fields)
