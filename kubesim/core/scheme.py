"""The scheme: which kinds kubesim serves and how kube-apiserver treats each (the type table).

kube-apiserver knows its kinds through ``runtime.Scheme`` and a ``RESTMapper``, and each
resource through a REST storage plus a strategy; the facts a client can observe are gathered
here, one ``ResourceType`` per group/version/resource (``Scheme`` looks them up, and
``default_scheme`` says which are served); the objects themselves live in
``kubesim.core.store`` and are written by ``kubesim.registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

__all__ = [
    "STANDARD_VERBS",
    "ResourceType",
    "Scheme",
    "Subresource",
    "default_scheme",
]

STANDARD_VERBS: Final = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
STATUS_VERBS: Final = ("get", "patch", "update")

FieldGetter = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource in discovery; ``kind``/``group``/``version`` describe its body."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class ResourceType:
    """What a client can observe of one served resource:

    * discovery: group, version, kind, plural, singular, namespaced, short names, categories,
      verbs, subresources (``/api/v1``, ``/apis/{g}/{v}``, aggregated discovery);
    * strategy: whether ``status`` is a subresource (then the main resource ignores status
      changes and the status subresource ignores everything else), whether ``metadata.generation``
      is kept (kinds with a ``spec``), whether a delete answers with the object
      (``ReturnDeletedObject``) or a Success ``Status``, whether PUT may create
      (``AllowCreateOnUpdate``, true only for events here);
    * field selectors: the labels each kind's ``GetAttrs``/``ConvertFieldLabel`` accepts; any
      other label is a 400 ``field label not supported: <label>``.
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[Subresource, ...] = ()
    has_status: bool = False
    has_generation: bool = False
    return_deleted_object: bool = False
    allow_create_on_update: bool = False
    storage: str = ""  # shared storage name; the plural when empty
    fields: Mapping[str, FieldGetter] = field(default_factory=dict)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def storage_name(self) -> str:
        return self.storage or self.plural

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def field_labels(self) -> tuple[str, ...]:
        base = ("metadata.name", "metadata.namespace") if self.namespaced else ("metadata.name",)
        return base + tuple(self.fields)

    def field_value(self, obj: Mapping[str, Any], label: str) -> str:
        meta = obj.get("metadata") or {}
        if label == "metadata.name":
            return str(meta.get("name") or "")
        if label == "metadata.namespace":
            return str(meta.get("namespace") or "")
        return self.fields[label](obj)


def _path(*keys: str) -> FieldGetter:
    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, Mapping):
                return ""
            cur = cur.get(k)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


def _pod_ips(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    ips = status.get("podIPs") or []
    return ",".join(str(ip.get("ip", "")) for ip in ips if isinstance(ip, Mapping))


def _event_source(obj: Mapping[str, Any]) -> str:
    source = obj.get("source") or {}
    return str(source.get("component") or obj.get("reportingComponent") or "")


_POD_FIELDS: Final[dict[str, FieldGetter]] = {
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
    "status.phase": _path("status", "phase"),
    "status.podIP": _path("status", "podIP"),
    "status.podIPs": _pod_ips,
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}

_EVENT_FIELDS: Final[dict[str, FieldGetter]] = {
    "involvedObject.kind": _path("involvedObject", "kind"),
    "involvedObject.namespace": _path("involvedObject", "namespace"),
    "involvedObject.name": _path("involvedObject", "name"),
    "involvedObject.uid": _path("involvedObject", "uid"),
    "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _event_source,
    "type": _path("type"),
}

_WORKLOAD_CATEGORIES: Final = ("all",)


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, STATUS_VERBS)


