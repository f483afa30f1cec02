"""A command-line parser with spf13/pflag's semantics, for kube-scheduler's flags.

Hand-written rather than built on :mod:`argparse` because a drop-in must accept and
refuse exactly what kube-scheduler does, and argparse differs in ways operators hit:
``--leader-elect false`` (pflag: ``--leader-elect`` then the stray argument ``false``,
an error; argparse with an optional value: ``False``), prefix abbreviations (argparse
accepts ``--leader`` for ``--leader-elect``; pflag does not), repeated list flags (pflag:
the first occurrence replaces the default, later ones append), ``_`` for ``-`` in names
(``cliflag.WordSepNormalizeFunc``), Go's value syntaxes (durations, ``strconv``
numbers and booleans) and its error texts
(``invalid argument "abc" for "--secure-port" flag: ...``). The help text is pflag's
``FlagUsagesWrapped`` layout, one section per named flag set as ``cliflag`` prints them.

A :class:`Flag` holds its :class:`Value` (parser and Go ``String()`` rendering), its
default text, and whether it was set (``Changed``); a :class:`FlagSets` is the ordered
list of named sections kube-scheduler's ``NamedFlagSets`` has.
"""

from __future__ import annotations

import csv
import ipaddress
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ksched.config.duration import format_duration, parse_duration

__all__ = [
    "Flag",
    "FlagError",
    "FlagSets",
    "Value",
    "go_quote",
]

T = TypeVar("T")


class FlagError(ValueError):
    """The command line cannot be parsed; the message is pflag's."""


def go_quote(s: str) -> str:
    """Go's ``%q`` / ``strconv.Quote`` for printable text."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------- values


class Value(ABC, Generic[T]):
    """A typed flag value: ``parse(text) -> T`` and Go's ``String()`` rendering.
    ``accumulate`` values (slices, maps) replace the default on the first ``Set`` and
    add to it on later ones, as pflag's slice values do."""

    type_name = "string"
    accumulate = False
    #: Kind for pflag's zero-default rule (``defaultIsZeroValue``).
    zero_kind = "other"

    @abstractmethod
    def parse(self, text: str) -> T:
        """The value of ``text``; ``ValueError`` with Go's message when malformed."""

    def merge(self, current: T, new: T) -> T:
        return new

    def render(self, value: T) -> str:
        return str(value)


class BoolValue(Value[bool]):
    type_name = "bool"
    zero_kind = "bool"

    def parse(self, text: str) -> bool:
        return parse_go_bool(text)

    def render(self, value: bool) -> str:
        return "true" if value else "false"


def parse_go_bool(text: str) -> bool:
    """``strconv.ParseBool``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class StringValue(Value[str]):
    type_name = "string"
    zero_kind = "string"

    def parse(self, text: str) -> str:
        return text


def _parse_int(text: str, bits: int, unsigned: bool = False) -> int:
    """``strconv.ParseInt(s, 0, bits)`` (base prefixes, underscores with a prefix)."""
    fn = "ParseUint" if unsigned else "ParseInt"
    s = text
    neg = False
    if not unsigned and s[:1] in "+-" and s:
        neg = s[0] == "-"
        s = s[1:]
    base = 10
    body = s
    if len(s) > 1 and s[0] == "0" and s[1] in "xXoObB":
        base = {"x": 16, "o": 8, "b": 2}[s[1].lower()]
        body = s[2:].replace("_", "")
    elif len(s) > 1 and s[0] == "0":
        base = 8
        body = s[1:].replace("_", "")
    try:
        if not body or not all(c.isalnum() for c in body):
            raise ValueError
        n = int(body, base)
    except ValueError:
        raise ValueError(f'strconv.{fn}: parsing "{text}": invalid syntax') from None
    n = -n if neg else n
    lo, hi = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= n <= hi:
        raise ValueError(f'strconv.{fn}: parsing "{text}": value out of range')
    return n


class IntValue(Value[int]):
    zero_kind = "number"

    def __init__(self, bits: int = 64, type_name: str = "int") -> None:
        self.bits = bits
        self.type_name = type_name

    def parse(self, text: str) -> int:
        return _parse_int(text, self.bits)


class LevelValue(Value[int]):
    """klog's ``Level`` (``-v``): a uint32."""

    type_name = "Level"
    zero_kind = "other"

    def parse(self, text: str) -> int:
        return _parse_int(text, 32, unsigned=True)


