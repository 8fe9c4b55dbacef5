"""The ``Priority`` admission plugin (``plugin/pkg/admission/priority``), over ``scheduler``'s.

PriorityClasses' own validation (value range, ``system-`` names, the policy enum, immutable
fields, no deleting the system classes) is their registry strategy's
(``kubesim.registry.scheduling``), and holds with this plugin disabled.
"""

from __future__ import annotations

from typing import Any

from kube.objects import InvalidObject, PriorityClass
from kubesim.core.scheme import ResourceType
from kubesim.registry.generic import GenericStore
from scheduler.priority import PriorityAdmission

__all__ = ["PriorityPlugin"]


class PriorityPlugin:
    """The Priority admission plugin over the store's PriorityClasses.

    Both mutating and validating, as upstream's:

    * pods, mutating phase: ``priorityClassName`` (or the ``globalDefault`` class) resolved into
      ``spec.priority`` and ``spec.preemptionPolicy`` on create, kept on update; an unknown class
      is a 403 ``pods "x" is forbidden: no PriorityClass with name foo was found``;
    * PriorityClasses, validating phase (after the registry's validation, so a class that is both
      invalid and a second default gets the 422): at most one ``globalDefault`` class (403).

    The class cache is the store itself (as the plugin's lister is an informer cache), rebuilt when
    the stored PriorityClasses change.
    """

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

    def admit(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """The mutating phase: pods get their priority (raises kube.apierrors.StatusError)."""
        if rt.kind != "Pod":
            return
        if op == "CREATE":
            self.admission().admit_pod_manifest(obj, "create")
        elif op == "UPDATE" and old is not None:
            self.admission().admit_pod_manifest(obj, "update", old)

    def validate(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """The validating phase: one ``globalDefault`` PriorityClass (the object is valid)."""
        del old  # upstream does not consult it either
        if rt.kind == "PriorityClass" and op in ("CREATE", "UPDATE"):
            self.admission().validate_class(PriorityClass.from_dict(obj), op.lower())
