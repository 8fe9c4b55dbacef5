"""The living cluster's settings as a state-file document (``kind: ClusterSettings``).

A state file may carry, beside its manifests, one such document; the CLI flags and
``Simulator`` keywords override what it says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from kubesim.cluster import ControllerSettings
from kubesim.controllers import check_controller_names
from kubesim.core.scheme import ResourceType, Scheme

__all__ = [
    "SETTINGS_API_VERSION",
    "SETTINGS_KIND",
    "SETTINGS_TYPE",
    "is_settings_document",
    "parse_settings",
    "with_settings",
]

SETTINGS_API_VERSION: Final = "kubesim.io/v1alpha1"
SETTINGS_KIND: Final = "ClusterSettings"
# Known to the state loader only (``with_settings``), never served by the API.
SETTINGS_TYPE: Final = ResourceType(
    "kubesim.io", "v1alpha1", SETTINGS_KIND, "clustersettings", "clustersettings", False
)
_FIELDS: Final = {
    "readyAfter": "ready_after",
    "reactionDelay": "reaction_delay",
    "jobDuration": "job_duration",
}


def is_settings_document(doc: Any) -> bool:
    return (
        isinstance(doc, Mapping)
        and doc.get("apiVersion") == SETTINGS_API_VERSION
        and doc.get("kind") == SETTINGS_KIND
    )


def parse_settings(
    doc: Mapping[str, Any], base: ControllerSettings | None = None
) -> tuple[ControllerSettings, frozenset[str]]:
    """The settings (over ``base``) and the disabled controller names a document gives::

        apiVersion: kubesim.io/v1alpha1
        kind: ClusterSettings
        readyAfter: 2.5            # seconds from a pod's start to Ready (× time scale)
        reactionDelay: 0.1         # seconds before a controller reacts (× time scale)
        jobDuration: 5             # seconds a Job's pod runs before it Succeeds (× time scale)
        disabledControllers: [garbagecollector]

    Validation is strict, as for the fault file: an unknown field, a negative or non-numeric time
    or an unknown controller name is a ``ValueError`` naming the field and the rule.
    """
    settings = base or ControllerSettings()
    changes: dict[str, float] = {}
    disabled: frozenset[str] = frozenset()
    for key, value in doc.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if key in _FIELDS:
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{key}: must be a number of seconds >= 0, not {value!r}")
            changes[_FIELDS[key]] = float(value)
        elif key == "disabledControllers":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{key}: must be a list of controller names, not {value!r}")
            try:
                disabled = check_controller_names(value)
            except ValueError as exc:
                raise ValueError(str(exc).replace("disabled_controllers", key)) from None
        else:
            raise ValueError(
                f'unknown field "{key}"; known: {", ".join([*_FIELDS, "disabledControllers"])}'
            )
    return replace(settings, **changes), disabled


def with_settings(scheme: Scheme) -> Scheme:
    """A registry for loading state files: the served kinds plus ``ClusterSettings``."""
    return Scheme([*scheme.types, SETTINGS_TYPE])
