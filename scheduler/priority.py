"""PriorityClass validation and the Priority admission plugin, with kube-apiserver's messages.

kubesim must answer exactly as a real kube-apiserver does, so this reproduces
``pkg/apis/scheduling/validation`` (``validate_priority_class``,
``validate_priority_class_update``) and ``plugin/pkg/admission/priority``
(``PriorityAdmission``). The kubelet's critical-pod rules (``pkg/kubelet/types``) live in
``kube.critical`` (the agent needs them too) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from kube.apierrors import AdmissionError, FieldError, GoNamedString, go_bool
from kube.critical import (
    API_SERVER_SOURCE,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
    CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_SOURCE_ANNOTATION_KEY,
    FILE_SOURCE,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_CRITICAL_PRIORITY,
    SYSTEM_NODE_CRITICAL,
    SYSTEM_PRIORITY_CLASS_PREFIX,
    is_critical_pod,
    is_critical_pod_based_on_priority,
    is_mirror_pod,
    is_node_critical_pod,
    is_static_pod,
    preemptable,
)
from kube.labels import dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from kube.objects import (
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    InvalidObject,
    Pod,
    PriorityClass,
)

__all__ = [
    "API_SERVER_SOURCE",
    "CONFIG_FIRST_SEEN_ANNOTATION_KEY",
    "CONFIG_HASH_ANNOTATION_KEY",
    "CONFIG_MIRROR_ANNOTATION_KEY",
    "CONFIG_SOURCE_ANNOTATION_KEY",
    "DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS",
    "FILE_SOURCE",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "POD_RESOURCE",
    "PRIORITY_CLASS_KIND",
    "PRIORITY_CLASS_RESOURCE",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "SYSTEM_PRIORITY_CLASS_PREFIX",
    "PriorityAdmission",
    "is_critical_pod",
    "is_critical_pod_based_on_priority",
    "is_known_system_priority_class",
    "is_mirror_pod",
    "is_node_critical_pod",
    "is_static_pod",
    "preemptable",
    "system_priority_classes",
    "validate_priority_class",
    "validate_priority_class_delete",
    "validate_priority_class_update",
]

# --- constants (pkg/apis/scheduling/types.go) ------------------------------------------------

DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0

PRIORITY_CLASS_KIND: Final = "PriorityClass.scheduling.k8s.io"  # GroupKind.String()
PRIORITY_CLASS_RESOURCE: Final = "priorityclasses.scheduling.k8s.io"  # GroupResource.String()
POD_RESOURCE: Final = "pods"


_PREEMPTION_POLICIES: Final = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
_FIELD_IMMUTABLE: Final = "field is immutable"


def system_priority_classes() -> list[PriorityClass]:
    """The classes kube-apiserver creates at bootstrap (``SystemPriorityClasses``): ordinary
    objects, whose deletion the registry refuses (``validate_priority_class_delete``)."""
    return [
        PriorityClass(
            name=SYSTEM_NODE_CRITICAL,
            value=SYSTEM_CRITICAL_PRIORITY + 1000,
            description=(
                "Used for system critical pods that must not be moved from their current node."
            ),
        ),
        PriorityClass(
            name=SYSTEM_CLUSTER_CRITICAL,
            value=SYSTEM_CRITICAL_PRIORITY,
            description=(
                "Used for system critical pods that must run in the cluster, but can be moved"
                " to another node if necessary."
            ),
        ),
    ]


def is_known_system_priority_class(name: str, value: int, global_default: bool) -> tuple[bool, str]:
    """``IsKnownSystemPriorityClass``: (True, "") or (False, the reason)."""
    for spc in system_priority_classes():
        if spc.name == name:
            if spc.value != value:
                return False, f"value of {spc.name} PriorityClass must be {spc.value}"
            if spc.global_default != global_default:
                return False, (
                    f"globalDefault of {spc.name} PriorityClass must be"
                    f" {go_bool(spc.global_default)}"
                )
            return True, ""
    return False, f"{name} is not a known system priority class"


# --- PriorityClass validation (pkg/apis/scheduling/validation) -------------------------------


def _validate_labels_and_annotations(pc: PriorityClass) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in pc.labels.items():
        errs.extend(
            FieldError.invalid("metadata.labels", key, m) for m in qualified_name_errors(key)
        )
        errs.extend(
            FieldError.invalid("metadata.labels", value, m) for m in label_value_errors(value)
        )
    for key in pc.annotations:
        errs.extend(
            FieldError.invalid("metadata.annotations", key, m)
            for m in qualified_name_errors(key.lower())
        )
    return errs


def validate_priority_class(pc: PriorityClass) -> list[FieldError]:
    """``ValidatePriorityClass``: the create-time rules, in upstream order.

    A failure is a 422 ``Invalid`` Status; ``kube.apierrors.new_invalid`` builds its message
    and ``causes`` the way ``apierrors.NewInvalid`` does, and ``FieldError`` renders as
    ``field.Error.Error()``. In kube-apiserver the order is: mutating admission (pods), then
    this field validation (422), then validating admission (403, PriorityClasses). The
    registry clears ``metadata.namespace`` of a cluster-scoped object before validation
    (``EnsureObjectNamespaceMatchesRequestNamespace``), so the "namespace not allowed" rule is
    only reachable by calling this function directly."""
    errs: list[FieldError] = []
    # ValidateObjectMeta(cluster-scoped, NameIsDNSSubdomain)
    if not pc.name:
        errs.append(FieldError.required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(
            FieldError.invalid("metadata.name", pc.name, m)
            for m in dns1123_subdomain_errors(pc.name)
        )
    if pc.namespace:
        errs.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    errs.extend(_validate_labels_and_annotations(pc))

    if pc.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        known, reason = is_known_system_priority_class(pc.name, pc.value, pc.global_default)
        if not known:
            errs.append(
                FieldError.forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are"
                    f" reserved for system use only. error: {reason}",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            FieldError.forbidden(
                "value",
                "maximum allowed value of a user defined priority is"
                f" {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    errs.extend(_validate_preemption_policy(pc.preemption_policy))
    return errs


def _validate_preemption_policy(policy: str) -> list[FieldError]:
    """``ValidatePreemptionPolicy`` (the v1 default has already replaced nil)."""
    if policy in _PREEMPTION_POLICIES:
        return []
    if not policy:
        return [FieldError.required("preemptionPolicy")]
    # The value is a *PreemptionPolicy upstream, hence JSON-rendered.
    return [
        FieldError.not_supported("preemptionPolicy", GoNamedString(policy), _PREEMPTION_POLICIES)
    ]


def validate_priority_class_update(old: PriorityClass, new: PriorityClass) -> list[FieldError]:
    """``ValidatePriorityClassUpdate``: name, namespace, value and preemptionPolicy immutable.

    Description and globalDefault may change. As the registry does before validating, an
    update that leaves ``uid`` empty keeps the stored one; ``resourceVersion`` is not
    required (PriorityClass allows unconditional updates, so the registry fills it in).
    """
    errs: list[FieldError] = []
    if new.name != old.name:
        errs.append(FieldError.invalid("metadata.name", new.name, _FIELD_IMMUTABLE))
    if new.namespace != old.namespace:
        errs.append(FieldError.invalid("metadata.namespace", new.namespace, _FIELD_IMMUTABLE))
    if new.uid and new.uid != old.uid:
        errs.append(FieldError.invalid("metadata.uid", GoNamedString(new.uid), _FIELD_IMMUTABLE))
    errs.extend(_validate_labels_and_annotations(new))
    if new.value != old.value:
        errs.append(FieldError.forbidden("value", "may not be changed in an update."))
    if new.preemption_policy != old.preemption_policy:
        errs.append(
            FieldError.invalid(
                "preemptionPolicy", GoNamedString(new.preemption_policy), _FIELD_IMMUTABLE
            )
        )
    return errs


def validate_priority_class_delete(name: str) -> None:
    """The registry's ``REST.Delete``: the system classes cannot be deleted (403)."""
    if any(spc.name == name for spc in system_priority_classes()):
        raise AdmissionError(
            PRIORITY_CLASS_RESOURCE, name, "this is a system priority class and cannot be deleted"
        )


