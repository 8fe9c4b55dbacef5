from decimal import Decimal

import pytest

from scheduler.quantity import QuantityError, parse_quantity, quantity_value, resource_value


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
    ["", "abc", "1ki", "1 Gi", " 1", "NaN", "Infinity", "1_000", "1.2.3", "Mi", "1Gb", "--1"],
)
def test_rejects_what_kube_apiserver_rejects(text: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity(text)


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
