"""Field errors shaped like upstream's ``field.ErrorList``.

kube-scheduler reports a bad configuration as one aggregated error whose parts are
``k8s.io/apimachinery/pkg/util/validation/field.Error`` values: a dotted field path
(``profiles[0].plugins.score.enabled[1]``), an error type ("Invalid value",
"Required value", ...), the offending value and a detail sentence.  Users grep for
those strings and compare ksched's output with kube-scheduler's, so this module
reproduces ``field.Error.Error()`` (``path: Type: value: detail``) and
``utilerrors.Aggregate.Error()`` (one message, or ``[a, b, ...]``) exactly.

Strict-decoding problems (unknown or repeated keys, wrong JSON types) are reported
through the same :class:`FieldError` so that one :class:`ConfigError` can carry every
problem found in a file; their text follows apimachinery's strict decoder
(``unknown field "profiles[0].foo"``).

Bad values are printed as apimachinery v0.36 prints them: ``%v`` for numbers and
booleans, ``%q`` for strings, ``json.Marshal`` for anything else (:func:`go_json`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ksched.config.duration import Duration

__all__ = [
    "DUPLICATE",
    "DUPLICATE_FIELD",
    "FORBIDDEN",
    "INVALID",
    "NOT_SUPPORTED",
    "OMIT",
    "REQUIRED",
    "UNKNOWN_FIELD",
    "ConfigError",
    "FieldError",
    "PathValue",
    "aggregate_message",
    "duplicate",
    "forbidden",
    "go_json",
    "invalid",
    "not_supported",
    "required",
]

REQUIRED: Final = "Required value"
INVALID: Final = "Invalid value"
DUPLICATE: Final = "Duplicate value"
FORBIDDEN: Final = "Forbidden"
NOT_SUPPORTED: Final = "Unsupported value"
# Strict decoding (apimachinery json/yaml serializer with EnableStrict).
UNKNOWN_FIELD: Final = "unknown field"
DUPLICATE_FIELD: Final = "duplicate field"
# Anything else the decoder rejects (wrong type, unparsable duration, bad apiVersion).
DECODE: Final = "decode error"

_NO_VALUE_TYPES: Final = frozenset({REQUIRED, FORBIDDEN})


class _Omit:
    """Marker for "no bad value" (upstream's ``omitValue``)."""

    def __repr__(self) -> str:
        return "<omit>"


OMIT: Final = _Omit()


def _go_quote(s: str) -> str:
    # Go's %q for printable strings matches a JSON string literal closely enough.
    return json.dumps(s, ensure_ascii=False)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head[:1].upper() + head[1:] + "".join(p[:1].upper() + p[1:] for p in rest)


def _json_string(s: str) -> str:
    # encoding/json escapes HTML-sensitive characters and the JS line separators.
    out = json.dumps(s, ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        out = out.replace(ch, esc)
    return out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


_GO_NUMBERS: Final = frozenset({"int32", "int64", "float32", "float64"})


def go_json(value: Any) -> str:
    """Render ``value`` like Go's ``json.Marshal`` of the upstream value would.

    apimachinery (v0.36) prints a non-scalar bad value as JSON.  The values are the
    scheduler's *internal* config types, which have no JSON tags: fields print under
    their Go names (``{"Name":"PrioritySort","Weight":0}``), unset numbers as 0 (the
    internal types hold values, not pointers), empty lists as ``null`` (nil slices).
    ``metav1.Duration`` prints as its string; a ``*field.Path`` (:class:`PathValue`)
    has no exported fields and prints as ``{}``.  Plain dicts keep their order.
    """
    if isinstance(value, PathValue):
        return "{}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, Duration):
        return _json_string(str(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = []
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is None and f.metadata.get("go") in _GO_NUMBERS:
                v = 0
            parts.append(f"{_json_string(_camel(f.name))}:{go_json(v)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "null"
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{_json_string(str(k))}:{go_json(v)}" for k, v in value.items()) + "}"
        )
    return _json_string(str(value))


class PathValue(str):
    """A ``*field.Path`` used as a bad value (``field.Duplicate``): Go prints ``{}``."""

    __slots__ = ()


def _simple_value(value: Any) -> str:
    """Go's ErrorBody: %v for numbers/bools, %q for strings, JSON for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_json(value)
    if isinstance(value, str) and not isinstance(value, PathValue):
        return _go_quote(value)
    return go_json(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field path; ``str()`` matches upstream ``field.Error``."""

    type: str
    field: str
    bad_value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """The part after ``path: `` (upstream ``ErrorBody``)."""
        if self.type in _NO_VALUE_TYPES or self.bad_value is OMIT:
            s = self.type
        else:
            s = f"{self.type}: {_simple_value(self.bad_value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def __str__(self) -> str:
        if self.type in (UNKNOWN_FIELD, DUPLICATE_FIELD):
            return f"{self.type} {_go_quote(self.field)}"
        if self.type == DECODE:
            return f"{self.field}: {self.detail}" if self.field else self.detail
        return f"{self.field}: {self.body()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, OMIT, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, path, value, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(DUPLICATE, path, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, OMIT, detail)


def not_supported(path: str, value: Any, supported: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(_go_quote(s) for s in supported) if supported else ""
    return FieldError(NOT_SUPPORTED, path, value, detail)


def aggregate_message(errors: Sequence[object]) -> str:
    """``utilerrors.Aggregate.Error()``: the message alone, or ``[m1, m2, ...]``."""
    msgs: list[str] = []
    for e in errors:
        m = str(e)
        if m not in msgs:  # Aggregate de-duplicates identical messages.
            msgs.append(m)
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


class ConfigError(Exception):
    """A configuration could not be loaded; holds every problem that was found."""

    def __init__(self, errors: Iterable[FieldError], source: str = "") -> None:
        self.errors: list[FieldError] = list(errors)
        self.source = source
        super().__init__(aggregate_message(self.errors))

    def __str__(self) -> str:
        msg = aggregate_message(self.errors)
        return f"{self.source}: {msg}" if self.source else msg

    def lines(self) -> list[str]:
        """One human-readable line per error (for the CLI)."""
        return [str(e) for e in self.errors]
