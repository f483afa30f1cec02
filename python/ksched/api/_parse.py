"""Shape checks shared by the Pod and Node parsers (private).

The parsers walk the ``dict`` that ``orjson.loads`` produced and must turn *any* wrong
shape into an :class:`~ksched.api.errors.InvalidObjectError` naming the field, never a
``KeyError``/``TypeError`` from deep inside. These helpers do the per-field check with
one ``type(x) is ...`` test on the happy path and raise :class:`FieldError` (path +
message) otherwise; ``from_dict`` converts that into ``InvalidObjectError`` once it
knows the object's name. Paths are strings built by the caller; helpers that iterate a
map build the per-key path only when they fail, so the happy path allocates nothing
beyond the result.

Values are returned without copying: a parsed object shares its label maps and raw
sub-objects with ``raw``, and both are read-only by convention.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ksched.api.errors import QuantityError, quote
from ksched.api.quantity import parse_quantity_nanos

__all__ = [
    "FieldError",
    "expected",
    "join_path",
    "json_type",
    "key_path",
    "opt_bool",
    "opt_int",
    "opt_int32",
    "opt_int64",
    "opt_list",
    "opt_obj",
    "opt_str",
    "opt_str_or_none",
    "quantity_error_message",
    "resource_nanos",
    "str_list",
    "str_map",
]

_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

#: The ranges of the API's integer types. JSON numbers are unbounded and Python ints
#: too, but Go's decoder refuses a number its field cannot hold, and the Rust core
#: takes i32/i64: a value outside the field's type is reported here, at parse time.
INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


class FieldError(Exception):
    """A field has the wrong shape; converted to InvalidObjectError by ``from_dict``.

    Nested parsers raise it with a path relative to the value they were given; callers
    re-raise it :meth:`within` their own path, so paths are only built on failure.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def within(self, prefix: str) -> FieldError:
        """The same error with ``prefix`` prepended to the path."""
        return FieldError(join_path(prefix, self.field), self.message)


def join_path(prefix: str, field: str) -> str:
    """Join a parent path and a relative path (which may start with ``[``)."""
    if not field:
        return prefix
    if not prefix:
        return field
    if field[0] == "[":
        return prefix + field
    return f"{prefix}.{field}"


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def key_path(path: str, key: str) -> str:
    """``path.key`` for identifier-like keys, ``path[key]`` for others."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def expected(path: str, what: str, value: object) -> FieldError:
    """``FieldError(path, "expected <what>, got <json type>")``."""
    return FieldError(path, f"expected {what}, got {json_type(value)}")


def opt_obj(value: object, path: str) -> dict[str, Any] | None:
    """An object or absent/null."""
    if type(value) is dict:
        return value
    if value is None:
        return None
    raise expected(path, "an object", value)


def opt_list(value: object, path: str) -> list[Any] | None:
    """An array or absent/null."""
    if type(value) is list:
        return value
    if value is None:
        return None
    raise expected(path, "an array", value)


def opt_str(value: object, path: str, default: str = "") -> str:
    """A string, or ``default`` when absent/null."""
    if type(value) is str:
        return value
    if value is None:
        return default
    raise expected(path, "a string", value)


def opt_str_or_none(value: object, path: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise expected(path, "a string", value)


def opt_int(value: object, path: str) -> int | None:
    """A JSON integer (never a boolean), or None when absent/null."""
    if type(value) is int or value is None:
        return value
    raise expected(path, "an integer", value)


def _out_of_range(path: str, value: int, type_name: str) -> FieldError:
    return FieldError(path, f"{value} is out of range for {type_name}")


def opt_int32(value: object, path: str) -> int | None:
    """An ``int32`` field: a JSON integer within its range, or None when absent/null."""
    if type(value) is int:
        if INT32_MIN <= value <= INT32_MAX:
            return value
        raise _out_of_range(path, value, "int32")
    return opt_int(value, path)


def opt_int64(value: object, path: str) -> int | None:
    """An ``int64`` field: a JSON integer within its range, or None when absent/null."""
    if type(value) is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        raise _out_of_range(path, value, "int64")
    return opt_int(value, path)


def opt_bool(value: object, path: str) -> bool:
    if type(value) is bool:
        return value
    if value is None:
        return False
    raise expected(path, "a boolean", value)


def str_map(value: object, path: str) -> dict[str, str]:
    """A string-to-string object (labels, annotations, nodeSelector); ``{}`` when absent."""
    if type(value) is dict:
        for k, v in value.items():
            if type(v) is not str:
                raise expected(key_path(path, k), "a string", v)
        return value
    if value is None:
        return {}
    raise expected(path, "an object", value)


def str_list(value: object, path: str) -> list[str]:
    if type(value) is list:
        for i, v in enumerate(value):
            if type(v) is not str:
                raise expected(f"{path}[{i}]", "a string", v)
        return value
    if value is None:
        return []
    raise expected(path, "an array", value)


def quantity_error_message(err: QuantityError) -> str:
    return f"{err.message} (got {quote(err.text)})"


def resource_nanos(value: object, path: str) -> dict[str, int] | None:
    """A ``ResourceList`` as exact nano counts; None when absent/null.

    A null quantity decodes as zero with its key present, as Go's decoder does.
    """
    if type(value) is not dict:
        if value is None:
            return None
        raise expected(path, "an object", value)
    out: dict[str, int] = {}
    for name, q in value.items():
        if q is None:
            out[name] = 0
            continue
        try:
            out[name] = parse_quantity_nanos(q)
        except QuantityError as err:
            raise FieldError(key_path(path, name), quantity_error_message(err)) from None
    return out
