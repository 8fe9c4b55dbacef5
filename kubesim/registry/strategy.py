"""A kind's strategy: what the generic store does differently for one kind
(``pkg/registry/<group>/<resource>/strategy.go``).

kubesim's generic store (``kubesim.registry.generic``) asks ``kubesim.registry.validation`` for
the ``Strategy`` of a kind; each kind declares its own in the module of its group (core and apps
kinds in ``validation``, RBAC's in ``rbac``, events' in ``events``, admission policies' in
``admissionregistration``) and ``validation`` gathers them into one table, so this module and
the kinds' modules import nothing of the generic store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kube.apierrors import ErrorType
from kube.labels import dns1123_subdomain_errors
from kubesim.core.errors import Cause

__all__ = ["Causes", "Strategy", "field_error_cause"]

# (object, the stored object on update or None, the API group the request wrote through)
Causes = Callable[[Mapping[str, Any], Mapping[str, Any] | None, str], list[Cause]]


@dataclass(frozen=True, slots=True)
class Strategy:
    """One kind's defaulting, decoding and validation; every field may be left out.

    kube-apiserver's generic ``registry.Store`` is the same for every resource; each resource
    brings a strategy with its defaulting (the ``SetDefaults_*`` functions the decoder runs), its
    decoding into a Go type (a field of the wrong type is a 400 before anything else),
    ``Validate``/``ValidateUpdate`` (a 422 naming each bad field), the name rule of its
    ``ValidateObjectMeta``, and what its storage refuses to delete.

    ``decode`` is the typed decoding (raises ``kube.objects.InvalidObject``: a wrong JSON type
    is a 400, any other complaint a 422): the typed view validation returns, and the decoding
    step itself only for a kind the schema (``kube.strict``) does not hold — the schema decodes
    the others (``validation.check_type``); ``validate`` gives the field errors besides metadata;
    ``validate_update`` raises the 422 of an update the kind forbids (a pod's spec);
    ``defaults`` fills the defaults on create (and on every update with
    ``default_on_update``); ``name_errors`` is the rule ``metadata.name`` must follow;
    ``own_error_group`` answers the kind's field errors first, in a 422 of their own naming
    the group the request wrote through (events: ``events.k8s.io`` validates more strictly;
    PriorityClasses: their validation checks metadata itself); ``validate_delete`` refuses
    the delete of the named object before anything else is looked at (raises a StatusError; a
    PriorityClass storage's ``Delete`` keeps the system classes).
    """

    decode: Callable[[Mapping[str, Any]], object] | None = None
    validate: Causes | None = None
    validate_update: Callable[[Mapping[str, Any], Mapping[str, Any]], None] | None = None
    defaults: Callable[[dict[str, Any]], None] | None = None
    default_on_update: bool = False
    name_errors: Callable[[str], list[str]] = dns1123_subdomain_errors
    own_error_group: bool = False
    validate_delete: Callable[[str], None] | None = None


# field.Error's words ("Required value") back to its type ("FieldValueRequired"); the first
# type per phrase wins, so "Invalid value" means FieldValueInvalid.
_TYPE_FOR_PREFIX: Final[dict[str, str]] = {}
for _type in ErrorType:
    _TYPE_FOR_PREFIX.setdefault(_type.display, _type.value)


def field_error_cause(field: str, detail: str) -> Cause:
    """A ``field.Error`` as a Status cause: reason from the detail's leading phrase."""
    for prefix, reason in _TYPE_FOR_PREFIX.items():
        if detail.startswith(prefix):
            return Cause(reason, detail, field)
    return Cause("FieldValueInvalid", f"Invalid value: {detail}", field)
