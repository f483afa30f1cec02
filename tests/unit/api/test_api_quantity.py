"""Quantity parsing and rounding, table-driven against apimachinery semantics."""

from __future__ import annotations

import pickle

import pytest

from ksched.api.errors import QuantityError
from ksched.api.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    INT64_MAX,
    INT64_MIN,
    Quantity,
    parse_quantity,
    parse_quantity_nanos,
)

G = 1_000_000_000  # nanos per unit

# (text, exact nanos, value(), milli_value())
PARSE_CASES = [
    ("zero", "0", 0, 0, 0),
    ("plain-integer", "1", G, 1, 1000),
    ("milli", "100m", 100_000_000, 1, 100),
    ("micro", "5u", 5000, 1, 1),
    ("nano", "1n", 1, 1, 1),
    ("kilo", "2k", 2000 * G, 2000, 2_000_000),
    ("mega", "3M", 3 * 10**6 * G, 3_000_000, 3_000_000_000),
    ("giga", "1G", 10**9 * G, 10**9, 10**12),
    ("tera", "1T", 10**12 * G, 10**12, 10**15),
    ("peta", "1P", 10**15 * G, 10**15, 10**18),
    ("exa", "1E", 10**18 * G, 10**18, INT64_MAX),
    ("kibi", "1Ki", 1024 * G, 1024, 1_024_000),
    ("mebi", "128Mi", 128 * 2**20 * G, 128 * 2**20, 128 * 2**20 * 1000),
    ("gibi-fraction", "1.5Gi", 3 * 2**29 * G, 3 * 2**29, 3 * 2**29 * 1000),
    ("tebi", "1Ti", 2**40 * G, 2**40, 2**40 * 1000),
    ("pebi", "1Pi", 2**50 * G, 2**50, 2**50 * 1000),
    ("exbi", "1Ei", 2**60 * G, 2**60, INT64_MAX),
    ("binary-below-one", "0.0001Ki", 102_400_000, 1, 103),
    ("decimal-fraction", "1.5", 1_500_000_000, 2, 1500),
    ("fraction-of-milli", "0.5m", 500_000, 1, 1),
    ("leading-dot", ".5", 500_000_000, 1, 500),
    ("trailing-dot", "5.", 5 * G, 5, 5000),
    ("plus-sign", "+1", G, 1, 1000),
    ("exponent", "1e3", 1000 * G, 1000, 1_000_000),
    ("exponent-upper-negative", "1E-3", 1_000_000, 1, 1),
    ("exponent-explicit-plus", "2e+6", 2 * 10**6 * G, 2_000_000, 2_000_000_000),
    ("exponent-with-fraction", "1.5e3", 1500 * G, 1500, 1_500_000),
    ("exponent-zero", "7e0", 7 * G, 7, 7000),
    ("sub-nano-rounds-up", "0.1n", 1, 1, 1),
    ("far-below-nano-rounds-up", "1e-30", 1, 1, 1),
    ("below-nano-exponent", "15e-10", 2, 1, 1),
    ("leading-zeros", "007", 7 * G, 7, 7000),
    ("negative", "-1.5", -1_500_000_000, -2, -1500),
    ("negative-milli", "-100m", -100_000_000, -1, -100),
    ("negative-sub-milli", "-0.1m", -100_000, -1, -1),
    ("negative-sub-nano", "-0.1n", -1, -1, -1),
    ("negative-zero", "-0", 0, 0, 0),
    ("sign-only", "+", 0, 0, 0),
    ("dot-only", ".", 0, 0, 0),
    ("suffix-only", "Mi", 0, 0, 0),
    ("surrounding-whitespace", " 100m ", 100_000_000, 1, 100),
    ("20-digit-number", "99999999999999999999", 99999999999999999999 * G, INT64_MAX, INT64_MAX),
    ("decimal-not-capped", "10E", 10**19 * G, INT64_MAX, INT64_MAX),
    ("binary-capped", "8Ei", INT64_MAX * G, INT64_MAX, INT64_MAX),
    ("negative-binary-capped", "-16Ei", -INT64_MAX * G, -INT64_MAX, INT64_MIN),
]