def _scale() -> Subresource:
    """``/scale``: an ``autoscaling/v1`` Scale (``kubesim.registry.scale``)."""
    return Subresource("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


def _build() -> list[ResourceType]:
    return [
        ResourceType(
            "",
            "v1",
            "Namespace",
            "namespaces",
            "namespace",
            namespaced=False,
            short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            subresources=(_status("Namespace"),),
            has_status=True,
            return_deleted_object=True,
            fields={"status.phase": _path("status", "phase")},
        ),
        ResourceType(
            "",
            "v1",
            "Node",
            "nodes",
            "node",
            namespaced=False,
            short_names=("no",),
            subresources=(_status("Node"),),
            has_status=True,
            fields={"spec.unschedulable": _path("spec", "unschedulable")},
        ),
        ResourceType(
            "",
            "v1",
            "Pod",
            "pods",
            "pod",
            namespaced=True,
            short_names=("po",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(
                Subresource("binding", "Binding", ("create",)),
                Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
                _status("Pod"),
            ),
            has_status=True,
            has_generation=True,
            return_deleted_object=True,
            fields=_POD_FIELDS,
        ),
        ResourceType(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            namespaced=True,
            short_names=("rc",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_scale(), _status("ReplicationController")),
            has_status=True,
            has_generation=True,
            fields={"status.replicas": _path("status", "replicas")},
        ),
        ResourceType(
            "",
            "v1",
            "Event",
            "events",
            "event",
            namespaced=True,
            short_names=("ev",),
            allow_create_on_update=True,
            fields=_EVENT_FIELDS,
        ),
        ResourceType(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            "event",
            namespaced=True,
            short_names=("ev",),
            allow_create_on_update=True,
            storage="events",
            fields=_EVENT_FIELDS,
        ),
        ResourceType(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            namespaced=True,
            short_names=("pdb",),
            subresources=(_status("PodDisruptionBudget"),),
            has_status=True,
            has_generation=True,
        ),
        ResourceType(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            "daemonset",
            namespaced=True,
            short_names=("ds",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_status("DaemonSet"),),
            has_status=True,
            has_generation=True,
        ),
        ResourceType(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            namespaced=True,
            short_names=("deploy",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_scale(), _status("Deployment")),
            has_status=True,
            has_generation=True,
        ),
        ResourceType(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            namespaced=True,
            short_names=("rs",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_scale(), _status("ReplicaSet")),
            has_status=True,
            has_generation=True,
            fields={"status.replicas": _path("status", "replicas")},
        ),
        ResourceType(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            "statefulset",
            namespaced=True,
            short_names=("sts",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_scale(), _status("StatefulSet")),
            has_status=True,
            has_generation=True,
        ),
        ResourceType(
            "batch",
            "v1",
            "Job",
            "jobs",
            "job",
            namespaced=True,
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_status("Job"),),
            has_status=True,
            has_generation=True,
            fields={"status.successful": _path("status", "succeeded")},
        ),
        ResourceType(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            "lease",
            namespaced=True,
        ),
        ResourceType(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            "priorityclass",
            namespaced=False,
            short_names=("pc",),
        ),
        # Served so that workloads' Services reach the scheduler's default spreading; no
        # cluster IPs or endpoints are allocated.
        ResourceType(
            "",
            "v1",
            "Service",
            "services",
            "service",
            namespaced=True,
            short_names=("svc",),
            categories=_WORKLOAD_CATEGORIES,
            subresources=(_status("Service"),),
            has_status=True,
        ),
        *_access_control_types(),
    ]


# Kinds that exist only as a request: the answer is computed, nothing is stored.
_CREATE_ONLY: Final = ("create",)


def _access_control_types() -> list[ResourceType]:
    """Identities, credentials, RBAC, admission policies and the review kinds
    (``kubesim.plugins.authentication``, ``kubesim.plugins.authorization``)."""
    return [
        ResourceType(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            namespaced=True,
            short_names=("sa",),
            subresources=(
                Subresource("token", "TokenRequest", _CREATE_ONLY, "authentication.k8s.io", "v1"),
            ),
        ),
        ResourceType(
            "",
            "v1",
            "Secret",
            "secrets",
            "secret",
            namespaced=True,
            fields={"type": _path("type")},
        ),
        ResourceType(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            "configmap",
            namespaced=True,
            short_names=("cm",),
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            namespaced=False,
        ),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            namespaced=False,
        ),
        ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", namespaced=True),
        ResourceType(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            namespaced=True,
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            "validatingadmissionpolicy",
            namespaced=False,
            categories=("api-extensions",),
            subresources=(_status("ValidatingAdmissionPolicy"),),
            has_status=True,
            has_generation=True,
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding",
            namespaced=False,
            categories=("api-extensions",),
            has_generation=True,
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            "selfsubjectreview",
            namespaced=False,
            verbs=_CREATE_ONLY,
        ),
        ResourceType(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            "tokenreview",
            namespaced=False,
            verbs=_CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            "localsubjectaccessreview",
            namespaced=True,
            verbs=_CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            namespaced=False,
            verbs=_CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            "selfsubjectrulesreview",
            namespaced=False,
            verbs=_CREATE_ONLY,
        ),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            "subjectaccessreview",
            namespaced=False,
            verbs=_CREATE_ONLY,
        ),
    ]


