"""Property tests: quantities are exact, round-trip through every suffix, order exactly.

Expected values are computed independently with :class:`fractions.Fraction`: the exact
value of the text, rounded away from zero to a whole nano (upstream's parse rounding).
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from ksched.api.errors import QuantityError
from ksched.api.quantity import ERR_NUMERIC, INT64_MAX, INT64_MIN, Quantity, parse_quantity

DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50}
NANO = Fraction(1, 10**9)


def round_away(x: Fraction) -> int:
    """Round away from zero to an integer."""
    n = -(-abs(x.numerator) // x.denominator)
    return n if x >= 0 else -n


def clamp(v: int) -> int:
    return max(INT64_MIN, min(INT64_MAX, v))


def parse_or_quirk(text: str) -> Quantity | None:
    """Parse, or return None where upstream's int64 fast path rejects the digits.

    apimachinery parses a decimal number of at most 19 significant digits (and no
    sub-nano scale) with ``strconv.ParseInt`` and reports "unable to parse numeric part"
    when it overflows int64; ksched keeps that behaviour.
    """
    try:
        return parse_quantity(text)
    except QuantityError as err:
        assert err.message == ERR_NUMERIC, text
        digits = text.lstrip("+-").split("e")[0].split("E")[0].rstrip("numkMGTP")
        significant = digits.replace(".", "").lstrip("0") or "0"
        assert len(significant) <= 19 and int(significant) > INT64_MAX, text
        return None


def decimal_text(value: Fraction) -> str:
    """Exact decimal text of a value whose denominator divides a power of ten."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    digits = 0
    while (value * 10**digits).denominator != 1:
        digits += 1
    scaled = int(value * 10**digits)
    whole, frac = divmod(scaled, 10**digits) if digits else (scaled, 0)
    return f"{sign}{whole}" + (f".{frac:0{digits}d}" if digits else "")


nanos_values = st.integers(min_value=-(10**24), max_value=10**24)


@given(nanos=nanos_values, suffix=st.sampled_from(sorted(DECIMAL_SUFFIXES)))
def test_decimal_suffix_round_trip(nanos: int, suffix: str) -> None:
    q = parse_or_quirk(with_suffix(nanos, suffix))
    assert q is None or q.nanos == nanos


@given(nanos=nanos_values, exponent=st.integers(min_value=-12, max_value=12), upper=st.booleans())
def test_exponent_round_trip(nanos: int, exponent: int, upper: bool) -> None:
    value = Fraction(nanos, 10**9)
    mark = "E" if upper else "e"
    text = f"{decimal_text(value / Fraction(10) ** exponent)}{mark}{exponent:+d}"
    q = parse_or_quirk(text)
    assert q is None or q.nanos == nanos


@given(
    mantissa=st.integers(min_value=-(10**12), max_value=10**12),
    frac_digits=st.integers(min_value=0, max_value=12),
    suffix=st.sampled_from(sorted(BINARY_SUFFIXES)),
)
def test_binary_suffix_is_exact(mantissa: int, frac_digits: int, suffix: str) -> None:
    value = Fraction(mantissa, 10**frac_digits)
    text = decimal_text(value) + suffix
    exact = value * 2 ** BINARY_SUFFIXES[suffix]
    expected = round_away(exact / NANO)
    cap = INT64_MAX * 10**9
    expected = max(-cap, min(cap, expected))
    assert parse_quantity(text).nanos == expected


@given(
    mantissa=st.integers(min_value=-(10**20), max_value=10**20),
    frac_digits=st.integers(min_value=0, max_value=15),
    exponent=st.integers(min_value=-20, max_value=20),
)
def test_value_and_milli_value_round_away_from_zero(
    mantissa: int, frac_digits: int, exponent: int
) -> None:
    value = Fraction(mantissa, 10**frac_digits) * Fraction(10) ** exponent
    text = f"{decimal_text(Fraction(mantissa, 10**frac_digits))}e{exponent}"
    q = parse_or_quirk(text)
    if q is None:
        return
    nanos = round_away(value / NANO)
    assert q.nanos == nanos
    assert q.value() == clamp(round_away(Fraction(nanos, 10**9)))
    assert q.milli_value() == clamp(round_away(Fraction(nanos, 10**6)))


def with_suffix(nanos: int, suffix: str) -> str:
    """The exact text of ``nanos`` nano-units written with a decimal ``suffix``."""
    return decimal_text(Fraction(nanos, 10**9) / Fraction(10) ** DECIMAL_SUFFIXES[suffix]) + suffix


suffixes = st.sampled_from(["n", "u", "m", "", "k", "M", "G"])


@given(a=nanos_values, b=nanos_values, sa=suffixes, sb=suffixes)
def test_ordering_matches_exact_values(a: int, b: int, sa: str, sb: str) -> None:
    qa = parse_or_quirk(with_suffix(a, sa))
    qb = parse_or_quirk(with_suffix(b, sb))
    if qa is None or qb is None:
        return
    assert (qa < qb) == (a < b)
    assert (qa == qb) == (a == b)
    assert (qa > qb) == (a > b)


@given(nanos=nanos_values)
def test_canonical_string_round_trips(nanos: int) -> None:
    q = parse_or_quirk(decimal_text(Fraction(nanos, 10**9)))
    if q is not None:
        again = parse_or_quirk(str(q))
        assert again is None or again == q
