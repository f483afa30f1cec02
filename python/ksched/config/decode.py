"""Strict decoding of a ``KubeSchedulerConfiguration`` document into the v1 types.

kube-scheduler decodes its config file with a strict codec
(``serializer.NewCodecFactory(scheme, serializer.EnableStrict)`` in
``pkg/scheduler/apis/config/scheme/scheme.go``): an unknown key or a key given twice
is an error naming the full field path (``unknown field "profiles[0].foo"``), and the
plugin args nested in ``pluginConfig`` are decoded strictly as their registered
``<Plugin>Args`` kind (``DecodeNestedObjects`` in the v1 types).  Args of plugins
without a registered kind (out-of-tree plugins) are kept verbatim.

This module does the same on the parsed YAML/JSON tree.  Duplicate keys are caught
by the parser hooks in ``load.py``, which build :class:`StrictDict` mappings that
remember repeated keys.  Every problem is collected before :class:`ConfigError` is
raised, so one run reports a whole file's mistakes.

Types follow Go's ``encoding/json``: a string is not a number, a number is not a
string, integers must be integral and fit their Go width, durations must parse as Go
durations, ``null`` leaves a field unset.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Final, TypeVar, cast

from ksched.config import errors as ferr
from ksched.config.duration import Duration, parse_duration
from ksched.config.types import (
    API_VERSION,
    ARGS_TYPES,
    KIND,
    KubeSchedulerConfiguration,
    PluginArgs,
    PluginConfig,
    UnknownArgs,
)

__all__ = ["StrictDict", "decode_args", "decode_config", "json_type_name"]

T = TypeVar("T")

_INT_RANGES: Final = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class StrictDict(dict[str, Any]):
    """A mapping that remembers keys the document repeated (for ``duplicate field``)."""

    __slots__ = ("duplicates",)

    def __init__(self) -> None:
        super().__init__()
        self.duplicates: list[str] = []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def json_type_name(value: Any) -> str:
    """The JSON name of a decoded value's type, as Go's decoder words it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _Decoder:
    def __init__(self) -> None:
        self.errors: list[ferr.FieldError] = []

    def _type_error(self, path: str, value: Any, go_type: str) -> None:
        self.errors.append(
            ferr.FieldError(
                ferr.DECODE,
                path,
                detail=f"cannot unmarshal {json_type_name(value)} into Go value of type {go_type}",
            )
        )

    def _check_duplicates(self, data: dict[str, Any], path: str) -> None:
        if isinstance(data, StrictDict):
            for key in data.duplicates:
                self.errors.append(ferr.FieldError(ferr.DUPLICATE_FIELD, _join(path, key)))

    def struct(self, cls: type[T], data: Any, path: str) -> T | None:
        if not isinstance(data, dict):
            self._type_error(path, data, f"v1.{cls.__name__}")
            return None
        self._check_duplicates(data, path)
        fields = _fields(cast(Any, cls))
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            spec = fields.get(key)
            if spec is None:
                self.errors.append(ferr.FieldError(ferr.UNKNOWN_FIELD, _join(path, key)))
                continue
            attr, hint, go = spec
            if value is None:
                continue  # JSON null leaves the Go field at its zero value.
            decoded = self.value(hint, go, value, _join(path, key))
            if decoded is not _FAILED:
                kwargs[attr] = decoded
        obj = cls(**kwargs)
        if isinstance(obj, PluginConfig):
            self._plugin_args(obj, data.get("args"), _join(path, "args"))
        return obj

    def value(self, hint: Any, go: str, value: Any, path: str) -> Any:
        origin = typing.get_origin(hint)
        if origin in (typing.Union, types.UnionType):
            inner = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(inner) == 1:
                return self.value(inner[0], go, value, path)
            return _FAILED  # PluginConfig.args: decoded separately, by plugin name
        if origin is list:
            (elem,) = typing.get_args(hint)
            if not isinstance(value, list):
                self._type_error(path, value, "[]" + _go_name(elem))
                return _FAILED
            out = []
            for i, item in enumerate(value):
                if item is None and dataclasses.is_dataclass(elem):
                    out.append(cast(Any, elem)())
                    continue
                decoded = self.value(elem, go, item, f"{path}[{i}]")
                if decoded is not _FAILED:
                    out.append(decoded)
            return out
        if origin is dict:
            if not isinstance(value, dict):
                self._type_error(path, value, "object")
                return _FAILED
            return _plain(value)
        if hint is Duration:
            if not isinstance(value, str):
                self._type_error(path, value, "v1.Duration")
                return _FAILED
            try:
                return Duration(parse_duration(value))
            except ValueError as e:
                self.errors.append(ferr.FieldError(ferr.DECODE, path, detail=str(e)))
                return _FAILED
        if hint is bool:
            if not isinstance(value, bool):
                self._type_error(path, value, "bool")
                return _FAILED
            return value
        if hint is str:
            if not isinstance(value, str):
                self._type_error(path, value, "string")
                return _FAILED
            return value
        if hint is int:
            go_type = go or "int"
            if isinstance(value, bool) or not isinstance(value, int | float):
                self._type_error(path, value, go_type)
                return _FAILED
            if isinstance(value, float):
                if not value.is_integer():
                    self._type_error(path, value, go_type)
                    return _FAILED
                value = int(value)
            lo, hi = _INT_RANGES.get(go_type, _INT_RANGES["int64"])
            if not lo <= value <= hi:
                self._type_error(path, value, go_type)
                return _FAILED
            return value
        if hint is float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                self._type_error(path, value, go or "float64")
                return _FAILED
            return float(value)
        if dataclasses.is_dataclass(hint):
            result = self.struct(cast(type[Any], hint), value, path)
            return _FAILED if result is None else result
        if hint is Any:
            return _plain(value)
        raise TypeError(f"unsupported type hint {hint!r} at {path}")

    def _plugin_args(self, pc: PluginConfig, raw: Any, path: str) -> None:
        args_type = ARGS_TYPES.get(pc.name)
        if args_type is None:
            # Out-of-tree (or unknown) plugin: kept verbatim like runtime.Unknown.
            if raw is None:
                pc.args = None
            elif isinstance(raw, dict):
                pc.args = UnknownArgs(_plain(raw))
            else:
                self._type_error(path, raw, "runtime.RawExtension")
            return
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            self._type_error(path, raw, f"v1.{args_type.KIND}")
            return
        api_version = raw.get("apiVersion")
        kind = raw.get("kind")
        if kind not in (None, "") and kind != args_type.KIND:
            self.errors.append(
                ferr.FieldError(
                    ferr.DECODE,
                    path,
                    detail=(
                        f"args for plugin {pc.name} were not of type "
                        f"{args_type.KIND}.kubescheduler.config.k8s.io, got "
                        f"{kind}.kubescheduler.config.k8s.io"
                    ),
                )
            )
            return
        if api_version not in (None, "", API_VERSION):
            self.errors.append(
                ferr.FieldError(
                    ferr.DECODE,
                    _join(path, "apiVersion"),
                    detail=(
                        f'no kind "{args_type.KIND}" is registered for version "{api_version}"'
                        f" (only {API_VERSION} is supported)"
                    ),
                )
            )
            return
        args = self.struct(args_type, raw, path)
        if args is not None:
            pc.args = cast(PluginArgs, args)


