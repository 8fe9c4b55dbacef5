"""Go's ``time.ParseDuration``, the syntax of every duration flag Kubernetes tools take.

kubectl's ``--timeout=90s``, the kubelet's ``--eviction-soft-grace-period=memory.available=1m30s``
and ``--housekeeping-interval=10s`` are all parsed by ``time.ParseDuration``. The error
messages are Go's, so users see what kubectl or the kubelet would print.
"""

from __future__ import annotations

import re
from typing import Final

from kube.ints import INT64_MAX

__all__ = ["MAX_DURATION_SECONDS", "DurationError", "DurationOverflowError", "parse_go_duration"]

# math.MaxInt64 nanoseconds: the longest time.Duration
MAX_DURATION_SECONDS: Final = INT64_MAX / 1e9

_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_NUMBER: Final = re.compile(r"[0-9.]+$")


class DurationError(ValueError):
    """Not a Go duration; the message is ``time.ParseDuration``'s."""


class DurationOverflowError(DurationError):
    """Well formed, but longer than a ``time.Duration`` holds (Go's message is the same).

    A ``time.Duration`` is an int64 of nanoseconds, so Go refuses anything beyond about 292 years
    (``9999999999999999h`` is ``time: invalid duration``); so do we, rather than hand an infinite
    or astronomically long wait to a caller.
    """


def parse_go_duration(value: str) -> float:
    """``time.ParseDuration(value)`` in seconds (``1m30s`` → 90.0, ``300ms`` → 0.3).

    An optional sign, then one or more decimal numbers each with a unit (``ns``, ``us``/``µs``,
    ``ms``, ``s``, ``m``, ``h``); a bare ``0`` is the only number allowed without a unit.
    """
    text = value
    sign = 1.0
    if text[:1] in ("+", "-"):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise DurationError(f'time: invalid duration "{value}"')
    total = 0.0
    pos = 0
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None or m.group(1) in ("", "."):
            if m is None and _NUMBER.match(text, pos):
                raise DurationError(f'time: missing unit in duration "{value}"')
            raise DurationError(f'time: invalid duration "{value}"')
        total += float(m.group(1)) * _UNITS[m.group(2)]
        if not total <= MAX_DURATION_SECONDS:  # also catches a digit string that is inf
            raise DurationOverflowError(f'time: invalid duration "{value}"')
        pos = m.end()
    return sign * total