# --- Priority admission (plugin/pkg/admission/priority) --------------------------------------

_OPERATIONS: Final = frozenset({"create", "update", "delete", "connect"})


def _operation(operation: str) -> str:
    op = operation.lower()
    if op not in _OPERATIONS:
        raise ValueError(
            f"unknown admission operation {operation!r}; expected one of CREATE, UPDATE,"
            " DELETE, CONNECT"
        )
    return op


@dataclass(frozen=True, slots=True)
class _PriorityFields:
    """The three pod spec fields the plugin reads and writes, whatever holds them."""

    priority_class_name: str
    priority: int | None
    preemption_policy: str | None


class PriorityAdmission:
    """The ``Priority`` admission plugin over a PriorityClass cache (its lister).

    Pods are mutated on create (class resolved to a value and a preemption policy, the
    lowest-value ``globalDefault`` class used when none is named) and keep their priority on
    update; PriorityClasses are checked for a second ``globalDefault``. A rejection is a 403
    ``Forbidden`` Status built as ``admission.NewForbidden`` does. The system classes have no
    special case, as upstream since kubernetes/kubernetes#76310 (2019) dropped the
    kube-system-only restriction.

    ``set_class``/``delete_class`` are the informer's add/update/delete events; the cache holds
    whatever the API server stores, the system classes included (seed it with
    ``system_priority_classes()`` as the bootstrap hook does).
    """

    __slots__ = ("_classes", "_default", "_default_valid")

    def __init__(self, classes: Iterable[PriorityClass] = ()) -> None:
        self._classes: dict[str, PriorityClass] = {}
        self._default: PriorityClass | None = None
        self._default_valid = False
        for pc in classes:
            self.set_class(pc)

    # --- the cache ----------------------------------------------------------------------

    @property
    def classes(self) -> Mapping[str, PriorityClass]:
        """Read-only view, by name."""
        return MappingProxyType(self._classes)

    def set_class(self, pc: PriorityClass) -> None:
        self._classes[pc.name] = pc
        self._default_valid = False

    def delete_class(self, name: str) -> PriorityClass | None:
        """Forget a class; pods already admitted keep their priority. Returns the class."""
        removed = self._classes.pop(name, None)
        self._default_valid = False
        return removed

    def default_priority_class(self) -> PriorityClass | None:
        """``getDefaultPriorityClass``: the lowest-value ``globalDefault`` class.

        Several defaults can exist after a race; upstream takes the lowest value and, among
        equal values, whichever the lister yields first. Here ties go to the smallest name so
        the answer never depends on insertion order.
        """
        if not self._default_valid:
            best: PriorityClass | None = None
            for pc in self._classes.values():
                if pc.global_default and (
                    best is None or (pc.value, pc.name) < (best.value, best.name)
                ):
                    best = pc
            self._default = best
            self._default_valid = True
        return self._default

    def default_priority(self) -> tuple[str, int]:
        """``getDefaultPriority`` without the policy: (name, value), or ("", 0)."""
        dpc = self.default_priority_class()
        if dpc is None:
            return "", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS
        return dpc.name, dpc.value

    # --- PriorityClass admission (Validate) ---------------------------------------------

    def validate_class(
        self,
        pc: PriorityClass,
        operation: str = "create",
        old: PriorityClass | None = None,
        *,
        subresource: str = "",
    ) -> None:
        """``validatePriorityClass``: at most one ``globalDefault`` class.

        Creating a default while one exists is forbidden; an update is forbidden only when the
        existing default is another class. ``old`` is accepted for symmetry with the API call
        and, as upstream, not consulted. Raises ``AdmissionError``.
        """
        del old
        op = _operation(operation)
        if subresource or op not in ("create", "update") or not pc.global_default:
            return
        dpc = self.default_priority_class()
        if dpc is None:
            return
        if op == "create" or dpc.name != pc.name:
            raise AdmissionError(
                PRIORITY_CLASS_RESOURCE,
                pc.name or "Unknown",
                f"PriorityClass {dpc.name} is already marked as default."
                " Only one default can exist",
            )

    # --- pod admission (Admit) ----------------------------------------------------------

    def admit_pod(
        self,
        pod: Pod,
        operation: str = "create",
        old: Pod | None = None,
        *,
        subresource: str = "",
    ) -> Pod:
        """``admitPod`` on a typed pod: the admitted pod, or ``AdmissionError``.

        Create resolves ``priorityClassName`` (the default class when empty) to
        ``spec_priority`` and ``preemption_policy``; update copies both from ``old`` when the
        new pod lacks them. A pod the rules leave unchanged is returned as is.
        """
        new = _PriorityFields(pod.priority_class_name, pod.spec_priority, pod.preemption_policy)
        old_fields = None
        if old is not None:
            old_fields = _PriorityFields(
                old.priority_class_name, old.spec_priority, old.preemption_policy
            )
        result = self._admit(
            new,
            operation=operation,
            old=old_fields,
            subresource=subresource,
            name=pod.name or "Unknown",
        )
        if result == new:
            return pod
        return pod.with_changes(
            priority_class_name=result.priority_class_name,
            spec_priority=result.priority,
            preemption_policy=result.preemption_policy,
        )

    def admit_pod_manifest(
        self,
        manifest: MutableMapping[str, Any],
        operation: str = "create",
        old_manifest: Mapping[str, Any] | None = None,
        *,
        subresource: str = "",
    ) -> None:
        """``admitPod`` on a raw pod manifest, changed in place (same rules as ``admit_pod``).

        Before name generation, as in kube-apiserver: a pod with only ``generateName`` is
        reported by its prefix, one with neither as "Unknown".
        """
        name = _manifest_name(manifest)
        new = _read_fields(manifest, name)
        old_fields = None
        if old_manifest is not None:
            old_fields = _read_fields(old_manifest, _manifest_name(old_manifest))
        result = self._admit(
            new, operation=operation, old=old_fields, subresource=subresource, name=name
        )
        if result == new:
            return
        spec = manifest.get("spec")
        if spec is None:
            spec = manifest["spec"] = {}
        if result.priority_class_name:
            spec["priorityClassName"] = result.priority_class_name
        if result.priority is not None:
            spec["priority"] = result.priority
        if result.preemption_policy is not None:
            spec["preemptionPolicy"] = result.preemption_policy

    def _admit(
        self,
        new: _PriorityFields,
        *,
        operation: str,
        old: _PriorityFields | None,
        subresource: str,
        name: str,
    ) -> _PriorityFields:
        """The one implementation of ``admitPod``'s rules."""
        op = _operation(operation)
        if subresource or op not in ("create", "update"):
            return new
        if op == "update":
            if old is None:
                raise ValueError(f"pod {name!r}: an update needs the old object")
            # API validation forbids changing these, so keeping the stored ones is safe.
            return _PriorityFields(
                new.priority_class_name,
                old.priority if new.priority is None else new.priority,
                old.preemption_policy if new.preemption_policy is None else new.preemption_policy,
            )

        class_name = new.priority_class_name
        if not class_name:
            dpc = self.default_priority_class()
            if dpc is None:
                resolved_name = ""
                priority: int = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS
                policy: str | None = PREEMPT_LOWER_PRIORITY
            else:
                resolved_name, priority, policy = dpc.name, dpc.value, dpc.preemption_policy
        else:
            pc = self._classes.get(class_name)
            if pc is None:
                raise AdmissionError(
                    POD_RESOURCE, name, f"no PriorityClass with name {class_name} was found"
                )
            resolved_name, priority, policy = class_name, pc.value, pc.preemption_policy

        if new.priority is not None and new.priority != priority:
            raise AdmissionError(
                POD_RESOURCE,
                name,
                f"the integer value of priority ({new.priority}) must not be provided in pod"
                f" spec; priority admission controller computed {priority} from the given"
                " PriorityClass name",
            )
        result_policy = new.preemption_policy
        if policy:  # a class without a policy leaves the pod's as it is
            if new.preemption_policy is not None and new.preemption_policy != policy:
                raise AdmissionError(
                    POD_RESOURCE,
                    name,
                    f"the string value of PreemptionPolicy ({new.preemption_policy}) must not be"
                    f" provided in pod spec; priority admission controller computed {policy}"
                    " from the given PriorityClass name",
                )
            result_policy = policy
        return _PriorityFields(resolved_name, priority, result_policy)


def _manifest_name(manifest: Mapping[str, Any]) -> str:
    meta = manifest.get("metadata")
    if isinstance(meta, Mapping):
        for key in ("name", "generateName"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                return value
    return "Unknown"


def _read_fields(manifest: Mapping[str, Any], name: str) -> _PriorityFields:
    """The priority fields of a pod manifest, type-checked as the decoder would."""
    spec = manifest.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise InvalidObject("Pod", name, "spec", f"must be an object, not {type(spec).__name__}")
    class_name = spec.get("priorityClassName")
    if class_name is not None and not isinstance(class_name, str):
        raise InvalidObject(
            "Pod", name, "spec.priorityClassName", f"must be a string, not {class_name!r}"
        )
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise InvalidObject("Pod", name, "spec.priority", f"must be an integer, not {priority!r}")
    policy = spec.get("preemptionPolicy")
    if policy is not None and not isinstance(policy, str):
        raise InvalidObject(
            "Pod", name, "spec.preemptionPolicy", f"must be a string, not {policy!r}"
        )
    return _PriorityFields(class_name or "", priority, policy)
