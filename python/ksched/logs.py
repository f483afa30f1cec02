"""kube-scheduler's log output: klog's text format, or JSON with ``--logging-format=json``.

ksched logs through the standard :mod:`logging` package, so every library's records end
up in one stream, but writes them as klog and component-base's JSON logger do, so log
pipelines that parse kube-scheduler's lines parse ksched's:

* text (the default)::

    I1201 07:17:54.123456    4242 schedule_one.py:481] "Successfully bound pod to node" \
      pod="default/p" node="n1" evaluatedNodes=8 feasibleNodes=3

  a severity letter (I, W, E), ``MMDD hh:mm:ss.uuuuuu`` local time, the process id
  right-aligned in 7 columns, ``file:line`` of the call (the Python file where upstream
  names its Go file), then the message. A structured message is quoted as Go's
  ``strconv.Quote`` does and followed by ``key=value`` pairs: strings quoted, multi-line
  strings as klog's ``key=<`` block, numbers and booleans bare, object references
  (:func:`kobj`, :func:`kref`) as ``namespace/name``, anything else as JSON; a key given
  twice keeps its last value in the first one's place, as klog's de-duplication does.
  Unstructured messages (``Infof``-style, and other libraries' records) are written as
  they are.
* ``json``::

    {"ts":1796118125878.784,"caller":"ksched/schedule_one.py:481",
     "msg":"Successfully bound pod to node","v":2,
     "pod":{"name":"p","namespace":"default"},"node":"n1",...}

  (one line per record; wrapped here)

  ``ts`` in milliseconds since the epoch, ``caller`` as ``dir/file:line``, ``v`` on info
  records only, the logger's :meth:`Logger.with_values` pairs before ``v`` and the call's
  after it, ``err`` for errors, object references as ``{"name","namespace"}``.

Verbosity is klog's: ``Logger.v(n).info`` is shown at ``-v n`` and above. It maps onto
:mod:`logging` levels between INFO and DEBUG (``V(n)`` is level ``INFO - n``), so
``isEnabledFor`` answers cheaply on the hot path and records other libraries log at
INFO or WARNING keep their meaning. ``--vmodule=pattern=N`` raises the verbosity of the
files whose base name (without ``.py``) matches the glob ``pattern`` (text format
only, as upstream). ``--log-text-split-stream``/``--log-json-split-stream`` write info
records to stdout and errors to stderr; ``--log-*-info-buffer-size`` buffers the info
stream, flushed every ``--log-flush-frequency`` (both behind LoggingAlphaOptions, checked
by the caller). Everything else is written to stderr, unbuffered, as klog does.
"""

from __future__ import annotations

import fnmatch
import io
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import IO, Any, Final

import orjson

__all__ = [
    "Logger",
    "ObjectRef",
    "configure",
    "get_logger",
    "kobj",
    "kref",
    "level_for",
    "set_verbosity",
    "verbosity",
]

INFO: Final = logging.INFO
#: ``V(n)`` records have level ``INFO - n``; the deepest level kept apart is V(19).
_MAX_V: Final = 19


def level_for(v: int) -> int:
    """The :mod:`logging` level of klog verbosity ``v``."""
    return INFO - min(max(v, 0), _MAX_V)


def _v_of(levelno: int) -> int:
    return INFO - levelno if levelno <= INFO else 0


# ---------------------------------------------------------------------- values


