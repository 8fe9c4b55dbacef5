"""Kubernetes resource quantities as the scheduler counts them
(``k8s.io/apimachinery/pkg/api/resource/quantity.go``), exact ``decimal.Decimal`` values.

Integer forms follow ``resource.Quantity``: CPU is counted in millicores (``MilliValue``),
everything else in whole units (``Value``); both round up, as apimachinery does.
"""

from __future__ import annotations

import decimal
import math
import re
from decimal import Decimal
from functools import lru_cache
from typing import Final

from kube.ints import INT32_MAX, INT64_MAX

__all__ = [
    "CPU",
    "QuantityError",
    "canonical_quantity",
    "json_error",
    "parse_quantity",
    "quantity_value",
    "resource_value",
]

CPU: Final = "cpu"

# <signedNumber><suffix> from k8s.io/apimachinery/pkg/api/resource/quantity.go.
_GRAMMAR: Final = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)

_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# resource.ErrFormatWrong, word for word, so errors read like kube-apiserver's.
_UPSTREAM_MESSAGE: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
# resource.ErrNumeric: the exponent does not fit the integer apimachinery scales with.
_NUMERIC_MESSAGE: Final = "unable to parse numeric part of quantity"
# resource.ErrSuffix: what apimachinery's scanner takes for a suffix is none it knows ("1ki").
_SUFFIX_MESSAGE: Final = "unable to parse quantity's suffix"
# What apimachinery's scanner (parseQuantityString) reads without complaint: a signed number,
# then letters of the suffix alphabet and a signed exponent; only then is the suffix looked up.
_SCANNED: Final = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?[eEinumkKMGTP]*[+-]?[0-9]*")
_SCANNED_NUMBER: Final = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?")
_MAX_EXPONENT: Final = INT32_MAX
# What Go's strings.TrimSpace removes (unicode.IsSpace): UnmarshalJSON trims it from a quantity.
_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# Canonical suffixes by exponent: powers of 10 for DecimalSI, of 1024 for BinarySI.
_DECIMAL_SUFFIX: Final = {0: "", **{e: s for s, e in _DECIMAL.items()}}
_BINARY_SUFFIX: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO: Final = Decimal("1e-9")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        raise QuantityError(_rejection(text))
    number = match["number"]
    digits = len(number)
    # Exact arithmetic: enough precision for every digit of the number and of the multiplier.
    with decimal.localcontext() as ctx:
        ctx.prec = digits + 40
        ctx.Emax = decimal.MAX_EMAX
        ctx.Emin = decimal.MIN_EMIN
        ctx.traps[decimal.Inexact] = True
        value = Decimal(number)
        try:
            if match["binary"]:
                return value * (1 << _BINARY[match["binary"]])
            exponent = 0
            if match["decimal"]:
                exponent = _DECIMAL[match["decimal"]]
            elif match["exponent"] is not None:
                exponent = int(match["exponent"])
                if abs(exponent) > _MAX_EXPONENT:
                    raise QuantityError(_NUMERIC_MESSAGE)
            return value.scaleb(exponent)
        except decimal.DecimalException as exc:
            raise QuantityError(_NUMERIC_MESSAGE) from exc


def _rejection(text: str) -> str:
    """Which of apimachinery's errors a string outside the grammar gets.

    What the scanner reads but whose suffix is none it knows ("1ki", "K") is ``ErrSuffix``;
    anything else ``ErrFormatWrong``. (A number without digits and a known suffix, such as
    "m", "." or "e5", apimachinery reads as zero; it is refused here, as ``ErrFormatWrong``.)
    """
    number = _SCANNED_NUMBER.match(text)
    if text and number is not None and _SCANNED.fullmatch(text):
        known_suffix = _GRAMMAR.fullmatch("1" + text[number.end() :]) is not None
        if not known_suffix:
            return _SUFFIX_MESSAGE
    return _UPSTREAM_MESSAGE


