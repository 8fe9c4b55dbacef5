"""Time fields decoded and re-encoded as kube-apiserver's JSON codec does.

kube-apiserver decodes every body into Go types, so a timestamp is whatever
``metav1.Time``/``metav1.MicroTime`` make of it (``k8s.io/apimachinery/pkg/apis/meta/v1``):
``parse_go_time`` reads, ``reencode`` writes. Only the known time fields of the kinds kubesim
serves are converted (``time_fields``); a field of another kind is left as sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from functools import cache, lru_cache
from typing import Any, Final

__all__ = [
    "MICRO_TIME",
    "RFC3339",
    "RFC3339_MICRO",
    "TIME",
    "TimeParseError",
    "normalize_times",
    "parse_go_time",
    "reencode",
    "time_fields",
]

RFC3339: Final = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO: Final = "2006-01-02T15:04:05.000000Z07:00"
TIME: Final = "Time"
MICRO_TIME: Final = "MicroTime"

_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class TimeParseError(ValueError):
    """``time.ParseError``; ``str()`` is Go's message, ``path`` the field (when known)."""

    path: str = ""


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(slots=True)
class _Parsed:
    year: int = 0
    month: int = 0
    day: int = 0
    hour: int = 0
    minute: int = 0
    second: int = 0
    micros: int = 0
    offset: int = 0  # seconds east of UTC


def _digits(value: str, n: int) -> int | None:
    head = value[:n]
    if len(head) != n or not head.isascii() or not head.isdigit():
        return None
    return int(head)


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def parse_go_time(text: str, *, micro: bool) -> _Parsed:
    """``time.Parse(RFC3339 or RFC3339Micro, text)`` with Go's error messages.

    ``metav1.Time`` reads ``time.Parse(time.RFC3339, s)`` — any offset, any fraction.
    ``metav1.MicroTime`` (Event ``eventTime``, ``series.lastObservedTime``, Lease
    ``acquireTime``/``renewTime``) reads ``time.Parse("2006-01-02T15:04:05.000000Z07:00", s)``:
    exactly six fractional digits, which is why a Python client's ``datetime.isoformat()``
    without microseconds is refused by a real cluster. Anything that does not parse — a
    timestamp without a zone above all — makes the whole body a 400 ``<Kind> in version "<v>"
    cannot be handled as a <Kind>: parsing time "..." as "...": cannot parse "..." as "..."``
    (the decoder returns the ``time.ParseError`` unwrapped). The layout is walked element by
    element as Go's ``time.parse`` does, so the error names the same remaining text and
    layout element."""
    layout = RFC3339_MICRO if micro else RFC3339
    value = text
    out = _Parsed()

    def fail(value_elem: str, layout_elem: str) -> TimeParseError:
        return TimeParseError(
            f"parsing time {_quote(text)} as {_quote(layout)}: cannot parse"
            f" {_quote(value_elem)} as {_quote(layout_elem)}"
        )

    def literal(lit: str) -> None:
        nonlocal value
        if not value.startswith(lit):
            raise fail(value, lit)
        value = value[len(lit) :]

    def number(elem: str, width: int, *, fixed: bool = True) -> int:
        nonlocal value
        got = _digits(value, width)
        if got is None and not fixed:
            got = _digits(value, 1)
            width = 1
        if got is None:
            raise fail(value, elem)
        value = value[width:]
        return got

    out.year = number("2006", 4)
    literal("-")
    out.month = number("01", 2)
    literal("-")
    out.day = number("02", 2)
    literal("T")
    out.hour = number("15", 2, fixed=False)
    literal(":")
    out.minute = number("04", 2)
    literal(":")
    out.second = number("05", 2)
    if micro:
        if len(value) < 7 or value[0] not in ".," or _digits(value[1:], 6) is None:
            raise fail(value, ".000000")
        out.micros = int(value[1:7])
        value = value[7:]
    elif len(value) >= 2 and value[0] in ".," and value[1].isdigit():
        n = 1
        while n < len(value) and value[n].isascii() and value[n].isdigit():
            n += 1
        out.micros = int(value[1:n][:6].ljust(6, "0"))
        value = value[n:]
    if value.startswith("Z"):
        value = value[1:]
    else:
        if len(value) < 6 or value[3] != ":":
            raise fail(value, "Z07:00")
        sign = value[0]
        hh, mm = _digits(value[1:3], 2), _digits(value[4:6], 2)
        if sign not in "+-" or hh is None or mm is None:
            raise fail(value[6:], "Z07:00")  # Go has consumed the six characters by then
        out.offset = (hh * 3600 + mm * 60) * (-1 if sign == "-" else 1)
        value = value[6:]
    if value:
        raise TimeParseError(f"parsing time {_quote(text)}: extra text: {_quote(value)}")
    bad = ""
    if not 1 <= out.month <= 12:
        bad = "month"
    elif not 1 <= out.day <= _DAYS[out.month - 1] + (out.month == 2 and _leap(out.year)):
        bad = "day"
    elif out.hour >= 24:
        bad = "hour"
    elif out.minute >= 60:
        bad = "minute"
    elif out.second >= 60:
        bad = "second"
    if bad:
        raise TimeParseError(f"parsing time {_quote(text)}: {bad} out of range")
    return out


