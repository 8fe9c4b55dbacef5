"""Admission plugins: Priority (pods) and PriorityClass validation, from ``scheduler.priority``.

kube-apiserver runs mutating admission, then the registry's validation, then validating
admission. For the kinds here that means:

* pods: the ``Priority`` plugin resolves ``priorityClassName`` (or the ``globalDefault``
  class) into ``spec.priority`` and ``spec.preemptionPolicy`` on create, keeps them on update,
  and answers 403 ``pods "x" is forbidden: no PriorityClass with name foo was found`` for an
  unknown class;
* PriorityClasses: field validation (422, ``validate_priority_class`` /
  ``validate_priority_class_update``), then the plugin's single-``globalDefault`` rule (403);
  deleting a system class is a 403 (``validate_priority_class_delete``).

The plugin's class cache is the store itself (as the plugin's lister is an informer cache),
rebuilt when the stored PriorityClasses change. The system classes are created at bootstrap
(``bootstrap_priority_classes``), as the apiserver's post-start hook does.
"""

from __future__ import annotations

from typing import Any

from kube import apierrors
from kube.objects import InvalidObject, PriorityClass
from kubesim.core.scheme import ResourceType
from kubesim.registry.generic import GenericStore
from kubesim.registry.validation import status_error_for
from scheduler.priority import (
    PRIORITY_CLASS_KIND,
    PriorityAdmission,
    system_priority_classes,
    validate_priority_class,
    validate_priority_class_delete,
    validate_priority_class_update,
)

__all__ = ["PriorityPlugin", "bootstrap_priority_classes"]


def _typed(rt: ResourceType, obj: dict[str, Any]) -> PriorityClass:
    try:
        return PriorityClass.from_dict(obj)
    except InvalidObject as exc:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise status_error_for(rt, name, exc) from None


class PriorityPlugin:
    """The Priority admission plugin over the store's PriorityClasses."""

    def __init__(self, registry: GenericStore) -> None:
        self.registry = registry
        self._version: tuple[tuple[str, str], ...] | None = None
        self._admission = PriorityAdmission()

    def admission(self) -> PriorityAdmission:
        items = list(self.registry.store.items("priorityclasses"))
        version = tuple(
            (str(o["metadata"].get("name")), str(o["metadata"].get("resourceVersion")))
            for o in items
        )
        if version != self._version:
            classes = []
            for o in items:
                try:
                    classes.append(PriorityClass.from_dict(o))
                except InvalidObject:
                    continue
            self._admission = PriorityAdmission(classes)
            self._version = version
        return self._admission

    def __call__(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        # Admission and validation raise kube.apierrors.StatusError, which the server
        # answers with as is.
        if rt.kind == "Pod":
            self._pod(op, obj, old)
        elif rt.kind == "PriorityClass":
            self._priority_class(op, rt, obj, old)

    def _pod(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if op == "CREATE":
            self.admission().admit_pod_manifest(obj, "create")
        elif op == "UPDATE" and old is not None:
            self.admission().admit_pod_manifest(obj, "update", old)

    def _priority_class(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if op == "DELETE":
            validate_priority_class_delete(str((obj.get("metadata") or {}).get("name", "")))
            return
        pc = _typed(rt, obj)
        if op == "CREATE":
            errors = validate_priority_class(pc)
        else:
            assert old is not None
            errors = validate_priority_class_update(PriorityClass.from_dict(old), pc)
        if errors:
            raise apierrors.new_invalid(PRIORITY_CLASS_KIND, pc.name, errors)
        self.admission().validate_class(pc, op.lower())


def bootstrap_priority_classes(registry: GenericStore) -> None:
    """Create ``system-node-critical`` and ``system-cluster-critical``."""
    rt = registry.scheme.for_kind("scheduling.k8s.io/v1", "PriorityClass")
    assert rt is not None
    for pc in system_priority_classes():
        if registry.find(rt, "", pc.name) is not None:
            continue
        registry.seed(
            rt,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc.name},
                "value": pc.value,
                "description": pc.description,
                "preemptionPolicy": pc.preemption_policy,
            },
        )
