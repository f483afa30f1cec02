"""Reading, writing and checking ``KubeSchedulerConfiguration`` files.

The pipeline is upstream's ``loadConfigFromFile`` → ``Validate`` → ``--write-config-to``:

1. parse YAML or JSON (JSON is YAML, but JSON input goes through the JSON parser for
   exact error positions); repeated keys are recorded, not silently overwritten. The
   bytes must be UTF-8 (a byte order mark is allowed). Before anything recursive sees
   the document, one flat pass over the YAML events (or the JSON brackets) bounds its
   nesting (:data:`MAX_DEPTH`) and what its aliases expand to (:data:`MAX_NODES`, no
   alias inside its own anchor): PyYAML's composer, ``json.loads`` and the decoder all
   recurse, and a file nested thousands deep must get an error naming it, not a
   ``RecursionError``;
2. check ``apiVersion``/``kind``: only ``kubescheduler.config.k8s.io/v1`` is served,
   the removed betas get an error naming the release that dropped them;
3. strict decode (``decode.py``), then defaults (``defaults.py``), then validation
   (``validation.py``); every problem found is raised together in one
   :class:`~ksched.config.errors.ConfigError`.

:func:`effective_config` produces what kube-scheduler writes with
``--write-config-to``: per profile the ``pluginConfig`` of the plugins actually
enabled, sorted by plugin name (the framework's captured profile), and the internal
type's zero values made explicit.  :func:`dump_yaml` prints it with sorted keys, as
sigs.k8s.io/yaml does.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

from ksched.config import errors as ferr
from ksched.config.decode import StrictDict, decode_config, json_type_name
from ksched.config.defaults import DEFAULT_FEATURE_GATES, FeatureGates, plugin_names, set_defaults
from ksched.config.duration import Duration
from ksched.config.errors import ConfigError, FieldError
from ksched.config.types import API_VERSION, KIND, KubeSchedulerConfiguration, NodeResourcesFitArgs
from ksched.config.validation import validate

__all__ = [
    "decode_config_bytes",
    "dump_yaml",
    "effective_config",
    "load_config",
    "load_config_bytes",
    "validate_config_main",
    "write_config",
]

GROUP: Final = "kubescheduler.config.k8s.io"

#: The deepest nesting of mappings and sequences a configuration file may have. A real
#: KubeSchedulerConfiguration, plugin args included, nests about a dozen levels.
MAX_DEPTH: Final = 100
#: The most nodes (scalars, mappings, sequences) a YAML document may have once its
#: aliases are expanded, so that a few lines of nested aliases ("billion laughs")
#: cannot make the decoder walk billions of nodes.
MAX_NODES: Final = 1_000_000

#: ``DefaultExtenderTimeout`` (pkg/scheduler/extender.go).
DEFAULT_EXTENDER_TIMEOUT: Final = Duration.seconds(5)

#: Config API versions that kube-scheduler no longer serves, and when they went.
REMOVED_VERSIONS: Final[Mapping[str, str]] = {
    f"{GROUP}/v1alpha1": "Kubernetes v1.21",
    f"{GROUP}/v1alpha2": "Kubernetes v1.21",
    f"{GROUP}/v1beta1": "Kubernetes v1.26",
    f"{GROUP}/v1beta2": "Kubernetes v1.28",
    f"{GROUP}/v1beta3": "Kubernetes v1.29",
}


# --------------------------------------------------------------------------- parsing


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader building :class:`StrictDict` mappings that record repeated keys."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> StrictDict:
    loader.flatten_mapping(node)
    out = StrictDict()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        value = loader.construct_object(value_node, deep=True)
        skey = key if isinstance(key, str) else str(key)
        if skey in out:
            out.duplicates.append(skey)
        out[skey] = value
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _json_pairs(pairs: list[tuple[str, Any]]) -> StrictDict:
    out = StrictDict()
    for k, v in pairs:
        if k in out:
            out.duplicates.append(k)
        out[k] = v
    return out


def _decode_error(source: str, detail: str) -> ConfigError:
    return ConfigError([FieldError(ferr.DECODE, "", detail=detail)], source)


def _text(data: bytes, source: str) -> str:
    """The file's text: UTF-8, with or without a byte order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise _decode_error(
            source,
            f"the file is not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start} "
            f"(line {line}): {e.reason}",
        ) from None