class ObjectRef:
    """``klog.ObjectRef``: ``namespace/name`` in text, ``{"name","namespace"}`` in JSON."""

    __slots__ = ("name", "namespace")

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __repr__(self) -> str:
        return f"ObjectRef({self!s})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ObjectRef)
            and other.name == self.name
            and other.namespace == self.namespace
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.name))

    def as_json(self) -> dict[str, str]:
        out = {"name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


def kref(namespace: str, name: str) -> ObjectRef:
    """``klog.KRef``."""
    return ObjectRef(namespace, name)


def kobj(obj: Any) -> ObjectRef:
    """``klog.KObj`` of anything with ``namespace``/``name`` attributes or a raw object."""
    if isinstance(obj, dict):
        meta = obj.get("metadata") or {}
        return ObjectRef(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return ObjectRef(str(getattr(obj, "namespace", "") or ""), str(getattr(obj, "name", "")))


def _go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` for the characters log messages carry."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _text_value(v: Any) -> str:
    """The ``=value`` part of one pair, as klog's ``KVFormat`` writes it."""
    if isinstance(v, ObjectRef):
        return "=" + _go_quote(str(v))
    if isinstance(v, BaseException):
        v = str(v)
    if isinstance(v, str):
        if "\n" not in v:
            return "=" + _go_quote(v)
        lines = v.split("\n")
        body = "".join(f"\t{line}\n" for line in lines[:-1])
        if lines[-1]:
            body += f"\t{lines[-1]}\n"
        return "=<\n" + body + " >"
    if v is None:
        return "=null"
    if isinstance(v, bool):
        return "=true" if v else "=false"
    if isinstance(v, int):
        return f"={v}"
    if isinstance(v, float):
        return "=" + _go_float(v)
    return "=" + orjson.dumps(_jsonable(v), option=orjson.OPT_NON_STR_KEYS).decode()


def _go_float(v: float) -> str:
    """``encoding/json``'s float format (shortest repr, exponent beyond 1e21)."""
    if math.isinf(v) or math.isnan(v):
        return _go_quote(str(v))
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    text = repr(v)
    if "e" in text:
        mant, _, exp = text.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        text = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0').rjust(2, '0')}"
    return text


def _jsonable(v: Any) -> Any:
    if isinstance(v, ObjectRef):
        return v.as_json()
    if isinstance(v, BaseException):
        return str(v)
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


# ---------------------------------------------------------------------- records

#: The attribute of a LogRecord that carries a structured call:
#: (context pairs, call pairs, error or None).
_KV: Final = "klog_kv"


class Logger:
    """A klog-style structured logger over a :mod:`logging` logger.

    ``info``/``error`` take the message and key/value pairs as keyword arguments, in
    the order upstream passes them; ``v(n)`` is the verbosity-gated logger; ``infof``
    writes an unstructured (printf-style) message as ``klog.Infof`` does.
    """

    __slots__ = ("_log", "_values", "_verbose")

    def __init__(self, name: str | logging.Logger, values: tuple[tuple[str, Any], ...] = ()):
        self._log = name if isinstance(name, logging.Logger) else logging.getLogger(name)
        self._values = values
        self._verbose: dict[int, Verbose] = {}

    @property
    def std(self) -> logging.Logger:
        return self._log

    def with_values(self, **kv: Any) -> Logger:
        """``logger.WithValues``: pairs every record of the returned logger carries first."""
        return Logger(self._log, self._values + tuple(kv.items()))

    def v(self, level: int) -> Verbose:
        """``logger.V(level)``."""
        verbose = self._verbose.get(level)
        if verbose is None:
            verbose = self._verbose[level] = Verbose(self, level_for(level))
        return verbose

    def enabled(self, level: int = 0) -> bool:
        return self._log.isEnabledFor(level_for(level))

    def info(self, msg: str, /, **kv: Any) -> None:
        if self._log.isEnabledFor(INFO):
            self._emit(INFO, msg, kv, None)

    def infof(self, fmt: str, /, *args: Any) -> None:
        """``klog.Infof``: an unstructured message."""
        if self._log.isEnabledFor(INFO):
            self._log.log(INFO, fmt, *args, stacklevel=2)

    def warning(self, msg: str, /, **kv: Any) -> None:
        self._emit(logging.WARNING, msg, kv, None)

    def error(self, msg: str, /, err: Any = None, **kv: Any) -> None:
        """``logger.Error(err, msg, kv...)``; ``err`` may be None (``Error(nil, ...)``)."""
        self._emit(logging.ERROR, msg, kv, err if err is not None else _NO_ERR)

    def _emit(self, level: int, msg: str, kv: dict[str, Any], err: Any, depth: int = 3) -> None:
        self._log.log(
            level, msg, extra={_KV: (self._values, tuple(kv.items()), err)}, stacklevel=depth
        )


_NO_ERR: Final = object()


class Verbose:
    """``logger.V(n)``: ``enabled`` and ``info``."""

    __slots__ = ("_level", "_logger")

    def __init__(self, logger: Logger, level: int) -> None:
        self._logger = logger
        self._level = level

    @property
    def enabled(self) -> bool:
        return self._logger._log.isEnabledFor(self._level)

    def __bool__(self) -> bool:
        return self.enabled

    def info(self, msg: str, /, **kv: Any) -> None:
        if self._logger._log.isEnabledFor(self._level):
            self._logger._emit(self._level, msg, kv, None)

    def infof(self, fmt: str, /, *args: Any) -> None:
        if self._logger._log.isEnabledFor(self._level):
            self._logger._log.log(self._level, fmt, *args, stacklevel=2)


def get_logger(name: str) -> Logger:
    """The structured logger of module ``name`` (``get_logger(__name__)``)."""
    return Logger(name)


# ---------------------------------------------------------------------- formatters


def _letter(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "F"
    if levelno >= logging.ERROR:
        return "E"
    if levelno >= logging.WARNING:
        return "W"
    return "I"


def _text_pairs(record: logging.LogRecord) -> str | None:
    """The `` key=value`` text of a structured record, with klog's de-duplication: a
    repeated key with the same value is dropped, one with another value replaces the
    earlier pair (at its own, later place); None when the record is unstructured."""
    kv = getattr(record, _KV, None)
    if kv is None:
        return None
    values, call, err = kv
    head: tuple[tuple[str, Any], ...] = ()
    if err is not None and err is not _NO_ERR:
        head = (("err", err),)
    out: list[tuple[str, str] | None] = []
    where: dict[str, int] = {}
    for key, value in (*values, *head, *call):
        text = "=<nil>" if value is None else _text_value(value)
        i = where.get(key)
        if i is not None:
            old = out[i]
            if old is not None and old[1] == text:
                continue
            out[i] = None
        where[key] = len(out)
        out.append((key, text))
    return "".join(f" {p[0]}{p[1]}" for p in out if p is not None)


class KlogTextFormatter(logging.Formatter):
    """klog's text format."""

    def __init__(self) -> None:
        super().__init__()
        self._pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        t = record.created
        lt = time.localtime(t)
        header = (
            f"{_letter(record.levelno)}{lt.tm_mon:02d}{lt.tm_mday:02d} "
            f"{lt.tm_hour:02d}:{lt.tm_min:02d}:{lt.tm_sec:02d}.{int((t % 1) * 1e6):06d} "
            f"{self._pid:7d} {record.filename}:{record.lineno}] "
        )
        pairs = _text_pairs(record)
        if pairs is None:
            text = header + record.getMessage()
        else:
            text = header + _go_quote(record.getMessage()) + pairs
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class KlogJSONFormatter(logging.Formatter):
    """component-base's JSON format (zap, as ``--logging-format=json`` configures it).

    Written field by field: zap does not de-duplicate keys, so a pair given both by
    :meth:`Logger.with_values` and by the call appears twice, as upstream's does."""

    def format(self, record: logging.LogRecord) -> str:
        parent = os.path.basename(os.path.dirname(record.pathname))
        caller = f"{parent}/{record.filename}:{record.lineno}" if parent else record.filename
        fields: list[tuple[str, Any]] = [
            ("ts", round(record.created * 1000.0, 4)),
            ("caller", caller),
            ("msg", record.getMessage()),
        ]
        kv = getattr(record, _KV, None)
        is_error = record.levelno >= logging.ERROR
        values: tuple[tuple[str, Any], ...] = ()
        call: tuple[tuple[str, Any], ...] = ()
        err: Any = None
        if kv is not None:
            values, call, err = kv
        fields.extend(values)
        if not is_error:
            fields.append(("v", _v_of(record.levelno)))
        if err is not None and err is not _NO_ERR:
            fields.append(("err", err))
        fields.extend(call)
        if record.exc_info:
            fields.append(("stacktrace", self.formatException(record.exc_info)))
        body = ",".join(
            orjson.dumps(key).decode()
            + ":"
            + orjson.dumps(_jsonable(value), option=orjson.OPT_NON_STR_KEYS).decode()
            for key, value in fields
        )
        return "{" + body + "}"


# ---------------------------------------------------------------------- handlers


class _VModuleFilter(logging.Filter):
    """Global verbosity plus ``--vmodule`` per file."""

    def __init__(self, verbosity: int, vmodule: Iterable[tuple[str, int]]) -> None:
        super().__init__()
        self.verbosity = verbosity
        self.vmodule = list(vmodule)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= INFO:
            return True
        v = _v_of(record.levelno)
        if self.vmodule:
            base = record.filename.rsplit(".", 1)[0]
            for pattern, level in self.vmodule:
                target = record.pathname if "/" in pattern else base
                if fnmatch.fnmatchcase(target, pattern):
                    return v <= level
        return v <= self.verbosity


class _Stream(logging.Handler):
    """Writes formatted records to a stream, optionally buffering up to ``buffer_size``
    bytes (flushed when full, by :meth:`flush` and every flush interval)."""

    def __init__(self, stream: IO[str] | str, buffer_size: int = 0) -> None:
        super().__init__()
        #: A stream, or "stderr"/"stdout": the current ``sys`` stream at each write
        #: (so a redirected ``sys.stderr``, as test runners do, is honoured).
        self._stream = stream
        self.buffer_size = buffer_size
        self._buf = io.StringIO()
        self._buffered = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        with self.lock or threading.Lock():
            if self.buffer_size <= 0:
                self.stream.write(line)
                self.stream.flush()
                return
            self._buf.write(line)
            self._buffered += len(line)
            if self._buffered >= self.buffer_size:
                self._flush_locked()

    @property
    def stream(self) -> IO[str]:
        if isinstance(self._stream, str):
            out: IO[str] = getattr(sys, self._stream)
            return out
        return self._stream

    def _flush_locked(self) -> None:
        if self._buffered:
            self.stream.write(self._buf.getvalue())
            self._buf = io.StringIO()
            self._buffered = 0
        try:
            self.stream.flush()
        except ValueError:  # closed underneath us (interpreter or test teardown)
            return

    def flush(self) -> None:
        with self.lock or threading.Lock():
            self._flush_locked()


class _ErrorsOnly(logging.Filter):
    def __init__(self, errors: bool) -> None:
        super().__init__()
        self.errors = errors

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.ERROR) == self.errors


_state: dict[str, Any] = {"filter": None, "flusher": None}


def configure(
    *,
    verbosity: int = 0,
    fmt: str = "text",
    vmodule: Iterable[tuple[str, int]] = (),
    split_stream: bool = False,
    info_buffer_size: int = 0,
    flush_frequency: float = 5.0,
    stderr: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> None:
    """Install the klog handlers on the root logger (replacing any there)."""
    err_stream: IO[str] | str = stderr if stderr is not None else "stderr"
    out_stream: IO[str] | str = stdout if stdout is not None else "stdout"
    formatter: logging.Formatter = KlogJSONFormatter() if fmt == "json" else KlogTextFormatter()
    vfilter = _VModuleFilter(verbosity, vmodule)
    handlers: list[_Stream] = []
    if split_stream:
        info = _Stream(out_stream, info_buffer_size)
        info.addFilter(_ErrorsOnly(False))
        errors = _Stream(err_stream)
        errors.addFilter(_ErrorsOnly(True))
        handlers = [info, errors]
    else:
        handlers = [_Stream(err_stream, info_buffer_size)]
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, _Stream):
            root.removeHandler(h)
            h.flush()
    for h in handlers:
        h.setFormatter(formatter)
        h.addFilter(vfilter)
        root.addHandler(h)
    deepest = max([verbosity, *(level for _, level in vfilter.vmodule)])
    root.setLevel(level_for(deepest))
    _state["filter"] = vfilter
    if info_buffer_size > 0 and _state["flusher"] is None:
        _start_flusher(handlers, flush_frequency)


def _start_flusher(handlers: list[_Stream], every: float) -> None:
    def run() -> None:
        while True:
            time.sleep(every)
            for h in handlers:
                h.flush()

    t = threading.Thread(target=run, name="klog-flush", daemon=True)
    _state["flusher"] = t
    t.start()


def verbosity() -> int:
    """The global ``-v`` level in force."""
    vfilter: _VModuleFilter | None = _state["filter"]
    if vfilter is not None:
        return vfilter.verbosity
    return _v_of(logging.getLogger().getEffectiveLevel())


def set_verbosity(v: int) -> None:
    """Change ``-v`` at run time (``PUT /debug/flags/v``)."""
    vfilter: _VModuleFilter | None = _state["filter"]
    deepest = v
    if vfilter is not None:
        vfilter.verbosity = v
        deepest = max([v, *(level for _, level in vfilter.vmodule)])
    logging.getLogger().setLevel(level_for(deepest))