class Float32Value(Value[float]):
    type_name = "float32"
    zero_kind = "number"

    def parse(self, text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
        if math.isfinite(v) and abs(v) > 3.4028234663852886e38:
            raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
        return float(struct.unpack("f", struct.pack("f", v))[0])

    def render(self, value: float) -> str:
        return format_float32(value)


def format_float32(value: float) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 32)``: the shortest digits that round-trip as a
    float32, in %e form when the decimal exponent is below -4 or at least 6."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    for digits in range(1, 10):
        text = f"{value:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == value:
            break
    mant, _, exp_text = text.partition("e")
    exp = int(exp_text)
    sign = "-" if mant.startswith("-") else ""
    digs = mant.lstrip("-").replace(".", "")
    if exp < -4 or exp >= 6:
        body = digs[0] + ("." + digs[1:] if len(digs) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digs}"
    if len(digs) <= exp + 1:
        return f"{sign}{digs}{'0' * (exp + 1 - len(digs))}"
    return f"{sign}{digs[: exp + 1]}.{digs[exp + 1 :]}"


class DurationValue(Value[int]):
    """Go ``time.Duration`` in nanoseconds."""

    type_name = "duration"
    zero_kind = "duration"

    def parse(self, text: str) -> int:
        return parse_duration(text)

    def render(self, value: int) -> str:
        return format_duration(value)


def _read_csv(text: str) -> list[str]:
    """``encoding/csv`` reading one record, as pflag's slice flags split values."""
    if text == "":
        return []
    try:
        rows = list(csv.reader([text], strict=True))
    except csv.Error as exc:
        raise ValueError(str(exc)) from None
    return rows[0] if rows else []


def _write_csv(items: Sequence[str]) -> str:
    out = []
    for item in items:
        if any(c in item for c in ',"\n\r') or item.startswith(" "):
            out.append('"' + item.replace('"', '""') + '"')
        else:
            out.append(item)
    return ",".join(out)


class StringSliceValue(Value[list[str]]):
    type_name = "strings"
    accumulate = True
    zero_kind = "slice"

    def parse(self, text: str) -> list[str]:
        return _read_csv(text)

    def merge(self, current: list[str], new: list[str]) -> list[str]:
        return [*current, *new]

    def render(self, value: list[str]) -> str:
        return "[" + _write_csv(value) + "]"


class StringToStringValue(Value[dict[str, str]]):
    """pflag's ``stringToString``: one ``key=value`` as it is (quotes trimmed), or a
    CSV record of pairs when there are several ``=``."""

    type_name = "stringToString"
    accumulate = True

    def parse(self, text: str) -> dict[str, str]:
        n = text.count("=")
        if n == 0:
            raise ValueError(f"{text} must be formatted as key=value")
        pairs = [text.strip('"')] if n == 1 else _read_csv(text)
        out: dict[str, str] = {}
        for pair in pairs:
            k, sep, v = pair.partition("=")
            if not sep:
                raise ValueError(f"{pair} must be formatted as key=value")
            out[k] = v
        return out

    def merge(self, current: dict[str, str], new: dict[str, str]) -> dict[str, str]:
        return {**current, **new}

    def render(self, value: dict[str, str]) -> str:
        return "[" + _write_csv([f"{k}={value[k]}" for k in sorted(value)]) + "]"


class IPValue(Value[str]):
    type_name = "ip"
    zero_kind = "ip"

    def parse(self, text: str) -> str:
        try:
            return str(ipaddress.ip_address(text.strip()))
        except ValueError:
            raise ValueError(f'failed to parse IP: "{text}"') from None


@dataclass(frozen=True, slots=True)
class NamedCertKey:
    """``--tls-sni-cert-key cert,key[:domain,...]``."""

    cert_file: str
    key_file: str
    names: tuple[str, ...] = ()


class NamedCertKeyValue(Value[list[NamedCertKey]]):
    type_name = "namedCertKey"
    accumulate = True

    def parse(self, text: str) -> list[NamedCertKey]:
        files, _, names = text.partition(":")
        cert, sep, key = files.partition(",")
        if not sep or "," in key or not cert.strip() or not key.strip():
            raise ValueError("expected comma separated certificate and key file paths")
        domains = tuple(n.strip() for n in names.split(",") if n.strip()) if names else ()
        return [NamedCertKey(cert.strip(), key.strip(), domains)]

    def merge(self, current: list[NamedCertKey], new: list[NamedCertKey]) -> list[NamedCertKey]:
        return [*current, *new]

    def render(self, value: list[NamedCertKey]) -> str:
        items = []
        for nk in value:
            s = f"{nk.cert_file},{nk.key_file}"
            if nk.names:
                s += ":" + ",".join(nk.names)
            items.append(s)
        return "[" + ";".join(items) + "]"