def _too_deep(source: str, line: int) -> ConfigError:
    return _decode_error(
        source, f"the document is nested more than {MAX_DEPTH} levels deep (line {line})"
    )


def _check_json_shape(text: str, source: str) -> None:
    """Bound the nesting of a JSON text in one pass over its brackets (strings skipped)."""
    depth = 0
    in_string = escaped = False
    line = 1
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep(source, line)
        elif ch in "]}":
            depth -= 1


def _line(event: yaml.Event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0


def _check_yaml_shape(text: str, source: str) -> None:
    """Bound a YAML stream's nesting and the size its aliases expand to, from its events
    (PyYAML's parser keeps an explicit stack; only the composer recurses)."""
    # Per open collection: its anchor and the node count when it opened.
    open_nodes: list[tuple[str | None, int]] = []
    sizes: dict[str, int] = {}
    nodes = 0
    try:
        for event in yaml.parse(text, Loader=_StrictLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                nodes += 1
                open_nodes.append((event.anchor, nodes))
                if len(open_nodes) > MAX_DEPTH:
                    raise _too_deep(source, _line(event))
            elif isinstance(event, yaml.CollectionEndEvent):
                if open_nodes:
                    anchor, first = open_nodes.pop()
                    if anchor is not None:
                        sizes[anchor] = nodes - first + 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if any(anchor == event.anchor for anchor, _ in open_nodes):
                    raise _decode_error(
                        source,
                        f"alias *{event.anchor} refers to a node that contains it "
                        f"(line {_line(event)})",
                    )
                nodes += sizes.get(event.anchor or "", 1)
            if nodes > MAX_NODES:
                raise _decode_error(
                    source,
                    f"the document expands to more than {MAX_NODES:,} nodes (YAML aliases)",
                )
    except yaml.YAMLError as e:
        raise _decode_error(source, f"invalid YAML: {e}") from None


def _parse(data: bytes, source: str) -> Any:
    text = _text(data, source)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        _check_json_shape(text, source)
        try:
            return json.loads(text, object_pairs_hook=_json_pairs)
        except json.JSONDecodeError as e:
            raise _decode_error(source, f"invalid JSON: {e}") from e
    _check_yaml_shape(text, source)
    try:
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except yaml.YAMLError as e:
        raise _decode_error(source, f"invalid YAML: {e}") from e
    if len(docs) > 1:
        raise _decode_error(source, "expected one YAML document, found several")
    return docs[0] if docs else None


def _check_type_meta(doc: Any, source: str) -> None:
    if not isinstance(doc, dict):
        raise ConfigError(
            [FieldError(ferr.DECODE, "", detail="the configuration must be a YAML/JSON object")],
            source,
        )
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    for field, value in (("apiVersion", api_version), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(
                [
                    FieldError(
                        ferr.DECODE,
                        field,
                        detail=f"cannot unmarshal {json_type_name(value)} into Go value of type "
                        "string",
                    )
                ],
                source,
            )
    if not kind:
        raise ConfigError([FieldError(ferr.DECODE, "", detail="Object 'Kind' is missing")], source)
    if not api_version:
        raise ConfigError(
            [FieldError(ferr.DECODE, "", detail="Object 'apiVersion' is missing")], source
        )
    if api_version in REMOVED_VERSIONS:
        detail = (
            f'apiVersion "{api_version}" was removed in {REMOVED_VERSIONS[api_version]}; '
            f'kube-scheduler v1.36 only serves "{API_VERSION}": change apiVersion to '
            f"{API_VERSION} (see the v1 migration notes for renamed and removed fields)"
        )
        raise ConfigError([FieldError(ferr.DECODE, "apiVersion", detail=detail)], source)
    if api_version != API_VERSION or kind != KIND:
        detail = f'no kind "{kind}" is registered for version "{api_version}"'
        if str(api_version).startswith(GROUP + "/") or kind == KIND:
            detail += f' (expected apiVersion "{API_VERSION}", kind "{KIND}")'
        raise ConfigError([FieldError(ferr.DECODE, "", detail=detail)], source)


# ------------------------------------------------------------------------ public API


def decode_config_bytes(
    data: bytes, source: str = "<bytes>", *, gates: FeatureGates = DEFAULT_FEATURE_GATES
) -> KubeSchedulerConfiguration:
    """Parse, strictly decode and default a config without validating it."""
    doc = _parse(data, source)
    _check_type_meta(doc, source)
    try:
        cfg, errs = decode_config(doc)
    except RecursionError:
        # Not reached within MAX_DEPTH; kept so that no traceback can ever escape.
        raise _decode_error(source, "the document is nested too deeply") from None
    if errs or cfg is None:
        raise ConfigError(errs, source)
    return set_defaults(cfg, gates)


def load_config_bytes(
    data: bytes,
    source: str = "<bytes>",
    *,
    extra_plugins: Iterable[str] = (),
    extension_points: Mapping[str, Iterable[str]] | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> KubeSchedulerConfiguration:
    """Load a config document: decode strictly, default, validate.

    ``extra_plugins`` are out-of-tree plugin names known to the caller's registry.
    Raises :class:`ConfigError` listing every problem.
    """
    cfg = decode_config_bytes(data, source, gates=gates)
    errs = validate(
        cfg, extra_plugins=extra_plugins, extension_points=extension_points, gates=gates
    )
    if errs:
        raise ConfigError(errs, source)
    return cfg


def load_config(
    path: str | Path,
    *,
    extra_plugins: Iterable[str] = (),
    extension_points: Mapping[str, Iterable[str]] | None = None,
    gates: FeatureGates = DEFAULT_FEATURE_GATES,
) -> KubeSchedulerConfiguration:
    """Load the config file at ``path`` (see :func:`load_config_bytes`)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(
            [FieldError(ferr.DECODE, "", detail=f"cannot read config file: {e.strerror or e}")],
            str(p),
        ) from e
    return load_config_bytes(
        data, str(p), extra_plugins=extra_plugins, extension_points=extension_points, gates=gates
    )


def effective_config(cfg: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
    """The config as kube-scheduler's ``--write-config-to`` shows it.

    Per profile, ``pluginConfig`` keeps only plugins that are enabled somewhere and is
    sorted by plugin name (the framework's captured profile); unset booleans of the
    internal type become ``false``.
    """
    out = copy.deepcopy(cfg)
    apply_extenders(out)
    if out.enable_profiling is None:
        out.enable_profiling = False
    if out.enable_contention_profiling is None:
        out.enable_contention_profiling = False
    if out.leader_election.leader_elect is None:
        out.leader_election.leader_elect = False
    for prof in out.profiles:
        needed = set(plugin_names(prof.plugins))
        prof.plugin_config = sorted(
            (pc for pc in prof.plugin_config if pc.name in needed), key=lambda pc: pc.name
        )
    return out


def apply_extenders(cfg: KubeSchedulerConfiguration) -> None:
    """What kube-scheduler's ``buildExtenders`` writes back into the config it then
    prints: an unset ``httpTimeout`` becomes 5s (``NewHTTPExtender``), and the
    resources extenders mark ``ignoredByScheduler`` replace every profile's
    NodeResourcesFit ``ignoredResources``."""
    ignored: list[str] = []
    for ext in cfg.extenders:
        if ext.http_timeout.nanoseconds == 0:
            ext.http_timeout = DEFAULT_EXTENDER_TIMEOUT
        ignored += [r.name for r in ext.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return
    for prof in cfg.profiles:
        for pc in prof.plugin_config:
            if isinstance(pc.args, NodeResourcesFitArgs):
                pc.args.ignored_resources = list(ignored)
                break


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if value == "":
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(cfg: KubeSchedulerConfiguration) -> str:
    """YAML text of :func:`effective_config` with sorted keys (sigs.k8s.io/yaml style)."""
    return yaml.dump(
        effective_config(cfg).to_dict(),
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )


def write_config(cfg: KubeSchedulerConfiguration, path: str | Path) -> None:
    """Write the effective config (``--write-config-to``)."""
    Path(path).write_text(dump_yaml(cfg), encoding="utf-8")


def validate_config_main(
    path: str | Path,
    *,
    extra_plugins: Iterable[str] = (),
    extension_points: Mapping[str, Iterable[str]] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``ksched validate-config FILE``: print the effective config, or every error.

    Returns 0 when the file is valid, 1 otherwise.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        cfg = load_config(path, extra_plugins=extra_plugins, extension_points=extension_points)
    except ConfigError as e:
        n = len(e.errors)
        err.write(
            f"{path}: invalid KubeSchedulerConfiguration ({n} error{'s' if n != 1 else ''}):\n"
        )
        for line in e.lines():
            err.write(f"  - {line}\n")
        return 1
    out.write(dump_yaml(cfg))
    return 0
