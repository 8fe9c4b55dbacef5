"""The Event strategy: validation as ``pkg/apis/core/validation/events.go`` does it.

kubesim stores the core ``v1`` shape of every Event (``kubesim.core.events`` converts
``events.k8s.io/v1`` to it), and validates that stored shape with the field paths of the
internal type (so an ``events.k8s.io`` client also reads ``involvedObject.namespace``,
``reportingController``, ``message``): ``validate_event_create``, ``validate_event_update``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.labels import dns1123_subdomain_errors, qualified_name_errors
from kubesim.core.errors import Cause
from kubesim.core.names import path_segment_name_errors
from kubesim.registry.strategy import Strategy

__all__ = ["STRATEGIES", "validate_event_create", "validate_event_update"]

REPORTING_INSTANCE_LENGTH_LIMIT: Final = 128
ACTION_LENGTH_LIMIT: Final = 128
REASON_LENGTH_LIMIT: Final = 128
NOTE_LENGTH_LIMIT: Final = 1024


def _required(path: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", path)


def _invalid(path: str, value: str, detail: str) -> Cause:
    quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return Cause("FieldValueInvalid", f"Invalid value: {quoted}: {detail}", path)


def _text(ev: Mapping[str, Any], *keys: str) -> str:
    cur: Any = ev
    for key in keys:
        if type(cur) is not dict and not isinstance(cur, Mapping):  # the ABC check is slow
            return ""
        cur = cur.get(key)
    return cur if isinstance(cur, str) else ""


def _field(ev: Mapping[str, Any], key: str) -> str:
    """``_text`` of a top-level field (most of an event's), without the walk."""
    value = ev.get(key)
    return value if isinstance(value, str) else ""


def _legacy_causes(ev: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    namespace = _text(ev, "metadata", "namespace")
    involved_ns = _text(ev, "involvedObject", "namespace")

    def mismatch() -> Cause:
        return _invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")

    if not ev.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and involved_ns != namespace
        ):
            causes.append(mismatch())
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            causes.append(mismatch())
        controller = _field(ev, "reportingComponent")
        if not controller:
            causes.append(_required("reportingController"))
        causes.extend(
            _invalid("reportingController", controller, e)
            for e in qualified_name_errors(controller)
        )
        for path, key, limit in (
            ("reportingInstance", "reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
            ("action", "action", ACTION_LENGTH_LIMIT),
            ("reason", "reason", REASON_LENGTH_LIMIT),
        ):
            value = _field(ev, key)
            if not value:
                causes.append(_required(path))
            if len(value) > limit:
                causes.append(_invalid(path, "", f"can have at most {limit} characters"))
        if len(_field(ev, "message")) > NOTE_LENGTH_LIMIT:
            causes.append(
                _invalid("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters")
            )
    return causes


def _series_causes(ev: Mapping[str, Any]) -> list[Cause]:
    series = ev.get("series")
    if not isinstance(series, Mapping):
        return []
    causes: list[Cause] = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(_invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(_required("series.lastObservedTime"))
    return causes


def _strict_meta_causes(ev: Mapping[str, Any]) -> list[Cause]:
    """``ValidateObjectMeta`` with ``NameIsDNSSubdomain`` (namespace comes from the path)."""
    name = _text(ev, "metadata", "name")
    if not name:
        if not _text(ev, "metadata", "generateName"):
            return [
                Cause(
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                    "metadata.name",
                )
            ]
        return []
    return [_invalid("metadata.name", name, e) for e in dns1123_subdomain_errors(name)]


def validate_event_create(ev: Mapping[str, Any], *, group: str) -> list[Cause]:
    """The field errors of creating ``ev`` (core shape) through ``group``'s API.

    Every event passes the legacy rules (``_legacy_causes``): without ``eventTime`` the
    involved object's namespace must be the event's (an empty one only in ``default`` or a
    cluster-scoped event); with ``eventTime`` ("new" events) an empty involved namespace is
    allowed only in ``default`` and ``kube-system``, and ``reportingController`` (a qualified
    name), ``reportingInstance``, ``action`` and ``reason`` are required, with length limits
    (128, 128, 128, note 1024). ``events.k8s.io/v1`` writes are strict on top: object meta with
    a DNS-subdomain name, ``eventTime`` required, ``type`` ``Normal`` or ``Warning``,
    ``series`` with ``count >= 2`` and ``lastObservedTime``, and the deprecated fields
    (``deprecatedFirstTimestamp``, ``deprecatedLastTimestamp``, ``deprecatedCount``,
    ``deprecatedSource``) unset.

    The upstream quirk kept here: an ``events.k8s.io`` event *without* ``eventTime`` takes the
    legacy branch, so it is told ``eventTime: Required value`` but not that ``reason`` or
    ``reportingController`` are missing."""
    causes = _legacy_causes(ev)
    if group != "events.k8s.io":
        return causes  # core v1: no further validation, for backwards compatibility
    causes.extend(_strict_meta_causes(ev))
    causes.extend(_series_causes(ev))
    if not ev.get("eventTime"):
        causes.append(_required("eventTime"))
    event_type = _field(ev, "type")
    if event_type not in ("Normal", "Warning"):
        causes.append(_invalid("type", "", f"has invalid value: {event_type}"))
    for path in ("firstTimestamp", "lastTimestamp", "count"):
        if ev.get(path):
            causes.append(_invalid(path, "", "needs to be unset"))
    if _text(ev, "source", "component") or _text(ev, "source", "host"):
        causes.append(_invalid("source", "", "needs to be unset"))
    return causes


# Identity fields compared on an events.k8s.io update: (internal path, stored key)
_IMMUTABLE_TEXT: Final = (
    ("reason", "reason"),
    ("message", "message"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
)


def validate_event_update(
    new: Mapping[str, Any], old: Mapping[str, Any], *, group: str
) -> list[Cause]:
    """The field errors of replacing ``old`` with ``new`` through ``group``'s API: through
    ``events.k8s.io``, an update may not change the event's identity fields (``reason``,
    ``message``, ``type``, ``action``, ``reportingController``, ``reportingInstance``,
    ``eventTime``)."""
    causes = _legacy_causes(new)
    if group != "events.k8s.io":
        return causes
    if new.get("series") != old.get("series"):
        causes.extend(_series_causes(new))
    for path, key in _IMMUTABLE_TEXT:
        if _text(new, key) != _text(old, key):
            causes.append(_invalid(path, _text(new, key), "field is immutable"))
    return causes


def _event_causes(ev: Mapping[str, Any], old: Mapping[str, Any] | None, group: str) -> list[Cause]:
    if old is None:
        return validate_event_create(ev, group=group)
    return validate_event_update(ev, old, group=group)


# Events are validated by the group a client writes through, and answered in a 422 of their
# own; any name that fits in a URL will do (the core group checks nothing stricter).
STRATEGIES: Final = {
    "Event": Strategy(
        validate=_event_causes, own_error_group=True, name_errors=path_segment_name_errors
    )
}
