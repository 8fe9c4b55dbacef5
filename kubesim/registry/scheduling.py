"""PriorityClasses' strategy (``pkg/registry/scheduling/priorityclass``) and the system classes.

In kube-apiserver a PriorityClass is checked by its registry, not by admission: the
``Priority`` admission plugin (``kubesim.plugins.admission.priority``) only resolves pods'
``priorityClassName`` and refuses a second ``globalDefault`` class; so
``--disable-admission-plugins Priority`` leaves all of this in force, as upstream. The rules
themselves are ``scheduler.priority``'s (the scheduling library validates the classes it is
given the same way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.apierrors import FieldError
from kube.objects import InvalidObject, PriorityClass
from kubesim.core.errors import Cause
from kubesim.registry.strategy import Strategy
from scheduler.priority import (
    system_priority_classes,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)

__all__ = ["STRATEGIES", "system_priority_class_manifests"]

KIND: Final = "PriorityClass"
API_VERSION: Final = "scheduling.k8s.io/v1"


def _defaults(obj: dict[str, Any]) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    obj.setdefault("value", 0)


def _cause(err: FieldError) -> Cause:
    return Cause(str(err.type), err.error_body(), err.field)


def _validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None, group: str) -> list[Cause]:
    """``Validate`` on create, ``ValidateUpdate`` (only) on update, as the strategy does.

    They call ``pkg/apis/scheduling/validation``: the value at most 1000000000 unless the name is
    one of the two system classes, ``system-`` names reserved, the ``preemptionPolicy`` enum, value
    and policy immutable on update (a 422).
    """
    del group
    try:
        pc = PriorityClass.from_dict(obj)
        old_pc = None if old is None else PriorityClass.from_dict(old)
    except InvalidObject:
        return []  # the generic store answers the decoding error (and the name rule) itself
    if old_pc is None:
        errors = validate_priority_class(pc)
    else:
        errors = validate_priority_class_update(old_pc, pc)
    return [_cause(e) for e in errors]


def system_priority_class_manifests() -> list[dict[str, Any]]:
    """``system-node-critical`` and ``system-cluster-critical``, as the post-start hook has them.

    The scheduling storage's post-start hook creates them, and its ``Delete`` refuses them (a 403,
    before anything else).
    """
    return [
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": pc.name},
            "value": pc.value,
            "description": pc.description,
            "preemptionPolicy": pc.preemption_policy,
        }
        for pc in system_priority_classes()
    ]


STRATEGIES: Final[Mapping[str, Strategy]] = {
    # ValidatePriorityClass checks metadata itself (the name rule first), so its errors are
    # the whole answer, in its order.
    KIND: Strategy(
        decode=PriorityClass.from_dict,
        validate=_validate,
        defaults=_defaults,
        own_error_group=True,
        validate_delete=validate_priority_class_delete,
    ),
}
