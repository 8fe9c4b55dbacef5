"""Quantities as the kubelet prints them in eviction messages.

The kubelet formats every number in an eviction message with ``resource.Quantity.String()``: the
canonical form of the quantity's own format. Byte counts it creates itself are ``BinarySI``
(``1536Mi``, and plain digits when not a whole multiple of 1024, e.g. ``209715203``); inode and
PID counts are ``DecimalSI`` (``20k``, ``500``); a threshold keeps the format it was written in
(``1G`` stays ``1G``, ``1e3`` stays ``1e3``). Only integers occur here: every eviction quantity is
a whole number of bytes, inodes or processes (``Value()`` rounds fractions up).
"""

from __future__ import annotations

import math
import re
from typing import Final, Literal

from kube.quantity import QuantityError, parse_quantity

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "QuantityFormat",
    "format_quantity",
    "parse_quantity_with_format",
    "quantity_format_of",
]

QuantityFormat = Literal["BinarySI", "DecimalSI", "DecimalExponent"]
BINARY_SI: Final[QuantityFormat] = "BinarySI"
DECIMAL_SI: Final[QuantityFormat] = "DecimalSI"
DECIMAL_EXPONENT: Final[QuantityFormat] = "DecimalExponent"

_BINARY_SUFFIXES: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES: Final = {0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_SUFFIX: Final = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E)?$")


def quantity_format_of(text: str) -> QuantityFormat:
    """The format ``resource.ParseQuantity`` records for ``text`` (decided by its suffix)."""
    match = _SUFFIX.search(text)
    suffix = match.group(1) if match else None
    if suffix and suffix.endswith("i"):
        return BINARY_SI
    if suffix and suffix[0] in "eE" and len(suffix) > 1:
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def parse_quantity_with_format(text: str) -> tuple[int, QuantityFormat]:
    """``resource.ParseQuantity(text).Value()`` (rounded up) and the format of ``text``.

    Raises ``QuantityError`` for anything kube-apiserver would not accept as a quantity.
    """
    exact = parse_quantity(text)
    if not exact.is_finite():  # pragma: no cover - the grammar rules these out
        raise QuantityError(f"{text!r} is not a quantity")
    return math.ceil(exact), quantity_format_of(text)


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    negative = value < 0
    result = -value if negative else value
    times = 0
    while result >= base and result % base == 0:
        times += 1
        result //= base
    return (-result if negative else result), times


def format_quantity(value: int, fmt: QuantityFormat = BINARY_SI) -> str:
    """``Quantity.String()`` of an integer quantity in format ``fmt``."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and -1024 < value < 1024:
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        mantissa, exponent = _remove_factors(value, 1024)
        return f"{mantissa}{_BINARY_SUFFIXES[exponent]}"
    mantissa, exponent = _remove_factors(value, 10)
    extra = exponent % 3
    mantissa *= 10**extra
    exponent -= extra
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"


def format_request(value: int) -> str:
    """A container request as the API server would print it back.

    ``kube.objects`` keeps requests as integers, so the suffix the manifest used is lost. We
    print the shorter canonical form (``128M`` rather than ``125000Ki``; ``1Gi`` rather than
    ``1073741824``), decimal on a tie — which is what a manifest written with the natural suffix
    gives back.
    """
    binary = format_quantity(value, BINARY_SI)
    decimal = format_quantity(value, DECIMAL_SI)
    return binary if len(binary) < len(decimal) else decimal
