"""Kubernetes resource quantities as the scheduler counts them.

Parsing is delegated to the client library's ``parse_quantity``. kubernetes-asyncio carries it
on its master branch (``kubernetes_asyncio.utils.quantity``) but no release ships it yet, so we
fall back to the official client's copy of the same function (``kubernetes.utils.quantity``).

The library parser is built on ``decimal.Decimal`` and so accepts strings kube-apiserver
rejects ("NaN", "Infinity", "1_000", " 1"). We check the apimachinery grammar first so that
a manifest the API server would refuse is refused here too.

Integer forms follow ``resource.Quantity``: CPU is counted in millicores (``MilliValue``),
everything else in whole units (``Value``); both round up, as apimachinery does.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache
from typing import Final

try:  # pragma: no cover - depends on the installed client version
    from kubernetes_asyncio.utils.quantity import (  # type: ignore[import-not-found,unused-ignore]
        parse_quantity as _library_parse_quantity,
    )
except ImportError:  # pragma: no cover
    from kubernetes.utils.quantity import parse_quantity as _library_parse_quantity

__all__ = [
    "CPU",
    "QuantityError",
    "parse_quantity",
    "quantity_value",
    "resource_value",
]

CPU: Final = "cpu"

# <signedNumber><suffix> from k8s.io/apimachinery/pkg/api/resource/quantity.go.
_GRAMMAR: Final = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)

# resource.ErrFormatWrong, word for word, so errors read like kube-apiserver's.
_UPSTREAM_MESSAGE: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal:
    if not _GRAMMAR.fullmatch(text):
        raise QuantityError(_UPSTREAM_MESSAGE)
    try:
        value: Decimal = _library_parse_quantity(text)
    except (ValueError, ArithmeticError) as exc:
        raise QuantityError(str(exc)) from exc
    return value


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity given as a string or a number."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | Decimal):
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
    exact = parse_quantity(value)
    if milli:
        exact *= 1000
    return math.ceil(exact)


def resource_value(resource: str, value: object) -> int:
    """The integer the scheduler stores for ``resource``: millicores for cpu, units otherwise."""
    return quantity_value(value, milli=resource == CPU)