def _encode(p: _Parsed, *, micro: bool) -> str:
    try:
        local = datetime(
            p.year,
            p.month,
            p.day,
            p.hour,
            p.minute,
            p.second,
            p.micros,
            tzinfo=timezone(timedelta(seconds=p.offset)),
        )
        utc = local.astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # years Python's datetime cannot hold
        raise TimeParseError(f"parsing time: {exc}") from None
    if micro:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}Z"
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def reencode(value: Any, *, micro: bool) -> Any:
    """The stored form of one time value (``None`` stays the zero time).

    ``metav1.Time`` writes ``t.UTC().Format(time.RFC3339)``: UTC, ``Z``, whole seconds (the
    fraction is cut, not rounded) — ``2026-01-01T12:00:00.7+02:00`` is stored as
    ``2026-01-01T10:00:00Z``; ``metav1.MicroTime`` writes UTC with six digits and ``Z``."""
    if value is None:
        return None
    if isinstance(value, datetime | date):
        # A YAML body or state file parsed by PyYAML: the text the client wrote.
        value = value.isoformat()
    if not isinstance(value, str):
        raise TimeParseError(
            f"json: cannot unmarshal {_json_type(value)} into Go value of type string"
        )
    if micro and len(value) == 27 and value[19] == "." and value[26] == "Z":
        # Already stored form (every eventTime a client or the scheduler writes): the
        # microseconds are as written when the whole second is.
        digits = value[20:26]
        if digits.isascii() and digits.isdigit():
            second = value[:19] + "Z"
            try:
                if _reencode_text(second, False) == second:
                    return value
            except TimeParseError:
                pass  # the full parse below names the text the client wrote
    return _reencode_text(value, micro)


@lru_cache(maxsize=4096)
def _reencode_text(value: str, micro: bool) -> str:
    # Objects written within the same second carry the same stamps (creationTimestamp,
    # managedFields' time): each distinct text is parsed once. A TimeParseError is not cached.
    return _encode(parse_go_time(value, micro=micro), micro=micro)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


# --- which fields are times --------------------------------------------------------------------

# A path is dotted keys; "[]" steps into every list item, "{}" into every map value.
_META: Final = (
    ("metadata.creationTimestamp", TIME),
    ("metadata.deletionTimestamp", TIME),
    ("metadata.managedFields.[].time", TIME),
)
_TEMPLATE_META: Final = (("spec.template.metadata.creationTimestamp", TIME),)
_CONDITIONS: Final = (("status.conditions.[].lastTransitionTime", TIME),)


def _container_statuses() -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for group in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for state in ("state", "lastState"):
            out.append((f"status.{group}.[].{state}.running.startedAt", TIME))
            out.append((f"status.{group}.[].{state}.terminated.startedAt", TIME))
            out.append((f"status.{group}.[].{state}.terminated.finishedAt", TIME))
    return tuple(out)


