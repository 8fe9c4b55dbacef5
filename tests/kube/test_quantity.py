import re
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.quantity import (
    QuantityError,
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
