"""Event conversion between core ``v1`` and ``events.k8s.io/v1``.

kube-apiserver stores one Event type and serves it in both groups; kubesim stores the core
shape, so ``kubectl get events`` shows events written through either group. Validation is the
Event strategy's (``kubesim.registry.events``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["from_events_v1", "to_events_v1"]

# core v1 name -> events.k8s.io/v1 name
_RENAMES: Final = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)
_SAME: Final = (
    "metadata",
    "reason",
    "type",
    "related",
    "action",
    "eventTime",
    "series",
    "reportingInstance",
)


def to_events_v1(core: Mapping[str, Any]) -> dict[str, Any]:
    """A core Event in the ``events.k8s.io/v1`` shape (``pkg/apis/events/v1/conversion.go``).

    ``involvedObject``→``regarding``, ``message``→``note``, ``source``→``deprecatedSource``,
    ``firstTimestamp``/``lastTimestamp``/``count``→``deprecatedFirstTimestamp``/
    ``deprecatedLastTimestamp``/``deprecatedCount``, ``reportingComponent``→``reportingController``;
    ``from_events_v1`` is the way back.
    """
    out: dict[str, Any] = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for key in _SAME:
        if key in core:
            out[key] = core[key]
    for old, new in _RENAMES:
        if old in core:
            out[new] = core[old]
    if "series" in out and isinstance(out["series"], Mapping):
        series = dict(out["series"])
        series.pop("state", None)
        out["series"] = series
    return out


def from_events_v1(ev: Mapping[str, Any]) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event in the core shape kubesim stores."""
    out: dict[str, Any] = {"kind": "Event", "apiVersion": "v1"}
    for key in _SAME:
        if key in ev:
            out[key] = ev[key]
    for old, new in _RENAMES:
        if new in ev:
            out[old] = ev[new]
    return out