_BY_KIND: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "Pod": (
        ("status.startTime", TIME),
        ("status.conditions.[].lastProbeTime", TIME),
        ("status.conditions.[].lastTransitionTime", TIME),
        *_container_statuses(),
    ),
    "Node": (
        ("spec.taints.[].timeAdded", TIME),
        ("status.conditions.[].lastHeartbeatTime", TIME),
        ("status.conditions.[].lastTransitionTime", TIME),
    ),
    "Namespace": _CONDITIONS,
    "PodDisruptionBudget": (*_CONDITIONS, ("status.disruptedPods.{}", TIME)),
    "Deployment": (
        *_TEMPLATE_META,
        ("status.conditions.[].lastUpdateTime", TIME),
        *_CONDITIONS,
    ),
    "ReplicaSet": (*_TEMPLATE_META, *_CONDITIONS),
    "StatefulSet": (*_TEMPLATE_META, *_CONDITIONS),
    "DaemonSet": (*_TEMPLATE_META, *_CONDITIONS),
    "ReplicationController": (*_TEMPLATE_META, *_CONDITIONS),
    "Job": (
        *_TEMPLATE_META,
        ("status.startTime", TIME),
        ("status.completionTime", TIME),
        ("status.conditions.[].lastProbeTime", TIME),
        *_CONDITIONS,
    ),
    # core v1 shape (events.k8s.io is converted to it before this runs)
    "Event": (
        ("firstTimestamp", TIME),
        ("lastTimestamp", TIME),
        ("eventTime", MICRO_TIME),
        ("series.lastObservedTime", MICRO_TIME),
    ),
    "Lease": (("spec.acquireTime", MICRO_TIME), ("spec.renewTime", MICRO_TIME)),
}


def time_fields(kind: str) -> tuple[tuple[str, str], ...]:
    """The (path, Time or MicroTime) pairs of ``kind``, metadata included."""
    return _META + _BY_KIND.get(kind, ())


# A kind's time fields as a tree: each key maps to the subtree under it, or, at a time field,
# to whether it is a MicroTime; "[]" stands for every list item, "{}" for every map value.
_Tree = dict[str, "_Tree | bool"]


@cache
def _tree(kind: str) -> _Tree:
    """``time_fields(kind)`` as a tree, built once: a walk descends only where the object has
    one of the keys, so a pod's status is looked at once, not once per container-status path."""
    root: _Tree = {}
    for path, t in time_fields(kind):
        node = root
        *parents, leaf = path.split(".")
        for step in parents:
            sub = node.setdefault(step, {})
            assert isinstance(sub, dict)
            node = sub
        node[leaf] = t == MICRO_TIME
    return root


def _path(trail: tuple[Any, ...]) -> str:
    """The field path of a trail of keys (list indexes in brackets)."""
    out = ""
    for key in trail:
        out = f"{out}[{key}]" if isinstance(key, int) else f"{out}.{key}" if out else str(key)
    return out


def _walk(node: Any, tree: _Tree, trail: tuple[Any, ...]) -> None:
    if isinstance(node, list):
        sub = tree.get("[]")
        if sub is not None:
            for i, child in enumerate(node):
                _at(node, i, child, sub, trail)
        return
    if not isinstance(node, dict):
        return
    for step, sub in tree.items():
        if step == "{}":
            for key, child in list(node.items()):
                _at(node, key, child, sub, trail)
        elif step != "[]" and step in node:
            _at(node, step, node[step], sub, trail)


def _at(node: Any, key: Any, child: Any, sub: _Tree | bool, trail: tuple[Any, ...]) -> None:
    if isinstance(sub, dict):
        if isinstance(child, dict | list):
            _walk(child, sub, (*trail, key))
        return
    try:
        node[key] = reencode(child, micro=sub)
    except TimeParseError as exc:
        exc.path = _path((*trail, key))
        raise


def normalize_times(kind: str, obj: Mapping[str, Any]) -> None:
    """Re-encode ``obj``'s time fields in place; TimeParseError as the decoder's error."""
    _walk(obj, _tree(kind), ())