def json_error(value: object) -> str | None:
    """The error ``resource.Quantity``'s ``UnmarshalJSON`` gives a decoded JSON value, or None.

    Go hands it any JSON value: ``null`` is a zero quantity, a string or a number is parsed,
    and anything else (``true``, an object, a list) fails the scanner (``ErrFormatWrong``).
    kube-apiserver answers such a body with a 400 at decoding.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return _UPSTREAM_MESSAGE
    if isinstance(value, float) and not math.isfinite(value):
        return _UPSTREAM_MESSAGE
    try:
        parse_quantity(value.strip(_GO_SPACE) if isinstance(value, str) else value)
    except QuantityError as exc:
        return str(exc)
    return None


def canonical_quantity(value: object) -> str:
    """What kube-apiserver stores for a quantity it decoded from ``value`` (a decoded JSON
    value): ``resource.Quantity``'s ``UnmarshalJSON`` (``null`` is zero, a string is trimmed of
    white space), then its ``String()``. Raises ``QuantityError`` where ``json_error`` has one.

    ``String()`` gives the canonical form in the format the text was written in (a binary
    suffix, a decimal one or none, an exponent): no fraction, the largest suffix that keeps
    every digit, the value first rounded up to a nano (``0.1n`` is ``1n``) and a binary amount
    capped at 2^63-1. A binary amount under 1024 or with a fraction is written in decimal
    (``0.5Ki`` is ``512``, ``1.5Gi`` is ``1536Mi``, ``1.1Ki`` is ``1126400m``). A text parsed on
    apimachinery's int64 fast path that is already canonical in its eyes is kept as written,
    so ``+1Ki`` and ``1E3`` stay as they are. Like apimachinery, a decimal amount past the
    largest suffix loses it (``1000E`` is ``1``).
    """
    if isinstance(value, str):  # the same few texts in every manifest: kept (errors are not)
        return _canonical_text(value)
    return _canonical(value)


@lru_cache(maxsize=4096)
def _canonical_text(text: str) -> str:
    return _canonical(text)


def _canonical(value: object) -> str:
    if (error := json_error(value)) is not None:
        raise QuantityError(error)
    if value is None:
        return "0"
    assert isinstance(value, str | int | float)  # what json_error lets through
    text = value.strip(_GO_SPACE) if isinstance(value, str) else repr(value)
    match = _GRAMMAR.fullmatch(text)
    assert match is not None
    amount = _parse_text(text)
    if text == "0" or _kept_as_written(match):
        return text
    binary = match["binary"] is not None
    exponent_form = match["exponent"] is not None
    with decimal.localcontext() as ctx:
        ctx.prec = len(text) + 40
        ctx.Emax = decimal.MAX_EMAX
        ctx.Emin = decimal.MIN_EMIN
        if amount and amount.as_tuple().exponent < -9:  # type: ignore[operator]
            amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP)
        if binary and abs(amount) > INT64_MAX:
            amount = Decimal(INT64_MAX).copy_sign(amount)
    if not amount:
        return "0"
    if binary and abs(amount) >= 1024 and amount == amount.to_integral_value():
        whole, power = int(amount), 0
        while abs(whole) >= 1024 and whole % 1024 == 0:
            whole //= 1024
            power += 1
        return f"{whole}{_BINARY_SUFFIX[power]}"
    sign, digits, exponent = amount.as_tuple()
    mantissa = int("".join(map(str, digits)))
    exponent = int(exponent)
    while mantissa >= 10 and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    number = f"{'-' if sign else ''}{mantissa}"
    if exponent_form:
        return f"{number}e{exponent}" if exponent else number
    return number + _DECIMAL_SUFFIX.get(exponent, "")


def _kept_as_written(match: re.Match[str]) -> bool:
    """Whether apimachinery's ``ParseQuantity`` keeps the text itself as the quantity's string:
    its int64 fast path, when the digits are already in canonical form."""
    whole, _, fraction = match["number"].lstrip("+-").partition(".")
    num = whole.lstrip("0") or "0"
    if match["binary"] is not None:
        power = _BINARY[match["binary"]]
        if fraction or 15 - len(num) - power * 3 // 10 - 1 < 0:
            return False
        value = int(num)
        return value << power <= INT64_MAX and value & 7 != 0
    if match["decimal"] is not None:
        exponent = _DECIMAL[match["decimal"]]
    elif match["exponent"] is not None:
        exponent = int(match["exponent"])
    else:
        exponent = 0
    shifted = num + fraction
    if 18 - len(shifted) < 0 or exponent - len(fraction) < -9:
        return False
    return (exponent - len(fraction)) % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity given as a string or a number.

    The grammar is apimachinery's: ``<signedNumber><suffix>`` where the suffix is a binary SI one
    (``Ki`` … ``Ei``), a decimal SI one (``n u m "" k M G T P E``) or a decimal exponent (``e3``,
    ``E-2``). We keep our own parser rather than the client library's ``parse_quantity`` for two
    reasons: the library builds on ``Decimal()`` and so accepts strings kube-apiserver rejects
    ("NaN", "Infinity", "1_000", " 1"), and importing it pulls in the whole kubernetes-asyncio
    client (about 0.8 s), which every command would pay at start-up. A property test checks that
    both agree on every string the grammar accepts.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | Decimal):
        if isinstance(value, Decimal) and not value.is_finite():
            raise QuantityError(f"{value!r} is not a quantity")
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        return Decimal(str(value))
    if isinstance(value, str):
        return _parse_text(value)
    raise QuantityError(f"{value!r} is not a quantity")


def quantity_value(value: object, *, milli: bool = False) -> int:
    """``Quantity.Value()`` (or ``MilliValue()`` with ``milli``): rounded up to an integer."""
    if isinstance(value, str):  # the same few texts in every pod: kept (errors are not)
        return _text_value(value, milli)
    return _value(value, milli)


@lru_cache(maxsize=4096)
def _text_value(text: str, milli: bool) -> int:
    return _value(text, milli)


def _value(value: object, milli: bool) -> int:
    exact = parse_quantity(value)
    if milli:
        exact = exact.scaleb(3)
    # An int64 holds every real amount; clamping keeps a hostile "1e999999999" from turning
    # into a billion-digit integer.
    if exact.adjusted() >= 19:
        return INT64_MAX if exact > 0 else -INT64_MAX - 1
    return max(-INT64_MAX - 1, min(INT64_MAX, math.ceil(exact)))


def resource_value(resource: str, value: object) -> int:
    """The integer the scheduler stores for ``resource``: millicores for cpu, units otherwise."""
    return quantity_value(value, milli=resource == CPU)