# Group order in /apis, as kube-apiserver lists them (core first, then by priority).
GROUP_ORDER: Final = (
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "batch",
    "policy",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
)


class Scheme:
    """The served types: lookups by group/version/plural, by apiVersion/kind, by storage."""

    def __init__(self, types: Iterable[ResourceType]) -> None:
        self.types: list[ResourceType] = list(types)
        self._by_gvr = {(t.group, t.version, t.plural): t for t in self.types}
        self._by_gvk = {(t.group, t.version, t.kind): t for t in self.types}
        self._by_storage: dict[str, ResourceType] = {}
        for t in self.types:
            self._by_storage.setdefault(t.storage_name, t)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        return self._by_gvk.get((group, version, kind))

    def for_storage(self, storage: str) -> ResourceType:
        """The canonical (first registered) type of a storage, e.g. core events."""
        return self._by_storage[storage]

    def groups(self) -> list[tuple[str, list[str]]]:
        """Non-core groups with their versions, in discovery order."""
        found: dict[str, list[str]] = {}
        for t in self.types:
            if t.group and t.version not in found.setdefault(t.group, []):
                found[t.group].append(t.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        return sorted(found.items(), key=lambda kv: order.get(kv[0], len(order)))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self.types if t.group == group and t.version == version]

    def is_virtual(self, rt: ResourceType) -> bool:
        """A create-only review kind: answered, never stored (SelfSubjectAccessReview, ...)."""
        return rt.verbs == _CREATE_ONLY

    def storages(self) -> list[str]:
        seen: list[str] = []
        for t in self.types:
            if t.verbs != _CREATE_ONLY and t.storage_name not in seen:
                seen.append(t.storage_name)
        return seen


def without_subresource(
    types: Iterable[ResourceType], plural: str, name: str
) -> list[ResourceType]:
    """The types with ``plural/name`` removed from discovery."""
    return [
        replace(t, subresources=tuple(s for s in t.subresources if s.name != name))
        if t.plural == plural and not t.group
        else t
        for t in types
    ]


def default_scheme(*, eviction_subresource: bool = True) -> Scheme:
    """The served kinds; ``eviction_subresource=False`` is a server without ``pods/eviction``.

    Clients probe discovery for ``pods/eviction`` before choosing the Eviction API over a plain
    DELETE (``kubectl drain``'s ``CheckEvictionSupport``); hiding it lets that fallback be tested.

    ``replicationcontrollers`` are served (with ``scale``) because drains, the disruption
    controller and ``kubectl get all`` meet pods they own on old clusters. ``events`` exist in
    two groups with one storage, as in kube (``events.k8s.io/v1`` is a conversion of the core
    ``v1`` Event); the converters live in ``kubesim.core.events``.
    """
    types = _build()
    if not eviction_subresource:
        types = without_subresource(types, "pods", "eviction")
    return Scheme(types)