class _Failed:
    pass


_FAILED: Final = _Failed()


def _plain(value: Any) -> Any:
    """Convert StrictDicts to plain dicts (recursively) for verbatim storage."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _go_name(hint: Any) -> str:
    if dataclasses.is_dataclass(hint):
        return "v1." + cast(type[Any], hint).__name__
    return getattr(hint, "__name__", str(hint))


@cache
def _fields(cls: type[Any]) -> dict[str, tuple[str, Any, str]]:
    hints = typing.get_type_hints(cls)
    out: dict[str, tuple[str, Any, str]] = {}
    for f in dataclasses.fields(cls):
        if "json" in f.metadata:
            out[f.metadata["json"]] = (f.name, hints[f.name], f.metadata.get("go", ""))
    return out


def decode_config(data: Any) -> tuple[KubeSchedulerConfiguration | None, list[ferr.FieldError]]:
    """Strictly decode a parsed document (apiVersion/kind already checked)."""
    dec = _Decoder()
    cfg = dec.struct(KubeSchedulerConfiguration, data, "")
    if cfg is not None:
        cfg.api_version = API_VERSION
        cfg.kind = KIND
    return cfg, dec.errors


def decode_args(plugin: str, data: Any) -> tuple[PluginArgs | None, list[ferr.FieldError]]:
    """Strictly decode one plugin's args (as ``pluginConfig[].args`` would be)."""
    dec = _Decoder()
    pc = PluginConfig(plugin)
    dec._plugin_args(pc, data, "args")
    return pc.args, dec.errors
