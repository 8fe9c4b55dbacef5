import re
from decimal import ROUND_UP, Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.quantity import (
    QuantityError,
    canonical_quantity,
    json_error,
    parse_quantity,
    quantity_value,
    resource_value,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Decimal(1)),
        ("100m", Decimal("0.1")),
        ("1.5", Decimal("1.5")),
        ("1Ki", Decimal(1024)),
        ("1Mi", Decimal(1024**2)),
        ("2Gi", Decimal(2 * 1024**3)),
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1E", Decimal(10**18)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("500u", Decimal("0.0005")),
        ("+2", Decimal(2)),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
    ],
)
def test_parses_the_apimachinery_grammar(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1 Gi", " 1", "NaN", "Infinity", "1_000", "1.2.3", "Mi", "1Gb"],
)
def test_rejects_what_kube_apiserver_rejects(text: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["1ki", "32MMi", "1K", "1e", "2Mi5", "0.5iE", "--1", "K"])
def test_a_number_with_suffix_letters_kube_does_not_know_is_errsuffix(text: str) -> None:
    """apimachinery's scanner reads these (digits, then letters of eEinumkKMGTP, a signed
    exponent) and only then fails to interpret the suffix: ``ErrSuffix``."""
    with pytest.raises(QuantityError, match=r"^unable to parse quantity's suffix$"):
        parse_quantity(text)


def test_json_error_is_what_unmarshaljson_says() -> None:
    assert json_error(None) is None
    assert json_error(2) is None
    assert json_error(0.5) is None
    assert json_error("100m") is None
    assert json_error("1ki") == "unable to parse quantity's suffix"
    for bad in (True, [1], {"n": 1}, "abc", float("inf")):
        assert json_error(bad) == (
            "quantities must match the regular expression"
            " '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )


def test_numbers_are_quantities_but_booleans_and_nan_are_not() -> None:
    assert parse_quantity(3) == 3
    assert parse_quantity(0.25) == Decimal("0.25")
    for bad in (True, float("nan"), float("inf"), None, [1]):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


def test_integer_values_round_up_like_quantity_value() -> None:
    assert quantity_value("1.1") == 2
    assert quantity_value("100m") == 1
    assert quantity_value("100m", milli=True) == 100
    assert quantity_value("1.0001m", milli=True) == 2
    assert resource_value("cpu", "900m") == 900
    assert resource_value("cpu", 2) == 2000
    assert resource_value("memory", "1Gi") == 1024**3
    assert resource_value("nvidia.com/gpu", "2") == 2


# --- the library parser, for comparison -------------------------------------------------------
# Our parser replaces kubernetes-asyncio's ``parse_quantity`` (slow to import, and lenient);
# on every string the apimachinery grammar accepts, both must give the same value.

_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=12)
_SUFFIXES = st.sampled_from(
    ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
)


