"""Signals, threshold values, float32 percentages and the kubelet's quantity printing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.eviction.quantity import (
    format_quantity,
    format_request,
    parse_quantity_with_format,
    quantity_format_of,
)
from agent.eviction.thresholds import SIGNALS, ThresholdValue, float32, get_threshold_quantity

MI = 1024 * 1024


def test_signal_names_are_the_kubelets() -> None:
    assert SIGNALS == (
        "memory.available",
        "allocatableMemory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "pid.available",
    )


def test_percentage_resolves_with_float32_truncation() -> None:
    # float32(0.2) is 0.200000003; 20% of 1000Mi is therefore 3 bytes more than the exact value.
    value = ThresholdValue(percentage=float32(float32(20.0) / 100))
    assert get_threshold_quantity(value, 1000 * MI) == 209715203


def test_quantity_wins_over_capacity() -> None:
    assert get_threshold_quantity(ThresholdValue(quantity=100 * MI), 1) == 100 * MI


def test_percentage_truncates_toward_zero() -> None:
    value = ThresholdValue(percentage=float32(0.5))
    assert get_threshold_quantity(value, 3) == 1


@pytest.mark.parametrize(
    ("value", "fmt", "text"),
    [
        (0, "BinarySI", "0"),
        (1536 * MI, "BinarySI", "1536Mi"),
        (2 * 1024 * MI, "BinarySI", "2Gi"),
        (209715203, "BinarySI", "209715203"),
        (1023, "BinarySI", "1023"),
        (1024, "BinarySI", "1Ki"),
        (-100 * MI, "BinarySI", "-100Mi"),
        (500, "DecimalSI", "500"),
        (1000, "DecimalSI", "1k"),
        (20000, "DecimalSI", "20k"),
        (1500, "DecimalSI", "1500"),
        (10**9, "DecimalSI", "1G"),
        (1000, "DecimalExponent", "1e3"),
        (1500, "DecimalExponent", "1500"),
    ],
)
def test_format_quantity_canonical(value: int, fmt: str, text: str) -> None:
    assert format_quantity(value, fmt) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value", "fmt"),
    [
        ("100Mi", 100 * MI, "BinarySI"),
        ("1.5Gi", 1536 * MI, "BinarySI"),
        ("1G", 10**9, "DecimalSI"),
        ("1200", 1200, "DecimalSI"),
        ("1e3", 1000, "DecimalExponent"),
        ("1E", 10**18, "DecimalSI"),
        ("0.5", 1, "DecimalSI"),
    ],
)
def test_parse_quantity_with_format(text: str, value: int, fmt: str) -> None:
    assert parse_quantity_with_format(text) == (value, fmt)
    assert quantity_format_of(text) == fmt


def test_format_request_prefers_the_natural_suffix() -> None:
    assert format_request(128 * 10**6) == "128M"
    assert format_request(GI := 1024 * MI) == "1Gi"
    assert GI
    assert format_request(0) == "0"


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_binary_format_round_trips(value: int) -> None:
    text = format_quantity(value, "BinarySI")
    assert parse_quantity_with_format(text)[0] == value


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_decimal_format_round_trips(value: int) -> None:
    text = format_quantity(value, "DecimalSI")
    assert parse_quantity_with_format(text)[0] == value