class Int32SliceValue(Value[list[int]]):
    type_name = "int32Slice"
    accumulate = True

    def parse(self, text: str) -> list[int]:
        return [_parse_int(x.strip(), 32) for x in _read_csv(text)]

    def merge(self, current: list[int], new: list[int]) -> list[int]:
        return [*current, *new]

    def render(self, value: list[int]) -> str:
        return "[" + ",".join(str(v) for v in value) + "]"


class MultimapValue(Value[dict[str, list[str]]]):
    """``cliflag.ColonSeparatedMultimapStringString`` (empty key allowed): the flag text
    is kept and resolved by the feature gate; ``render`` is its ``String()``."""

    type_name = "colonSeparatedMultimapStringString"
    accumulate = True

    def parse(self, text: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for pair in text.split(","):
            if not pair:
                continue
            k, sep, v = pair.partition(":")
            if not sep:
                k, v = "", pair
            out.setdefault(k.strip(), []).append(v.strip())
        return out

    def merge(
        self, current: dict[str, list[str]], new: dict[str, list[str]]
    ) -> dict[str, list[str]]:
        out = {k: list(v) for k, v in current.items()}
        for k, v in new.items():
            out.setdefault(k, []).extend(v)
        return out

    def render(self, value: dict[str, list[str]]) -> str:
        pairs = []
        for k in sorted(value):
            for v in value[k]:
                pairs.append(f"{k}:{v}" if k else v)
        return ",".join(pairs)


class QuantityValue(Value[int]):
    """A ``resource.Quantity`` of bytes (``--log-*-info-buffer-size``)."""

    type_name = "quantity"

    def parse(self, text: str) -> int:
        from ksched.api.quantity import parse_quantity  # the API's quantity grammar

        try:
            return parse_quantity(text).value()
        except ValueError:
            raise ValueError(
                "quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            ) from None

    def render(self, value: int) -> str:
        return str(value)


class VModuleValue(Value[list[tuple[str, int]]]):
    """klog's ``--vmodule pattern=N,...``."""

    type_name = "pattern=N,..."

    def parse(self, text: str) -> list[tuple[str, int]]:
        out = []
        for pat in text.split(","):
            if not pat:
                continue
            pattern, sep, level = pat.partition("=")
            if not sep or not pattern:
                raise ValueError("expect comma-separated list of filename=N")
            try:
                v = _parse_int(level, 32)
            except ValueError:
                raise ValueError("expect comma-separated list of filename=N") from None
            out.append((pattern, v))
        return out

    def render(self, value: list[tuple[str, int]]) -> str:
        return ",".join(f"{p}={v}" for p, v in value)


class VersionValue(Value[str]):
    """``verflag``'s ``--version[=true|raw|vX.Y.Z]``."""

    type_name = "version"

    def parse(self, text: str) -> str:
        if text == "raw":
            return "raw"
        try:
            return "true" if parse_go_bool(text) else "false"
        except ValueError:
            if text.startswith("v") and text[1:2].isdigit():
                return text
            raise ValueError(f'invalid version "{text}"') from None


# ---------------------------------------------------------------------- flags


@dataclass(slots=True)
class Flag:
    """One flag: its name, value type, default, usage and current value."""

    name: str
    value_type: Value[Any]
    default: Any
    usage: str
    shorthand: str = ""
    #: The value a bare ``--flag`` takes (pflag's ``NoOptDefVal``).
    no_opt: str = ""
    value: Any = None
    changed: bool = False

    def __post_init__(self) -> None:
        if self.value is None:
            self.value = _copy(self.default)
        if isinstance(self.value_type, BoolValue) and not self.no_opt:
            self.no_opt = "true"

    @property
    def default_text(self) -> str:
        return self.value_type.render(self.default)

    def text(self) -> str:
        """``flag.Value.String()``."""
        return self.value_type.render(self.value)

    def set(self, text: str) -> None:
        parsed = self.value_type.parse(text)
        if self.value_type.accumulate and self.changed:
            self.value = self.value_type.merge(self.value, parsed)
        else:
            self.value = parsed
        self.changed = True

    def display_name(self) -> str:
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"

    def _default_is_zero(self) -> bool:
        d = self.default_text
        kind = self.value_type.zero_kind
        if kind == "bool":
            return d in ("false", "")
        if kind == "duration":
            return d in ("0", "0s")
        if kind == "number":
            return d == "0"
        if kind == "string":
            return d == ""
        if kind == "ip":
            return d == "<nil>"
        if kind == "slice":
            return d == "[]"
        return d in ("false", "<nil>", "", "0")

    def usage_line(self) -> tuple[str, str]:
        """The flag column and the usage column of pflag's help line."""
        line = f"  -{self.shorthand}, --{self.name}" if self.shorthand else f"      --{self.name}"
        varname, usage = _unquote_usage(self)
        if varname:
            line += " " + varname
        if self.no_opt and not isinstance(self.value_type, BoolValue):
            if self.value_type.type_name == "string":
                line += f'[="{self.no_opt}"]'
            else:
                line += f"[={self.no_opt}]"
        if not self._default_is_zero():
            if self.value_type.type_name == "string":
                usage += f" (default {go_quote(self.default_text)})"
            else:
                usage += f" (default {self.default_text})"
        return line, usage


def _copy(v: Any) -> Any:
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return {k: (list(x) if isinstance(x, list) else x) for k, x in v.items()}
    return v


def _unquote_usage(flag: Flag) -> tuple[str, str]:
    usage = flag.usage
    i = usage.find("`")
    if i >= 0:
        j = usage.find("`", i + 1)
        if j >= 0:
            name = usage[i + 1 : j]
            return name, usage[:i] + name + usage[j + 1 :]
    name = flag.value_type.type_name
    return ("" if name == "bool" else name), usage


@dataclass(slots=True)
class FlagSet:
    """One named section (``cliflag.NamedFlagSets`` entry)."""

    name: str
    flags: list[Flag] = field(default_factory=list)

    def usages(self, cols: int = 0) -> str:
        """pflag's ``FlagUsagesWrapped(cols)``."""
        rows = [f.usage_line() for f in sorted(self.flags, key=lambda f: f.name)]
        maxlen = max((len(line) for line, _ in rows), default=0)
        out = []
        for line, usage in rows:
            spacing = " " * (maxlen - len(line))
            out.append(f"{line} {spacing}  {_wrap(maxlen + 3, cols, usage)}\n")
        return "".join(out)


def _wrap_n(i: int, slop: int, s: str) -> tuple[str, str]:
    if i + slop > len(s):
        return s, ""
    w = max(s.rfind(" ", 0, i), s.rfind("\t", 0, i), s.rfind("\n", 0, i))
    if w <= 0:
        return s, ""
    nl = s.rfind("\n", 0, i)
    if 0 < nl < w:
        return s[:nl], s[nl + 1 :]
    return s[:w], s[w + 1 :]


def _wrap(i: int, w: int, s: str) -> str:
    """pflag's ``wrap``: indent continuation lines by ``i``; wrap at ``w`` columns."""
    if w == 0:
        return s.replace("\n", "\n" + " " * i)
    width = w - i
    r = ""
    if width < 24:
        i = 16
        width = w - i
        r += "\n" + " " * i
    if width < 24:
        return s.replace("\n", r)
    slop = 5
    width -= slop
    line, s = _wrap_n(width, slop, s)
    r += line.replace("\n", "\n" + " " * i)
    while s:
        line, s = _wrap_n(width, slop, s)
        r += "\n" + " " * i + line.replace("\n", "\n" + " " * i)
    return r


class FlagSets:
    """The ordered named sections of a command and the parser over all of them."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.sets: list[FlagSet] = []
        self._by_name: dict[str, Flag] = {}
        self._by_short: dict[str, Flag] = {}
        self._section: dict[str, str] = {}

    def section(self, name: str) -> _SectionBuilder:
        fs = next((s for s in self.sets if s.name == name), None)
        if fs is None:
            fs = FlagSet(name)
            self.sets.append(fs)
        return _SectionBuilder(self, fs)

    def _add(self, fs: FlagSet, flag: Flag) -> Flag:
        if flag.name in self._by_name:
            raise ValueError(f"flag redefined: {flag.name}")
        fs.flags.append(flag)
        self._by_name[flag.name] = flag
        self._section[flag.name] = fs.name
        if flag.shorthand:
            self._by_short[flag.shorthand] = flag
        return flag

    def __getitem__(self, name: str) -> Flag:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Flag]:
        """Every flag, sorted by name (pflag's ``VisitAll``)."""
        return iter(sorted(self._by_name.values(), key=lambda f: f.name))

    def section_of(self, name: str) -> str:
        return self._section[name]

    def changed(self, name: str) -> bool:
        return self._by_name[name].changed

    def value(self, name: str) -> Any:
        return self._by_name[name].value

    # ---- parsing ---------------------------------------------------------------

    def parse(self, argv: Sequence[str]) -> list[str]:
        """Parse ``argv`` (without the program name); returns the non-flag arguments.
        Raises :class:`FlagError` with pflag's message."""
        args = list(argv)
        rest: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            i += 1
            if a == "--":
                rest.extend(args[i:])
                break
            if len(a) < 2 or a[0] != "-":
                rest.append(a)
                continue
            if a.startswith("--"):
                i = self._parse_long(a, args, i)
            else:
                i = self._parse_short(a, args, i)
        return rest

    def _set(self, flag: Flag, text: str, shown: str) -> None:
        try:
            flag.set(text)
        except ValueError as exc:
            raise FlagError(
                f'invalid argument {go_quote(text)} for "{shown}" flag: {exc}'
            ) from None

    def _parse_long(self, a: str, args: list[str], i: int) -> int:
        body = a[2:]
        if not body or body[0] in "-=":
            raise FlagError(f"bad flag syntax: {a}")
        name, sep, value = body.partition("=")
        name = name.replace("_", "-")  # cliflag.WordSepNormalizeFunc
        flag = self._by_name.get(name)
        if flag is None:
            if name == "help":
                raise _HelpRequested  # a command without its own help flag
            raise FlagError(f"unknown flag: --{name}")
        if sep:
            self._set(flag, value, flag.display_name())
        elif flag.no_opt:
            self._set(flag, flag.no_opt, flag.display_name())
        elif i < len(args):
            self._set(flag, args[i], flag.display_name())
            i += 1
        else:
            raise FlagError(f"flag needs an argument: {a}")
        return i

    def _parse_short(self, a: str, args: list[str], i: int) -> int:
        shorthands = a[1:]
        while shorthands:
            c = shorthands[0]
            flag = self._by_short.get(c)
            if flag is None:
                if c == "h":
                    raise _HelpRequested
                raise FlagError(f"unknown shorthand flag: '{c}' in {a}")
            rest = shorthands[1:]
            if rest.startswith("="):
                self._set(flag, rest[1:], flag.display_name())
                return i
            if flag.no_opt:
                self._set(flag, flag.no_opt, flag.display_name())
                shorthands = rest
                continue
            if rest:
                self._set(flag, rest, flag.display_name())
                return i
            if i < len(args):
                self._set(flag, args[i], flag.display_name())
                return i + 1
            raise FlagError(f"flag needs an argument: '{c}' in -{c}")
        return i

    # ---- help ------------------------------------------------------------------

    def usage(self, cols: int = 0) -> str:
        """``cliflag.SetUsageAndHelpFunc``'s usage: ``Usage:`` then each section."""
        out = [f"Usage:\n  {self.command} [flags]\n"]
        for fs in self.sets:
            if not fs.flags:
                continue
            title = fs.name[:1].upper() + fs.name[1:]
            out.append(f"\n{title} flags:\n\n{fs.usages(cols)}")
        return "".join(out)


class _HelpRequested(Exception):
    """``-h``/``--help`` was given (cobra answers it before anything else)."""


HelpRequested = _HelpRequested


class _SectionBuilder:
    def __init__(self, owner: FlagSets, fs: FlagSet) -> None:
        self._owner = owner
        self._fs = fs

    def add(
        self,
        name: str,
        value_type: Value[Any],
        default: Any,
        usage: str,
        *,
        shorthand: str = "",
        no_opt: str = "",
    ) -> Flag:
        return self._owner._add(
            self._fs, Flag(name, value_type, default, usage, shorthand=shorthand, no_opt=no_opt)
        )

    def bool(self, name: str, default: bool, usage: str, **kw: Any) -> Flag:
        return self.add(name, BoolValue(), default, usage, **kw)

    def string(self, name: str, default: str, usage: str, **kw: Any) -> Flag:
        return self.add(name, StringValue(), default, usage, **kw)

    def duration(self, name: str, default_ns: int, usage: str) -> Flag:
        return self.add(name, DurationValue(), default_ns, usage)

    def strings(self, name: str, default: list[str], usage: str) -> Flag:
        return self.add(name, StringSliceValue(), default, usage)
