"""Timestamps as the API writes them: ``metav1.Time`` and ``metav1.MicroTime`` ↔ epoch seconds.

Every package reads and writes them (object views, the API room's exec credentials, the
agent's stats and Events), so the rules live here once. kube-apiserver's own decoding of time
fields, with Go's error messages, is kubesim's concern (``kubesim.core.timefields``); this
module is for clients of the API.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

__all__ = ["format_micro_time", "format_time", "parse_rfc3339", "parse_time"]

# RFC 3339 section 5.6 (date-time), lower-case t and z included as the RFC allows.
_RFC3339: Final = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?"
)


@lru_cache(maxsize=4096)  # a watch or a stats summary repeats few distinct timestamps
def parse_rfc3339(text: str) -> float:
    """An RFC 3339 timestamp (``2024-05-01T10:00:00Z``, ``…T10:00:00.123456789+02:00``) as
    seconds since the epoch; ``ValueError`` for anything else.

    As Go's ``time.Parse(time.RFC3339, …)`` accepts it: a full date, ``T``, a full time with any
    number of fractional digits, and a zone (``Z`` or ``±hh:mm``) that may not be left out.
    Python's ``datetime.fromisoformat`` alone would also take the ISO 8601 forms no API server
    writes (``20240501T100000``, a space for ``T``, no zone), so the shape is checked first. Digits
    past the microsecond are dropped (Python keeps microseconds; the kubelet's stats carry
    nanoseconds).
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not an RFC 3339 time")
    date, clock, fraction, zone = match.groups()
    if zone is None:
        raise ValueError(f"{text!r} has no time zone")
    micros = f".{(fraction + '00000')[:6]}" if fraction else ""
    offset = "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(f"{date}T{clock}{micros}{offset}").timestamp()
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time: out of range") from None


def parse_time(value: object) -> float:
    """A time field as decoded from JSON or YAML: RFC 3339 text, a ``datetime`` (YAML loaders
    and the generated client models make them), or already a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value.isoformat()!r} has no time zone")
        return value.timestamp()
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an RFC 3339 time")
    return parse_rfc3339(value)


def format_time(seconds: float) -> str:
    """Seconds since the epoch to RFC 3339 in UTC, whole seconds (``metav1.Time``); the
    fraction is cut, not rounded.
    """
    return f"{_second(math.floor(seconds))}Z"


def format_micro_time(seconds: float) -> str:
    """Seconds since the epoch as a ``metav1.MicroTime`` (six fractional digits, ``Z``)."""
    whole = math.floor(seconds)
    micros = round((seconds - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return f"{_second(whole)}.{micros:06d}Z"


@lru_cache(maxsize=1024)
def _second(whole: int) -> str:
    # A busy server stamps thousands of objects within the same second: format each once.
    return datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
