"""Admission as the generic store calls it: the plugins' shapes and what they add to a response
(kube-apiserver's ``k8s.io/apiserver/pkg/admission``).

The generic store (``kubesim.registry.generic``) runs ``AdmissionPlugin``s (mutating: they may
change the object) before validation and ``ValidatingAdmission``s (they may only refuse it)
after it, for API requests only; the plugins themselves, in kube's order, are
``kubesim.plugins.admission``'s.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.core.attributes import Attributes
from kubesim.core.scheme import ResourceType

__all__ = [
    "AdmissionCall",
    "AdmissionNotes",
    "AdmissionPlugin",
    "ValidatingAdmission",
    "collecting_admission_notes",
    "current_notes",
]

# An admission plugin sees (operation, type, new object, old object) and may change the new
# object in place or raise a StatusError; operation is CREATE, UPDATE or DELETE.
AdmissionPlugin = Callable[[str, ResourceType, dict[str, Any], dict[str, Any] | None], None]


@dataclass(slots=True)
class AdmissionNotes:
    """What validating admission adds to the response besides a verdict: ``Warning`` headers
    (``warning.AddWarning``) and audit annotations (``attributes.AddAnnotation``), which the
    server writes into the response and the request log entry."""

    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


_NOTES: contextvars.ContextVar[AdmissionNotes | None] = contextvars.ContextVar(
    "kubesim_admission_notes", default=None
)


@contextlib.contextmanager
def collecting_admission_notes(notes: AdmissionNotes) -> Iterator[AdmissionNotes]:
    """Admission calls made in the body write their warnings and annotations into ``notes``;
    the endpoints collect them into the response while a request is served.
    """
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


@dataclass(frozen=True, slots=True)
class AdmissionCall:
    """``admission.Attributes`` for validating admission, after the object was validated:
    operation, resource, subresource, name, namespace, the object and the old one, the user, dry
    run.

    ``obj`` is None for DELETE and ``old`` None for CREATE, as in an AdmissionReview; for a
    subresource the object is what the request sent (the Pod for ``pods/status``, the Eviction
    for ``pods/eviction``, the Binding for ``pods/binding``). ``request`` is the API request's
    ``Attributes`` (user, verb, ...).
    """

    operation: str
    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None
    request: Attributes
    dry_run: bool = False
    kind: str = ""  # the object's kind when it is not the resource's (Eviction, Binding)
    kind_group: str = ""
    kind_version: str = ""
    # warnings and audit annotations for the response (discarded outside an API request)
    notes: AdmissionNotes = field(default_factory=AdmissionNotes)


# Validating admission (ValidatingAdmissionPolicies): may only raise a StatusError.
ValidatingAdmission = Callable[[AdmissionCall], None]


def current_notes() -> AdmissionNotes:
    """Where validating admission writes for the request being served (a throwaway outside one)."""
    return _NOTES.get() or AdmissionNotes()
