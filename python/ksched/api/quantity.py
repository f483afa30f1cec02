"""Kubernetes resource quantities (``"100m"``, ``"1.5Gi"``, ``"2e6"``) with exact arithmetic.

Semantics follow apimachinery's ``resource.ParseQuantity`` / ``Quantity.Value`` /
``Quantity.MilliValue``, which is what kube-scheduler (and the API server that validated
the object) apply:

* Grammar: optional sign, digits with an optional decimal point (``"1."``, ``".5"`` and
  even an empty number part are accepted, as upstream's scanner does), then one suffix:
  decimal SI (``n u m "" k M G T P E``), binary SI (``Ki Mi Gi Ti Pi Ei``) or a decimal
  exponent (``e3``, ``E-3``, ``e+6``). Suffixes are case-sensitive (``"1K"``/``"1mi"``
  are errors).
* A parsed value is rounded *away from zero* to a whole number of nano-units
  (``"0.1n"`` is ``1n``), so every quantity is an integer count of nanos. That integer is
  the whole internal representation: exact, hashable, totally ordered, and sums of
  quantities (pod requests) are exact, exactly like upstream's ``Quantity.Add``.
* Binary-SI values are capped at ``2**63 - 1`` in magnitude, as upstream caps them.
* :meth:`Quantity.value` / :meth:`Quantity.milli_value` round away from zero (``1.5`` →
  2, ``0.1m`` → 1 milli, ``-1.5`` → -2), as upstream's int64 fast path documents, and
  saturate at the int64 range instead of wrapping.

Inputs come from ``orjson.loads``; quantities are JSON strings, but JSON numbers are
accepted the way ``Quantity.UnmarshalJSON`` accepts them (the number's text is parsed),
and surrounding whitespace is trimmed as upstream does. ``bool``, NaN and infinities are
rejected.

Deliberate differences from upstream, all on inputs no real API server produces:
upstream's arbitrary-precision path rounds some negative non-integers toward +inf in
``Value()`` and wraps int64 overflow; we round away from zero and saturate. Exponents
outside int32 and numbers with more than 1000 digits or beyond 1e1000 are rejected
instead of wrapping or exhausting memory.

Parsing is memoised per input string: a cluster uses a handful of distinct quantity
strings, and the 10,000-pod benchmark parses each of them thousands of times.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

from ksched.api.errors import QuantityError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "NANOS_PER_UNIT",
    "Quantity",
    "nanos_to_milli_value",
    "nanos_to_value",
    "parse_quantity",
    "parse_quantity_nanos",
]

INT64_MAX: Final = (1 << 63) - 1
INT64_MIN: Final = -(1 << 63)
NANOS_PER_UNIT: Final = 1_000_000_000
_NANOS_PER_MILLI: Final = 1_000_000
_BINARY_CAP_NANOS: Final = INT64_MAX * NANOS_PER_UNIT
_MAX_DIGITS: Final = 1000
_MAX_NANO_EXPONENT: Final = 1000 + 9

# Upstream's error texts, verbatim.
SPLIT_RE_STRING: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"
_ERR_RANGE: Final = "quantity is outside the supported range"

# sign, integer digits, fraction digits, suffix letters, exponent sign+digits.
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")

# suffix -> (base, exponent)
_SUFFIXES: Final[dict[str, tuple[int, int]]] = {
    "": (10, 0),
    "n": (10, -9),
    "u": (10, -6),
    "m": (10, -3),
    "k": (10, 3),
    "M": (10, 6),
    "G": (10, 9),
    "T": (10, 12),
    "P": (10, 15),
    "E": (10, 18),
    "Ki": (2, 10),
    "Mi": (2, 20),
    "Gi": (2, 30),
    "Ti": (2, 40),
    "Pi": (2, 50),
    "Ei": (2, 60),
}
_DECIMAL_SI_OUT: Final = (
    (18, "E"),
    (15, "P"),
    (12, "T"),
    (9, "G"),
    (6, "M"),
    (3, "k"),
    (0, ""),
    (-3, "m"),
    (-6, "u"),
    (-9, "n"),
)


def _clamp64(v: int) -> int:
    if v > INT64_MAX:
        return INT64_MAX
    if v < INT64_MIN:
        return INT64_MIN
    return v


def _div_away(n: int, d: int) -> int:
    """``n / d`` rounded away from zero, for ``d > 0``."""
    if n >= 0:
        return -(-n // d)
    return -(-n // d + (1 if -n % d else 0))


def nanos_to_value(nanos: int) -> int:
    """Whole units of a nano count, rounded away from zero, saturated to int64."""
    if nanos % NANOS_PER_UNIT == 0:
        return _clamp64(nanos // NANOS_PER_UNIT)
    return _clamp64(_div_away(nanos, NANOS_PER_UNIT))


def nanos_to_milli_value(nanos: int) -> int:
    """Milli-units of a nano count, rounded away from zero, saturated to int64."""
    if nanos % _NANOS_PER_MILLI == 0:
        return _clamp64(nanos // _NANOS_PER_MILLI)
    return _clamp64(_div_away(nanos, _NANOS_PER_MILLI))


class Quantity:
    """An exact resource quantity: an integer number of nano-units.

    Immutable by convention; compare, order and hash by exact value. Build one with
    :func:`parse_quantity`, or ``Quantity(nanos)`` when the nano count is known.
    """

    __slots__ = ("_nanos",)

    def __init__(self, nanos: int) -> None:
        self._nanos = nanos

    @property
    def nanos(self) -> int:
        """The exact value in nano-units (``1`` is ``1_000_000_000``)."""
        return self._nanos

    def value(self) -> int:
        """Whole units, rounded away from zero (upstream ``Quantity.Value``)."""
        return nanos_to_value(self._nanos)

    def milli_value(self) -> int:
        """Milli-units, rounded away from zero (upstream ``Quantity.MilliValue``)."""
        return nanos_to_milli_value(self._nanos)

    def as_fraction(self) -> Fraction:
        """The exact value as a :class:`~fractions.Fraction`."""
        return Fraction(self._nanos, NANOS_PER_UNIT)

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._nanos > 0) - (self._nanos < 0)

    def is_zero(self) -> bool:
        return self._nanos == 0

    def __add__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._nanos + other._nanos)

    def __sub__(self, other: Quantity) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self._nanos - other._nanos)

    def __neg__(self) -> Quantity:
        return Quantity(-self._nanos)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self._nanos == other._nanos
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self._nanos < other._nanos
        return NotImplemented

    def __le__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self._nanos <= other._nanos
        return NotImplemented

    def __gt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self._nanos > other._nanos
        return NotImplemented

    def __ge__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self._nanos >= other._nanos
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __bool__(self) -> bool:
        return self._nanos != 0

    def __str__(self) -> str:
        """Canonical decimal-SI text: the largest SI suffix with an integer mantissa."""
        n = self._nanos
        if n == 0:
            return "0"
        for exp, suffix in _DECIMAL_SI_OUT:
            unit = 10 ** (exp + 9)
            if n % unit == 0:
                return f"{n // unit}{suffix}"
        raise AssertionError("unreachable: every nano count is a multiple of 1n")

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _decimal_nanos(digits: str, frac_len: int, exponent: int, text: str, field: str) -> int:
    """Nanos of ``int(digits) * 10**(exponent - frac_len)``, rounded up to a whole nano."""
    k = exponent - frac_len + 9
    sig = digits.lstrip("0")
    if not sig:
        return 0
    if k >= 0:
        if len(sig) + k > _MAX_NANO_EXPONENT:
            raise QuantityError(text, _ERR_RANGE, field)
        return int(sig) * int(10**k)
    if -k > len(sig):  # the whole number is below one nano: round up to 1n
        return 1
    q, r = divmod(int(sig), int(10**-k))
    return q + (1 if r else 0)


def _parse_text(text: str, field: str) -> int:
    """Parse ``text`` (already stripped) into a signed nano count."""
    if not text:
        raise QuantityError(text, ERR_FORMAT_WRONG, field)
    m = _SCAN.fullmatch(text)
    if m is None:
        raise QuantityError(text, ERR_FORMAT_WRONG, field)
    sign, whole, frac, suffix = m.groups()
    if frac is None:
        frac = ""
    base_exp = _SUFFIXES.get(suffix)
    if base_exp is None:
        # decimal exponent: "e"/"E" followed by a signed integer (Go strconv.ParseInt)
        if len(suffix) < 2 or suffix[0] not in "eE":
            raise QuantityError(text, ERR_SUFFIX, field)
        exp_text = suffix[1:]
        body = exp_text[1:] if exp_text[0] in "+-" else exp_text
        if not body.isdigit():
            raise QuantityError(text, ERR_SUFFIX, field)
        if len(body) > 30:
            raise QuantityError(text, _ERR_RANGE, field)
        exponent = int(exp_text)
        if not -(1 << 31) <= exponent < (1 << 31):
            raise QuantityError(text, _ERR_RANGE, field)
        base = 10
    else:
        base, exponent = base_exp
    if len(whole) + len(frac) > _MAX_DIGITS:
        raise QuantityError(text, _ERR_RANGE, field)

    if base == 10:
        # Upstream's arbitrary-precision path (taken below one nano) needs a digit.
        if not whole and not frac and exponent < -9:
            raise QuantityError(text, ERR_NUMERIC, field)
        # Upstream's int64 fast path (at most 19 significant digits, no sub-nano scale)
        # rejects a digit string that overflows int64 instead of falling back.
        num_len = len(whole.lstrip("0")) or 1
        if (
            num_len + len(frac) <= 19
            and exponent - len(frac) >= -9
            and int((whole.lstrip("0") or "0") + frac) > INT64_MAX
        ):
            raise QuantityError(text, ERR_NUMERIC, field)
        nanos = _decimal_nanos(whole + frac, len(frac), exponent, text, field)
    else:
        mantissa = int(whole + frac) if (whole or frac) else 0
        numerator = mantissa * (1 << exponent) * NANOS_PER_UNIT
        nanos = -(-numerator // 10 ** len(frac))
        if nanos > _BINARY_CAP_NANOS:
            nanos = _BINARY_CAP_NANOS
    return -nanos if sign == "-" else nanos


_CACHE: dict[str, Quantity] = {}
_CACHE_LIMIT: Final = 1 << 16


def parse_quantity(text: str | int | float, field: str = "") -> Quantity:
    """Parse a quantity as the API server's JSON decoder does.

    Args:
        text: a JSON string (the normal case) or a JSON number.
        field: JSON path of the value, used in the error message.

    Raises:
        QuantityError: the text is not a valid quantity; it names the text and field.
    """
    if type(text) is str:
        q = _CACHE.get(text)
        if q is not None:
            return q
        q = Quantity(_parse_text(text.strip(), field))
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[text] = q
        return q
    return Quantity(_parse_text(_number_text(text, field), field))


def parse_quantity_nanos(text: object, field: str = "") -> int:
    """Like :func:`parse_quantity` but return the nano count; the hot path for parsers."""
    if type(text) is str:
        q = _CACHE.get(text)
        if q is not None:
            return q._nanos
        return parse_quantity(text, field)._nanos
    return _parse_text(_number_text(text, field), field)


def _number_text(value: object, field: str) -> str:
    """The text of a JSON number, or a QuantityError for anything else."""
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if math.isfinite(value):
            return repr(value)
        raise QuantityError(repr(value), ERR_FORMAT_WRONG, field)
    if isinstance(value, str):  # str subclass
        return str(value).strip()
    kind = "null" if value is None else type(value).__name__
    raise QuantityError(repr(value), f"a quantity must be a string or a number, got {kind}", field)
