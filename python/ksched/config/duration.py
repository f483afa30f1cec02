"""Go ``time.Duration`` text, as ``metav1.Duration`` reads and writes it.

Configuration durations (``leaseDuration: 15s``, ``filterTimeout: 10s``,
``bindingTimeout: 10m0s``) are JSON strings parsed by Go's ``time.ParseDuration`` and
written back with ``time.Duration.String()``.  Round-tripping a config through ksched
must give the same text kube-scheduler's ``--write-config-to`` gives, so both
directions are implemented here on integer nanoseconds (no float drift).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["Duration", "format_duration", "parse_duration"]

_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART: Final = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> int:
    """Parse Go duration text into nanoseconds; raise ``ValueError`` like Go would."""
    orig = text
    if text in ("0", "+0", "-0"):
        return 0
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if not text:
        raise ValueError(f'time: invalid duration "{orig}"')
    total = 0
    pos = 0
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None or (not m.group(1) and not m.group(2)):
            if m is None and re.match(r"[\d.]+$", text[pos:]):
                raise ValueError(f'time: missing unit in duration "{orig}"')
            raise ValueError(f'time: invalid duration "{orig}"')
        whole, frac, unit = m.group(1) or "0", m.group(2) or "", m.group(3)
        scale = _UNITS[unit]
        total += int(whole) * scale
        if frac:
            total += int(frac) * scale // (10 ** len(frac))
        pos = m.end()
    return sign * total


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    """Fractional digits of ``v`` (``prec`` of them), trailing zeros dropped."""
    digits = ""
    printed = False
    for _ in range(prec):
        d = v % 10
        printed = printed or d != 0
        if printed:
            digits = str(d) + digits
        v //= 10
    return ("." + digits if printed else ""), v


def format_duration(ns: int) -> str:
    """Go's ``time.Duration.String()``: ``15s``, ``10m0s``, ``1h0m0s``, ``1.5s``, ``500ms``."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < 1_000_000_000:
        if u < 1_000:
            out = f"{u}ns"
        elif u < 1_000_000:
            frac, whole = _fmt_frac(u, 3)
            out = f"{whole}{frac}µs"
        else:
            frac, whole = _fmt_frac(u, 6)
            out = f"{whole}{frac}ms"
    else:
        frac, secs = _fmt_frac(u, 9)
        out = f"{secs % 60}{frac}s"
        mins = secs // 60
        if mins > 0:
            out = f"{mins % 60}m{out}"
            hours = mins // 60
            if hours > 0:
                out = f"{hours}h{out}"
    return "-" + out if neg else out


@dataclass(frozen=True, slots=True, order=True)
class Duration:
    """A ``metav1.Duration``: integer nanoseconds, printed the Go way."""

    nanoseconds: int

    @classmethod
    def parse(cls, text: str) -> Duration:
        return cls(parse_duration(text))

    @classmethod
    def seconds(cls, s: float) -> Duration:
        return cls(round(s * 1_000_000_000))

    def total_seconds(self) -> float:
        return self.nanoseconds / 1_000_000_000

    def __str__(self) -> str:
        return format_duration(self.nanoseconds)