@pytest.mark.parametrize(
    ("text", "nanos", "value", "milli"),
    [c[1:] for c in PARSE_CASES],
    ids=[c[0] for c in PARSE_CASES],
)
def test_parse(text: str, nanos: int, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert q.nanos == nanos
    assert q.value() == value
    assert q.milli_value() == milli
    assert parse_quantity_nanos(text) == nanos


JSON_NUMBER_CASES = [
    ("int", 5, 5 * G),
    ("negative-int", -3, -3 * G),
    ("float", 0.5, 500_000_000),
    ("float-exponent", 1e-7, 100),
    ("float-large", 1e16, 10**16 * G),
]


@pytest.mark.parametrize(
    ("value", "nanos"), [c[1:] for c in JSON_NUMBER_CASES], ids=[c[0] for c in JSON_NUMBER_CASES]
)
def test_json_numbers_are_accepted(value: int | float, nanos: int) -> None:
    assert parse_quantity(value).nanos == nanos
    assert parse_quantity_nanos(value) == nanos


ERROR_CASES = [
    ("unknown-suffix-char", "12x", ERR_FORMAT_WRONG),
    ("empty", "", ERR_FORMAT_WRONG),
    ("blank", "   ", ERR_FORMAT_WRONG),
    ("two-dots", "1.5.5", ERR_FORMAT_WRONG),
    ("bytes-suffix", "1KiB", ERR_FORMAT_WRONG),
    ("inner-space", "1 Mi", ERR_FORMAT_WRONG),
    ("exponent-with-fraction", "1e3.5", ERR_FORMAT_WRONG),
    ("uppercase-kilo", "1K", ERR_SUFFIX),
    ("lowercase-mebi", "1mi", ERR_SUFFIX),
    ("dangling-exponent", "1e", ERR_SUFFIX),
    ("exponent-sign-only", "1e-", ERR_SUFFIX),
    ("double-exponent", "1Ee3", ERR_SUFFIX),
    ("double-sign", "--1", ERR_SUFFIX),
    ("mixed-suffix", "1Mm", ERR_SUFFIX),
    ("int64-overflow-fast-path", "9999999999999999999", ERR_NUMERIC),
    ("no-digits-below-nano", "e-10", ERR_NUMERIC),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_parse_errors_name_text_and_field(text: str, message: str) -> None:
    field = "spec.containers[0].resources.requests.cpu"
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, field)
    err = info.value
    assert err.text == text.strip() or err.text == text
    assert err.message == message
    assert err.field == field
    assert str(err).startswith(f"{field}: {message} (got ")
    with pytest.raises(QuantityError):
        parse_quantity_nanos(text, field)


BAD_TYPE_CASES = [
    ("bool", True),
    ("null", None),
    ("list", [1]),
    ("nan", float("nan")),
    ("infinity", float("inf")),
]


@pytest.mark.parametrize(
    "value", [c[1] for c in BAD_TYPE_CASES], ids=[c[0] for c in BAD_TYPE_CASES]
)
def test_non_quantity_types_are_rejected(value: object) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(value, "spec.overhead.cpu")  # type: ignore[arg-type]
    assert info.value.field == "spec.overhead.cpu"


@pytest.mark.parametrize(
    "text", ["1e99999999999", "1e4000", "1" * 1001], ids=["huge-exponent", "beyond-1e1000", "long"]
)
def test_out_of_range_is_an_error_not_a_hang(text: str) -> None:
    with pytest.raises(QuantityError, match="outside the supported range"):
        parse_quantity(text)


def test_error_without_field() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("12x")
    assert str(info.value) == f'{ERR_FORMAT_WRONG} (got "12x")'


def test_error_is_picklable() -> None:
    err = QuantityError("12x", ERR_FORMAT_WRONG, "a.b")
    again = pickle.loads(pickle.dumps(err))
    assert (again.text, again.message, again.field) == ("12x", ERR_FORMAT_WRONG, "a.b")


def test_errors_are_not_cached_with_the_wrong_field() -> None:
    for field in ("a", "b"):
        with pytest.raises(QuantityError) as info:
            parse_quantity("bad", field)
        assert info.value.field == field


ORDER_CASES = [
    ("milli-vs-unit", "999m", "1"),
    ("binary-vs-decimal", "1k", "1Ki"),
    ("negative-vs-zero", "-1n", "0"),
    ("exponent-vs-suffix", "1e2", "101"),
    ("nano-vs-micro", "999n", "1u"),
]


@pytest.mark.parametrize(
    ("smaller", "larger"), [c[1:] for c in ORDER_CASES], ids=[c[0] for c in ORDER_CASES]
)
def test_ordering(smaller: str, larger: str) -> None:
    a, b = parse_quantity(smaller), parse_quantity(larger)
    assert a < b and a <= b and b > a and b >= a and a != b


EQUAL_CASES = [
    ("milli-unit", "1000m", "1"),
    ("exponent-kilo", "1e3", "1k"),
    ("binary-decimal-digits", "1Ki", "1024"),
    ("fraction-binary", "0.5Ki", "512"),
    ("trailing-zeros", "1.50", "1500m"),
]


@pytest.mark.parametrize(("a", "b"), [c[1:] for c in EQUAL_CASES], ids=[c[0] for c in EQUAL_CASES])
def test_equal_values_compare_and_hash_equal(a: str, b: str) -> None:
    qa, qb = parse_quantity(a), parse_quantity(b)
    assert qa == qb
    assert hash(qa) == hash(qb)


STR_CASES = [
    ("zero", "0", "0"),
    ("milli", "1.5", "1500m"),
    ("kilo", "2000", "2k"),
    ("binary-as-decimal", "1Ki", "1024"),
    ("nano", "0.1n", "1n"),
    ("negative", "-2M", "-2M"),
    ("beyond-exa", "1e21", "1000E"),
]


@pytest.mark.parametrize(
    ("text", "canonical"), [c[1:] for c in STR_CASES], ids=[c[0] for c in STR_CASES]
)
def test_canonical_string(text: str, canonical: str) -> None:
    q = parse_quantity(text)
    assert str(q) == canonical
    assert repr(q) == f"Quantity({canonical!r})"
    assert parse_quantity(str(q)) == q


def test_arithmetic_and_helpers() -> None:
    a, b = parse_quantity("1.5"), parse_quantity("500m")
    assert (a + b).value() == 2
    assert (a - b) == parse_quantity("1")
    assert (-a).sign() == -1 and Quantity(0).sign() == 0 and a.sign() == 1
    assert Quantity(0).is_zero() and not Quantity(0)
    assert a.as_fraction().numerator == 3 and a.as_fraction().denominator == 2
    assert a != "1.5"