@st.composite
def quantities(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(_DIGITS)
    frac = draw(st.one_of(st.just(""), _DIGITS.map(lambda d: "." + d)))
    if draw(st.booleans()):
        exp = draw(st.integers(min_value=-20, max_value=20))
        suffix = f"{draw(st.sampled_from(['e', 'E']))}{exp}"
    else:
        suffix = draw(_SUFFIXES)
    return f"{sign}{whole}{frac}{suffix}"


def _library_parse() -> Any:
    try:
        from kubernetes_asyncio.utils.quantity import (  # type: ignore[import-not-found,unused-ignore]
            parse_quantity as library,
        )
    except ImportError:  # pragma: no cover - depends on the installed client
        from kubernetes.utils.quantity import parse_quantity as library
    return library


@settings(max_examples=400, deadline=None)
@given(quantities())
def test_agrees_with_the_client_librarys_parser(text: str) -> None:
    library = _library_parse()
    with localcontext() as ctx:
        ctx.prec = 60  # the library computes in the ambient context: give it room
        expected = library(text)
    assert parse_quantity(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.+-eEKMGTPikmnu_ xN", max_size=8))
def test_accepts_no_more_than_the_library_and_no_less_on_grammar_strings(text: str) -> None:
    library = _library_parse()
    try:
        ours = parse_quantity(text)
    except QuantityError:
        return  # stricter than the library is intended ("1_000", " 1", "NaN")
    with localcontext() as ctx:
        ctx.prec = 60
        assert library(text) == ours


@given(quantities())
def test_value_rounds_up(text: str) -> None:
    exact = parse_quantity(text)
    value = quantity_value(text)
    assert value >= exact or value == 2**63 - 1
    assert value - exact < 1 or value == -(2**63)


_KNOWN_SUFFIXES = {
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
}


def _apimachinery_verdict(text: str) -> str:
    """parseQuantityString and the suffix lookup of ParseQuantity, step by step: "format",
    "suffix" or "ok" (with the number scanned)."""
    if not text:
        return "format"
    pos, end = 0, len(text)
    if text[0] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit():
        pos += 1
    if pos < end and text[pos] == ".":
        pos += 1
        while pos < end and text[pos].isdigit():
            pos += 1
    start = pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit():
        pos += 1
    if pos < end:
        return "format"
    suffix = text[start:]
    exponent = suffix[1:]
    if suffix in _KNOWN_SUFFIXES or (
        len(suffix) > 1 and suffix[0] in "eE" and exponent.lstrip("+-").isdigit()
    ):
        return "ok"
    return "suffix"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789.+-eEKMGTPikmnuxB ", max_size=7))
def test_refusals_name_the_error_apimachinery_gives(text: str) -> None:
    verdict = _apimachinery_verdict(text)
    try:
        parse_quantity(text)
    except QuantityError as exc:
        if str(exc) == "unable to parse numeric part of quantity":
            return
        if verdict == "ok":
            # Numbers without a digit that apimachinery reads as zero ("m", ".", "e5") are
            # refused here, as the grammar's ErrFormatWrong.
            number = re.match(r"[+-]?[0-9]*(\.[0-9]*)?", text)
            assert number is not None
            assert not any(c.isdigit() for c in number[0])
            assert "regular expression" in str(exc)
        else:
            expected = "unable to parse quantity's suffix" if verdict == "suffix" else "regular"
            assert expected in str(exc)
    else:
        assert verdict == "ok"


# --- what kube-apiserver stores: UnmarshalJSON, then String() --------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        # canonical form: no fraction, the largest suffix that keeps every digit
        ("1000m", "1"),
        ("1.5", "1500m"),
        (0.5, "500m"),
        (2, "2"),
        (-1, "-1"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("307200Ki", "300Mi"),
        ("1000M", "1G"),
        ("1080000000n", "1080m"),
        ("1.08", "1080m"),
        (".001e12", "1e9"),
        ("1000e-12", "1e-9"),
        # a binary amount under 1024 or with a fraction is written in decimal
        (".001Ki", "1024m"),
        ("1.1Ki", "1126400m"),
        ("0.5Ki", "512"),
        # rounded up to a nano, binary capped at 2^63-1
        ("0.1n", "1n"),
        ("3.001n", "4n"),
        ("1.1E-9", "2e-9"),
        (".000000000001Ki", "2n"),
        ("9Ei", "9223372036854775807"),
        # zero, null and white space (UnmarshalJSON trims it; ParseQuantity alone would not)
        (None, "0"),
        ("00", "0"),
        ("0Gi", "0"),
        ("-0", "0"),
        (" 1", "1"),
        ("1Gi \n", "1Gi"),
        # already canonical in apimachinery's eyes: kept as written
        ("100m", "100m"),
        ("+1Ki", "+1Ki"),
        ("1E3", "1E3"),
        ("100.035k", "100.035k"),
        # past the largest decimal suffix, apimachinery prints no suffix at all
        ("1000E", "1"),
    ],
)
def test_stored_form_is_what_kube_apiserver_writes_back(given: object, stored: str) -> None:
    assert canonical_quantity(given) == stored


def test_what_does_not_decode_has_no_stored_form() -> None:
    for bad in ("abc", "1ki", True, [1], float("nan")):
        with pytest.raises(QuantityError) as exc:
            canonical_quantity(bad)
        assert str(exc.value) == json_error(bad)


_NANO = Decimal("1e-9")


def _rounded_to_nano(value: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 80
        if value.as_tuple().exponent < -9:  # type: ignore[operator]
            return value.quantize(_NANO, rounding=ROUND_UP)
        return value


@settings(max_examples=300, deadline=None)
@given(quantities())
def test_stored_form_keeps_the_value_and_is_stored_as_is(text: str) -> None:
    """The stored string means the amount given (rounded up to a nano; binary amounts capped
    at 2^63-1), and storing it again changes nothing."""
    stored = canonical_quantity(text)
    expected = _rounded_to_nano(parse_quantity(text))
    if re.search(r"[KMGTPE]i$", text) and abs(expected) > 2**63 - 1:
        expected = Decimal(2**63 - 1).copy_sign(expected)
    decimal_si = not re.search(r"[KMGTPE]i$|[eE][+-]?[0-9]+$", text)
    lost_its_suffix = decimal_si and abs(expected) >= 10**21 and stored[-1].isdigit()
    if not lost_its_suffix:  # apimachinery's own loss past "E": see the table above
        assert parse_quantity(stored) == expected, stored
    assert canonical_quantity(stored) == stored
    assert canonical_quantity(f" {text}\t") == stored
