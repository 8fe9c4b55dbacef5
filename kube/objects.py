"""Kubernetes objects as typed, immutable values.

Manifests (camelCase dicts, as in YAML) are converted once, at the boundary, by
``X.from_dict``; the policy code never looks at raw dicts. Conversion reads every field through
``kube.reader`` and raises ``InvalidObject`` naming the object and the field; files and YAML
text become documents in ``kube.manifests`` (``load_objects`` here types them). Both modules'
names are handed out here too. Resource maps hold integers: CPU in millicores, everything else
in units (see ``quantity``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final

import kube.manifests
import kube.reader
import kube.resourcehelper
from kube.ints import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from kube.labels import (
    IN,
    NODE_SELECTOR_OPERATORS,
    NOT_IN,
    LabelSelector,
    Requirement,
    SelectorError,
    make_requirement,
)
from kube.manifests import *  # noqa: F403
from kube.manifests import InvalidManifest, manifest_documents
from kube.quantity import CPU, QuantityError, resource_value
from kube.reader import *  # noqa: F403
from kube.reader import NEGATIVE, InvalidObject, Reader
from kube.resourcehelper import *  # noqa: F403
from kube.resourcehelper import aggregate_requests
from kube.strict import Validation
from kube.times import parse_time

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS",
    "DO_NOT_SCHEDULE",
    "INT32_MAX",
    "INT32_MIN",
    "NODE_INCLUSION_POLICIES",
    "PREEMPT_LOWER_PRIORITY",
    "PREEMPT_NEVER",
    "SCHEDULE_ANYWAY",
    "TAINT_EFFECTS",
    "Affinity",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "IntOrString",
    "KubeObject",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorTerm",
    "OwnerReference",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodDisruptionBudget",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "ReplicaSet",
    "ReplicationController",
    "ResourceList",
    "Service",
    "StatefulSet",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
    "load_objects",
    "object_from_dict",
    "pod_updated",
]
# The reader, the manifests' loading and the request arithmetic, handed out here as before they
# had modules of their own.
__all__ += kube.reader.__all__ + kube.manifests.__all__ + kube.resourcehelper.__all__

PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"
PREEMPT_NEVER: Final = "Never"

# What the API server writes into a pod spec that leaves them out (SetDefaults_PodSpec).
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"  # v1.DefaultSchedulerName
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: Final = 30  # v1.DefaultTerminationGracePeriodSeconds

DEFAULT_MILLI_CPU_REQUEST: Final = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest

ResourceList = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class _Meta:
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    resource_version: str
    generation: int
    creation_timestamp: float | None
    deletion_timestamp: float | None
    owner_references: tuple[OwnerReference, ...]


def _read_meta(r: Reader, data: Mapping[str, Any], *, namespaced: bool) -> _Meta:
    meta = r.mapping(data, "metadata", "metadata")
    name = r.string(meta, "name", "metadata.name")
    if not name:
        raise r.fail("metadata.name", "Required value: name is required")
    namespace = r.string(meta, "namespace", "metadata.namespace", "default" if namespaced else "")
    owners = []
    for path, ref in r.items(meta, "ownerReferences", "metadata.ownerReferences"):
        owners.append(
            OwnerReference(
                api_version=r.string(ref, "apiVersion", f"{path}.apiVersion"),
                kind=r.string(ref, "kind", f"{path}.kind"),
                name=r.string(ref, "name", f"{path}.name"),
                uid=r.string(ref, "uid", f"{path}.uid"),
                controller=r.boolean(ref, "controller", f"{path}.controller"),
            )
        )
    return _Meta(
        name=name,
        namespace=namespace,
        uid=r.string(meta, "uid", "metadata.uid"),
        labels=r.string_map(meta, "labels", "metadata.labels"),
        annotations=r.string_map(meta, "annotations", "metadata.annotations"),
        resource_version=str(meta.get("resourceVersion") or ""),
        generation=r.integer(meta, "generation", "metadata.generation", hi=INT64_MAX) or 0,
        creation_timestamp=r.time(meta, "creationTimestamp", "metadata.creationTimestamp"),
        deletion_timestamp=r.time(meta, "deletionTimestamp", "metadata.deletionTimestamp"),
        owner_references=tuple(owners),
    )


# --- small value types -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    def __str__(self) -> str:
        # ``{key: value}`` as the TaintToleration filter prints it.
        return f"{{{self.key}: {self.value}}}"


TAINT_EFFECTS: Final = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)
    restart_policy: str | None = None
    ports: tuple[ContainerPort, ...] = ()
    image: str = ""

    @property
    def is_restartable_init(self) -> bool:
        return self.restart_policy == "Always"


@dataclass(frozen=True, slots=True)
class Volume:
    """A pod volume: its name and source kind, and for an emptyDir its medium and size limit.

    The kubelet's eviction manager reads both: an emptyDir over its ``sizeLimit`` gets the pod
    evicted, and only an emptyDir on the default medium counts as the pod's disk usage
    (``IsLocalEphemeralVolume``) — a ``Memory`` one is tmpfs, charged to the pod's memory.
    """

    name: str
    source: str  # the volume-source key: "emptyDir", "hostPath", "persistentVolumeClaim", …
    medium: str = ""  # emptyDir.medium: "" (node disk), "Memory", "HugePages", "HugePages-<size>"
    size_limit: int | None = None  # emptyDir.sizeLimit in bytes; None when unset


def _read_volume(r: Reader, v: Mapping[str, Any], path: str) -> Volume:
    name = r.string(v, "name", f"{path}.name")
    source = next((k for k in v if k != "name"), "")
    if source != "emptyDir":
        return Volume(name, source)
    empty_dir = r.mapping(v, "emptyDir", f"{path}.emptyDir")
    medium = r.string(empty_dir, "medium", f"{path}.emptyDir.medium")
    size_limit = None
    raw = empty_dir.get("sizeLimit")
    if raw is not None:
        try:
            size_limit = resource_value("ephemeral-storage", raw)
        except QuantityError as exc:
            raise r.fail(f"{path}.emptyDir.sizeLimit", f"invalid quantity {raw!r}: {exc}") from None
    return Volume(name, source, medium, size_limit)


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[i]`` as written (the scheduler applies defaults).

    ``label_selector`` None is a missing selector, which matches no pod; ``min_domains``,
    ``node_affinity_policy`` and ``node_taints_policy`` None are unset fields.
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopologySpreadConstraint:
        """From a KubeSchedulerConfiguration-style mapping (camelCase); raises ValueError."""
        r = Reader("TopologySpreadConstraint", {})
        return _read_spread_constraint(r, data, "")


DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
NODE_INCLUSION_POLICIES: Final = ("Honor", "Ignore")


def _read_spread_constraint(r: Reader, c: Mapping[str, Any], p: str) -> TopologySpreadConstraint:
    at = f"{p}." if p else ""
    max_skew = r.integer(c, "maxSkew", f"{at}maxSkew")
    if max_skew is None or max_skew <= 0:
        raise r.fail(f"{at}maxSkew", f"Invalid value: {max_skew}: must be greater than zero")
    key = r.string(c, "topologyKey", f"{at}topologyKey")
    if not key:
        raise r.fail(f"{at}topologyKey", "Required value: can not be empty")
    when = r.string(c, "whenUnsatisfiable", f"{at}whenUnsatisfiable")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise r.fail(
            f"{at}whenUnsatisfiable",
            f'Unsupported value: "{when}": supported values: "DoNotSchedule", "ScheduleAnyway"',
        )
    min_domains = r.integer(c, "minDomains", f"{at}minDomains")
    if min_domains is not None and min_domains <= 0:
        raise r.fail(f"{at}minDomains", f"Invalid value: {min_domains}: must be greater than zero")
    policies: list[str | None] = []
    for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        policy = r.optional_string(c, name, f"{at}{name}")
        if policy is not None and policy not in NODE_INCLUSION_POLICIES:
            raise r.fail(
                f"{at}{name}",
                f'Unsupported value: "{policy}": supported values: "Honor", "Ignore"',
            )
        policies.append(policy)
    keys = [str(k) for k in r.seq(c, "matchLabelKeys", f"{at}matchLabelKeys")]
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=when,
        label_selector=r.selector(c, "labelSelector", f"{at}labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=policies[0],
        node_taints_policy=policies[1],
        match_label_keys=tuple(keys),
    )


@dataclass(frozen=True, slots=True)
class ContainerImage:
    """One ``status.images`` entry of a node: the names it is known by and its size."""

    names: tuple[str, ...]
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class PodCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


# --- affinity --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed; an empty term matches no node (``nodeaffinity`` semantics)."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, node: Node) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        labels = node.labels
        for req in self.match_expressions:
            if not req.matches(labels):
                return False
        if self.match_fields:
            fields = {"metadata.name": node.name}
            for req in self.match_fields:
                if not req.matches(fields):
                    return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node: Node) -> bool:
        return any(t.matches(node) for t in self.terms)


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: NodeSelector | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """One (anti-)affinity term.

    ``label_selector`` already includes the requirements the API server derives from
    ``matchLabelKeys`` (``key In (pod's value)``) and ``mismatchLabelKeys`` (``key NotIn``);
    ``namespaces`` is the effective namespace set: the listed ones, or the pod's own namespace
    when neither ``namespaces`` nor ``namespaceSelector`` is given
    (``getNamespacesFromPodAffinityTerm``).
    """

    label_selector: LabelSelector | None
    topology_key: str
    namespaces: frozenset[str] = frozenset()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    def matches_namespace(self, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
        if namespace in self.namespaces:
            return True
        sel = self.namespace_selector
        return sel is not None and sel.matches(namespace_labels)

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """``AffinityTerm.Matches``: namespace, then labels (a nil selector matches nothing)."""
        if not self.matches_namespace(pod.namespace, namespace_labels):
            return False
        return self.label_selector is not None and self.label_selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAntiAffinity:
    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


# matchFields take In and NotIn only.
_FIELD_OPERATORS: Final = frozenset({IN, NOT_IN})


def _read_node_selector_term(r: Reader, data: Mapping[str, Any], path: str) -> NodeSelectorTerm:
    exprs: list[Requirement] = []
    for p, e in r.items(data, "matchExpressions", f"{path}.matchExpressions"):
        exprs.append(_read_requirement(r, e, p, NODE_SELECTOR_OPERATORS))
    fields: list[Requirement] = []
    for p, e in r.items(data, "matchFields", f"{path}.matchFields"):
        req = _read_requirement(r, e, p, _FIELD_OPERATORS)
        if req.key != "metadata.name":
            raise r.fail(
                f"{p}.key", f'Unsupported value: "{req.key}": supported values: "metadata.name"'
            )
        if len(req.values) != 1:
            raise r.fail(f"{p}.values", "must have one element")
        fields.append(req)
    return NodeSelectorTerm(tuple(exprs), tuple(fields))


def _read_requirement(
    r: Reader, data: Mapping[str, Any], path: str, allowed: frozenset[str]
) -> Requirement:
    key = r.string(data, "key", f"{path}.key")
    op = r.string(data, "operator", f"{path}.operator")
    values = [str(v) for v in r.seq(data, "values", f"{path}.values")]
    try:
        if key == "metadata.name":  # matchFields keys are field paths, not label keys
            if op not in allowed:
                raise SelectorError(f'"{op}" is not a valid label selector operator')
            return Requirement(key, op, tuple(sorted(set(values))))
        return make_requirement(key, op, values, allowed=allowed)
    except SelectorError as exc:
        raise r.fail(path, str(exc)) from None


def _read_pod_affinity_term(
    r: Reader,
    data: Mapping[str, Any],
    path: str,
    pod_namespace: str,
    pod_labels: Mapping[str, str],
) -> PodAffinityTerm:
    selector = r.selector(data, "labelSelector", f"{path}.labelSelector")
    match_keys = tuple(str(k) for k in r.seq(data, "matchLabelKeys", f"{path}.matchLabelKeys"))
    mismatch_keys = tuple(
        str(k) for k in r.seq(data, "mismatchLabelKeys", f"{path}.mismatchLabelKeys")
    )
    if selector is not None and (match_keys or mismatch_keys):
        extra = [Requirement(k, IN, (pod_labels[k],)) for k in match_keys if k in pod_labels]
        extra += [
            Requirement(k, NOT_IN, (pod_labels[k],)) for k in mismatch_keys if k in pod_labels
        ]
        selector = LabelSelector(
            tuple(sorted((*selector.requirements, *extra), key=lambda q: q.key)),
            selector.match_labels,
        )
    topology_key = r.string(data, "topologyKey", f"{path}.topologyKey")
    if not topology_key:
        raise r.fail(f"{path}.topologyKey", "Required value: can not be empty")
    namespaces = [str(n) for n in r.seq(data, "namespaces", f"{path}.namespaces")]
    ns_selector = r.selector(data, "namespaceSelector", f"{path}.namespaceSelector")
    if not namespaces and ns_selector is None:
        namespaces = [pod_namespace]
    return PodAffinityTerm(
        label_selector=selector,
        topology_key=topology_key,
        namespaces=frozenset(namespaces),
        namespace_selector=ns_selector,
        match_label_keys=match_keys,
        mismatch_label_keys=mismatch_keys,
    )


def _read_weight(r: Reader, data: Mapping[str, Any], path: str) -> int:
    weight = r.integer(data, "weight", f"{path}.weight", lo=1, hi=100)
    if weight is None:
        raise r.fail(f"{path}.weight", "Required value")
    return weight


def _read_affinity(
    r: Reader, data: Mapping[str, Any], ns: str, labels: Mapping[str, str]
) -> Affinity | None:
    if not data:
        return None
    base = "spec.affinity"
    node_affinity = None
    na = r.mapping(data, "nodeAffinity", f"{base}.nodeAffinity")
    if na:
        p = f"{base}.nodeAffinity"
        req = r.mapping(na, "requiredDuringSchedulingIgnoredDuringExecution", f"{p}.required")
        required = None
        if req:
            rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
            terms = [
                _read_node_selector_term(r, t, tp)
                for tp, t in r.items(req, "nodeSelectorTerms", f"{rp}.nodeSelectorTerms")
            ]
            required = NodeSelector(tuple(terms))
        preferred = []
        pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution"
        for tp, t in r.items(na, "preferredDuringSchedulingIgnoredDuringExecution", pp):
            pref = r.mapping(t, "preference", f"{tp}.preference")
            preferred.append(
                PreferredSchedulingTerm(
                    _read_weight(r, t, tp), _read_node_selector_term(r, pref, f"{tp}.preference")
                )
            )
        node_affinity = NodeAffinity(required, tuple(preferred))

    def pod_terms(
        section: Mapping[str, Any], p: str
    ) -> tuple[tuple[PodAffinityTerm, ...], tuple[WeightedPodAffinityTerm, ...]]:
        rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
        required = tuple(
            _read_pod_affinity_term(r, t, tp, ns, labels)
            for tp, t in r.items(section, "requiredDuringSchedulingIgnoredDuringExecution", rp)
        )
        pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution"
        preferred = []
        for tp, t in r.items(section, "preferredDuringSchedulingIgnoredDuringExecution", pp):
            term = r.mapping(t, "podAffinityTerm", f"{tp}.podAffinityTerm")
            preferred.append(
                WeightedPodAffinityTerm(
                    _read_weight(r, t, tp),
                    _read_pod_affinity_term(r, term, f"{tp}.podAffinityTerm", ns, labels),
                )
            )
        return required, tuple(preferred)

    pod_affinity = None
    pa = r.mapping(data, "podAffinity", f"{base}.podAffinity")
    if pa:
        pod_affinity = PodAffinity(*pod_terms(pa, f"{base}.podAffinity"))
    pod_anti_affinity = None
    paa = r.mapping(data, "podAntiAffinity", f"{base}.podAntiAffinity")
    if paa:
        pod_anti_affinity = PodAntiAffinity(*pod_terms(paa, f"{base}.podAntiAffinity"))
    if node_affinity is None and pod_affinity is None and pod_anti_affinity is None:
        return None
    return Affinity(node_affinity, pod_affinity, pod_anti_affinity)


# --- Pod -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Pod:
    """A pod as the scheduler, the agent and the drain planner see it.

    Identity is ``namespace/name`` (``key``); two values for the same pod compare by identity
    only, so use ``key`` or ``uid`` to relate versions of one pod.

    Derived values are computed at construction and stored, because the hot paths read them
    for every pod on every node:

    * ``priority`` is ``spec.priority`` or 0 (``corev1helpers.PodPriority``);
    * ``requests`` is the effective request of ``resourcehelper.PodRequests``: the sum of the
      app containers and restartable (sidecar) init containers, at least the peak of each
      ordinary init container plus the sidecars started before it, pod-level
      ``resources.requests`` replacing cpu/memory when set, plus ``overhead``;
    * ``non_zero_requests`` is the same with the scheduler's defaults (100m CPU, 200Mi memory)
      for containers that do not state cpu/memory; it is used only for scoring.
    """

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: float | None = None
    deletion_timestamp: float | None = None
    owner_references: tuple[OwnerReference, ...] = ()
    # spec
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = field(default_factory=dict)
    pod_requests: ResourceList = field(default_factory=dict)  # spec.resources.requests
    pod_limits: ResourceList = field(default_factory=dict)  # spec.resources.limits
    node_name: str = ""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    spec_priority: int | None = None  # spec.priority exactly as given
    priority_class_name: str = ""
    preemption_policy: str | None = None
    scheduling_gates: tuple[str, ...] = ()
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    termination_grace_period_seconds: int | None = None
    volumes: tuple[Volume, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    resource_claims: tuple[str, ...] = ()  # spec.resourceClaims[*].name
    # status
    phase: str = ""
    conditions: tuple[PodCondition, ...] = ()
    start_time: float | None = None
    nominated_node_name: str = ""
    qos_class: str = ""  # status.qosClass as the API server set it ("" when absent)
    # derived
    key: str = field(init=False)
    priority: int = field(init=False)
    requests: ResourceList = field(init=False)
    non_zero_requests: ResourceList = field(init=False)

    def __post_init__(self) -> None:
        s = object.__setattr__
        s(self, "key", f"{self.namespace}/{self.name}")
        s(self, "priority", 0 if self.spec_priority is None else self.spec_priority)
        requests = aggregate_requests(self.containers, self.init_containers)
        non_zero = aggregate_requests(
            self.containers,
            self.init_containers,
            defaults={CPU: DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST},
        )
        for name in (CPU, "memory"):
            if name in self.pod_requests:
                requests[name] = self.pod_requests[name]
                non_zero[name] = self.pod_requests[name]
        for name, value in self.overhead.items():
            requests[name] = requests.get(name, 0) + value
            non_zero[name] = non_zero.get(name, 0) + value
        s(self, "requests", requests)
        s(
            self,
            "non_zero_requests",
            {CPU: non_zero.get(CPU, 0), "memory": non_zero.get("memory", 0)},
        )

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    def condition(self, type_: str) -> PodCondition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    def with_changes(self, **changes: Any) -> Pod:
        """A copy with some fields replaced; derived fields are recomputed when a field they
        derive from changes (as ``dataclasses.replace`` would, which costs a full ``__init__``
        of 33 fields: binding, admission and informers copy pods on every event)."""
        new = object.__new__(Pod)
        for set_, value in zip(_POD_SETTERS.values(), _POD_VALUES(self), strict=True):
            set_(new, value)
        for name, value in changes.items():
            setter = _POD_SETTERS.get(name)
            if setter is None or name in _POD_DERIVED:
                # dataclasses.replace's own errors: TypeError for an unknown field, ValueError
                # for one that is not an __init__ argument.
                return replace(self, **changes)
            setter(new, value)
        if not _POD_DERIVED_FROM.isdisjoint(changes):
            new.__post_init__()
        return new

    def __repr__(self) -> str:
        where = f" on {self.node_name}" if self.node_name else ""
        return f"<Pod {self.key} priority={self.priority}{where}>"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> Pod:
        r = Reader("Pod", manifest)
        meta = _read_meta(r, manifest, namespaced=True)
        spec = r.mapping(manifest, "spec", "spec")
        status = r.mapping(manifest, "status", "status")

        def containers(key: str) -> tuple[Container, ...]:
            out = []
            for p, c in r.items(spec, key, f"spec.{key}"):
                res = r.mapping(c, "resources", f"{p}.resources")
                ports = []
                for pp, port in r.items(c, "ports", f"{p}.ports"):
                    ports.append(
                        ContainerPort(
                            container_port=r.integer(port, "containerPort", f"{pp}.containerPort")
                            or 0,
                            host_port=r.integer(port, "hostPort", f"{pp}.hostPort") or 0,
                            protocol=r.string(port, "protocol", f"{pp}.protocol", "TCP"),
                            host_ip=r.string(port, "hostIP", f"{pp}.hostIP"),
                        )
                    )
                out.append(
                    Container(
                        name=r.string(c, "name", f"{p}.name"),
                        requests=r.resources(res, "requests", f"{p}.resources.requests"),
                        limits=r.resources(res, "limits", f"{p}.resources.limits"),
                        restart_policy=r.optional_string(c, "restartPolicy", f"{p}.restartPolicy"),
                        ports=tuple(ports),
                        image=r.string(c, "image", f"{p}.image"),
                    )
                )
            return tuple(out)

        tolerations = []
        for p, t in r.items(spec, "tolerations", "spec.tolerations"):
            op = r.string(t, "operator", f"{p}.operator", "Equal")
            if op not in ("Equal", "Exists", ""):
                raise r.fail(
                    f"{p}.operator",
                    f'Unsupported value: "{op}": supported values: "Equal", "Exists"',
                )
            tolerations.append(
                Toleration(
                    key=r.string(t, "key", f"{p}.key"),
                    operator=op or "Equal",
                    value=r.string(t, "value", f"{p}.value"),
                    effect=r.string(t, "effect", f"{p}.effect"),
                    toleration_seconds=r.integer(
                        t, "tolerationSeconds", f"{p}.tolerationSeconds", lo=INT64_MIN, hi=INT64_MAX
                    ),
                )
            )
        gates = []
        for p, g in r.items(spec, "schedulingGates", "spec.schedulingGates"):
            gates.append(r.string(g, "name", f"{p}.name"))
        volumes = []
        for p, v in r.items(spec, "volumes", "spec.volumes"):
            volumes.append(_read_volume(r, v, p))
        conditions = []
        for p, c in r.items(status, "conditions", "status.conditions"):
            conditions.append(
                PodCondition(
                    type=r.string(c, "type", f"{p}.type"),
                    status=r.string(c, "status", f"{p}.status"),
                    reason=r.string(c, "reason", f"{p}.reason"),
                    message=r.string(c, "message", f"{p}.message"),
                    last_transition_time=r.time(c, "lastTransitionTime", f"{p}.lastTransitionTime"),
                )
            )
        spread = tuple(
            _read_spread_constraint(r, c, p)
            for p, c in r.items(spec, "topologySpreadConstraints", "spec.topologySpreadConstraints")
        )
        claims = tuple(
            r.string(c, "name", f"{p}.name")
            for p, c in r.items(spec, "resourceClaims", "spec.resourceClaims")
        )
        policy = r.optional_string(spec, "preemptionPolicy", "spec.preemptionPolicy")
        pod_res = r.mapping(spec, "resources", "spec.resources")
        return cls(
            name=meta.name,
            namespace=meta.namespace,
            uid=meta.uid,
            labels=meta.labels,
            annotations=meta.annotations,
            resource_version=meta.resource_version,
            generation=meta.generation,
            creation_timestamp=meta.creation_timestamp,
            deletion_timestamp=meta.deletion_timestamp,
            owner_references=meta.owner_references,
            containers=containers("containers"),
            init_containers=containers("initContainers"),
            overhead=r.resources(spec, "overhead", "spec.overhead"),
            pod_requests=r.resources(pod_res, "requests", "spec.resources.requests"),
            pod_limits=r.resources(pod_res, "limits", "spec.resources.limits"),
            node_name=r.string(spec, "nodeName", "spec.nodeName"),
            node_selector=r.string_map(spec, "nodeSelector", "spec.nodeSelector"),
            affinity=_read_affinity(
                r, r.mapping(spec, "affinity", "spec.affinity"), meta.namespace, meta.labels
            ),
            tolerations=tuple(tolerations),
            spec_priority=r.integer(spec, "priority", "spec.priority"),
            priority_class_name=r.string(spec, "priorityClassName", "spec.priorityClassName"),
            preemption_policy=policy,
            scheduling_gates=tuple(gates),
            scheduler_name=r.string(
                spec, "schedulerName", "spec.schedulerName", DEFAULT_SCHEDULER_NAME
            ),
            termination_grace_period_seconds=r.integer(
                spec,
                "terminationGracePeriodSeconds",
                "spec.terminationGracePeriodSeconds",
                lo=0,
                hi=INT64_MAX,
            ),
            volumes=tuple(volumes),
            topology_spread_constraints=spread,
            resource_claims=claims,
            phase=r.string(status, "phase", "status.phase"),
            conditions=tuple(conditions),
            start_time=r.time(status, "startTime", "status.startTime"),
            nominated_node_name=r.string(status, "nominatedNodeName", "status.nominatedNodeName"),
            qos_class=r.string(status, "qosClass", "status.qosClass"),
        )


# A copy of a pod slot by slot (every field of Pod is a slot, so its descriptor sets it,
# frozen or not): Pod.with_changes.
_POD_FIELDS: Final = tuple(f.name for f in fields(Pod))
_POD_VALUES: Final = operator.attrgetter(*_POD_FIELDS)
_POD_SETTERS: Final[dict[str, Callable[[Pod, Any], None]]] = {
    name: Pod.__dict__[name].__set__ for name in _POD_FIELDS
}
_POD_DERIVED: Final = frozenset(f.name for f in fields(Pod) if not f.init)
# What a kubelet or a binding writes (status) and the bookkeeping: isPodUpdated strips them
# (with managedFields and finalizers, which the typed Pod does not carry).
_POD_STATUS: Final = frozenset(
    ("resource_version", "generation", "phase", "conditions", "start_time", "nominated_node_name")
)
_POD_SPEC_VALUES: Final = operator.attrgetter(
    *(n for n in _POD_FIELDS if n not in _POD_STATUS and n not in _POD_DERIVED)
)


def pod_updated(old: Pod, new: Pod) -> bool:
    """``isPodUpdated``: whether anything but status and bookkeeping differs between two
    versions of a pod (the values Pod derives from the others are not compared). Versions
    share their unchanged fields, so this is mostly identity checks, in C."""
    return old is not new and _POD_SPEC_VALUES(old) != _POD_SPEC_VALUES(new)


# What __post_init__ reads.
_POD_DERIVED_FROM: Final = frozenset(
    (
        "name",
        "namespace",
        "spec_priority",
        "containers",
        "init_containers",
        "pod_requests",
        "overhead",
    )
)


# --- Node ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    allocatable: ResourceList = field(default_factory=dict)
    capacity: ResourceList = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    conditions: tuple[PodCondition, ...] = ()
    resource_version: str = ""
    images: tuple[ContainerImage, ...] = ()  # status.images

    def __repr__(self) -> str:
        return f"<Node {self.name}>"

    def with_changes(self, **changes: Any) -> Node:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> Node:
        r = Reader("Node", manifest)
        meta = _read_meta(r, manifest, namespaced=False)
        spec = r.mapping(manifest, "spec", "spec")
        status = r.mapping(manifest, "status", "status")
        taints = []
        for p, t in r.items(spec, "taints", "spec.taints"):
            effect = r.string(t, "effect", f"{p}.effect")
            if effect not in TAINT_EFFECTS:
                raise r.fail(
                    f"{p}.effect",
                    f'Unsupported value: "{effect}": supported values: "NoExecute",'
                    ' "NoSchedule", "PreferNoSchedule"',
                )
            taints.append(
                Taint(r.string(t, "key", f"{p}.key"), r.string(t, "value", f"{p}.value"), effect)
            )
        capacity = r.resources(status, "capacity", "status.capacity")
        allocatable = (
            r.resources(status, "allocatable", "status.allocatable")
            if status.get("allocatable") is not None
            else dict(capacity)
        )
        conditions = []
        for p, c in r.items(status, "conditions", "status.conditions"):
            conditions.append(
                PodCondition(
                    type=r.string(c, "type", f"{p}.type"),
                    status=r.string(c, "status", f"{p}.status"),
                    reason=r.string(c, "reason", f"{p}.reason"),
                    message=r.string(c, "message", f"{p}.message"),
                )
            )
        images = []
        for p, img in r.items(status, "images", "status.images"):
            names = tuple(str(n) for n in r.seq(img, "names", f"{p}.names"))
            size = r.integer(img, "sizeBytes", f"{p}.sizeBytes", lo=0, hi=INT64_MAX) or 0
            images.append(ContainerImage(names, size))
        return cls(
            name=meta.name,
            uid=meta.uid,
            labels=meta.labels,
            annotations=meta.annotations,
            allocatable=allocatable,
            capacity=capacity,
            taints=tuple(taints),
            unschedulable=r.boolean(spec, "unschedulable", "spec.unschedulable"),
            conditions=tuple(conditions),
            resource_version=meta.resource_version,
            images=tuple(images),
        )


# --- Namespace -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Namespace:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: str = "Active"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> Namespace:
        r = Reader("Namespace", manifest)
        meta = _read_meta(r, manifest, namespaced=False)
        status = r.mapping(manifest, "status", "status")
        labels = dict(meta.labels)
        # The API server always sets this label (NamespaceDefaultLabelName, 1.21+).
        labels.setdefault("kubernetes.io/metadata.name", meta.name)
        return cls(meta.name, labels, r.string(status, "phase", "status.phase", "Active"))


# --- PriorityClass ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    description: str = ""
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    namespace: str = ""  # must stay empty: validation reports it
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""

    def __repr__(self) -> str:
        return f"<PriorityClass {self.name}={self.value}>"

    def with_changes(self, **changes: Any) -> PriorityClass:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> PriorityClass:
        r = Reader("PriorityClass", manifest)
        meta = _read_meta(r, manifest, namespaced=False)
        value = r.integer(manifest, "value", "value")
        if value is None:
            raise r.fail("value", "Required value")
        policy = manifest.get("preemptionPolicy")
        if policy is not None and not isinstance(policy, str):
            raise r.fail("preemptionPolicy", f"must be a string, not {policy!r}")
        return cls(
            name=meta.name,
            value=value,
            global_default=r.boolean(manifest, "globalDefault", "globalDefault"),
            description=r.string(manifest, "description", "description"),
            # v1 defaulting: nil becomes PreemptLowerPriority.
            preemption_policy=PREEMPT_LOWER_PRIORITY if policy is None else policy,
            namespace=meta.namespace,
            uid=meta.uid,
            labels=meta.labels,
            annotations=meta.annotations,
            resource_version=meta.resource_version,
        )


# --- PodDisruptionBudget ---------------------------------------------------------------------


IntOrString = int | str


@dataclass(frozen=True, slots=True, eq=False)
class PodDisruptionBudget:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    generation: int = 0
    resource_version: str = ""
    selector: LabelSelector | None = None
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None
    # status
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    observed_generation: int = 0
    disrupted_pods: Mapping[str, float] = field(default_factory=dict)
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")

    def __repr__(self) -> str:
        return f"<PodDisruptionBudget {self.key} allowed={self.disruptions_allowed}>"

    def with_changes(self, **changes: Any) -> PodDisruptionBudget:
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> PodDisruptionBudget:
        r = Reader("PodDisruptionBudget", manifest)
        meta = _read_meta(r, manifest, namespaced=True)
        spec = r.mapping(manifest, "spec", "spec")
        status = r.mapping(manifest, "status", "status")

        def int_or_string(key: str) -> IntOrString | None:
            value = spec.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise r.fail(f"spec.{key}", f"must be an integer or a percentage, not {value!r}")
            if isinstance(value, str) and not (
                (value.endswith("%") and value[:-1].isdigit()) or value.isdigit()
            ):
                raise r.fail(
                    f"spec.{key}",
                    f"Invalid value: \"{value}\": must be an integer or percentage (e.g '5%')",
                )
            if isinstance(value, str) and value.isdigit():
                return int(value)
            if isinstance(value, int) and value < 0:
                raise r.fail(f"spec.{key}", f"Invalid value: {value}: {NEGATIVE}")
            return value

        disrupted: dict[str, float] = {}
        for pod_name, when in r.mapping(status, "disruptedPods", "status.disruptedPods").items():
            try:
                disrupted[str(pod_name)] = parse_time(when)
            except ValueError as exc:
                raise r.fail(f"status.disruptedPods.{pod_name}", str(exc)) from None
        policy = r.optional_string(
            spec, "unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy"
        )
        if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
            raise r.fail(
                "spec.unhealthyPodEvictionPolicy",
                f'Unsupported value: "{policy}": supported values:'
                ' "AlwaysAllow", "IfHealthyBudget"',
            )
        min_available = int_or_string("minAvailable")
        max_unavailable = int_or_string("maxUnavailable")
        if min_available is not None and max_unavailable is not None:
            raise r.fail("spec", "minAvailable and maxUnavailable cannot be both set")
        big = INT64_MAX
        return cls(
            name=meta.name,
            namespace=meta.namespace,
            uid=meta.uid,
            labels=meta.labels,
            generation=meta.generation,
            resource_version=meta.resource_version,
            selector=r.selector(spec, "selector", "spec.selector"),
            min_available=min_available,
            max_unavailable=max_unavailable,
            unhealthy_pod_eviction_policy=policy,
            disruptions_allowed=r.integer(status, "disruptionsAllowed", "status.disruptionsAllowed")
            or 0,
            current_healthy=r.integer(status, "currentHealthy", "status.currentHealthy") or 0,
            desired_healthy=r.integer(status, "desiredHealthy", "status.desiredHealthy") or 0,
            expected_pods=r.integer(status, "expectedPods", "status.expectedPods") or 0,
            observed_generation=r.integer(
                status, "observedGeneration", "status.observedGeneration", lo=0, hi=big
            )
            or 0,
            disrupted_pods=disrupted,
        )


# --- workloads that select pods (system default topology spreading) --------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Service:
    """A Service; only its ``spec.selector`` (a plain label map) matters to the scheduler.

    ``selector`` None is an absent selector, which selects no pod (``GetPodServices``).
    """

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    selector: Mapping[str, str] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> Service:
        return cls(**_read_selecting_workload("Service", manifest, plain_selector=True))


@dataclass(frozen=True, slots=True, eq=False)
class ReplicationController:
    """A ReplicationController; ``spec.selector`` is a plain label map (None when absent)."""

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    selector: Mapping[str, str] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> ReplicationController:
        return cls(
            **_read_selecting_workload("ReplicationController", manifest, plain_selector=True)
        )


@dataclass(frozen=True, slots=True, eq=False)
class ReplicaSet:
    """A ReplicaSet (apps/v1); ``spec.selector`` is a structured label selector."""

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    selector: LabelSelector | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> ReplicaSet:
        return cls(**_read_selecting_workload("ReplicaSet", manifest))


@dataclass(frozen=True, slots=True, eq=False)
class StatefulSet:
    """A StatefulSet (apps/v1); ``spec.selector`` is a structured label selector."""

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    selector: LabelSelector | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, manifest: Mapping[str, Any]) -> StatefulSet:
        return cls(**_read_selecting_workload("StatefulSet", manifest))


def _read_selecting_workload(
    kind: str, manifest: Mapping[str, Any], *, plain_selector: bool = False
) -> dict[str, Any]:
    """Metadata and ``spec.selector``: a label map (Services, ReplicationControllers; None when
    absent) or a structured selector (ReplicaSets, StatefulSets)."""
    r = Reader(kind, manifest)
    meta = _read_meta(r, manifest, namespaced=True)
    spec = r.mapping(manifest, "spec", "spec")
    selector: Any
    if plain_selector:
        labels = r.string_map(spec, "selector", "spec.selector")
        selector = labels if spec.get("selector") is not None else None
    else:
        selector = r.selector(spec, "selector", "spec.selector")
    return {
        "name": meta.name,
        "namespace": meta.namespace,
        "uid": meta.uid,
        "labels": meta.labels,
        "annotations": meta.annotations,
        "selector": selector,
    }


# --- loading ---------------------------------------------------------------------------------

KubeObject = (
    Pod
    | Node
    | Namespace
    | PriorityClass
    | PodDisruptionBudget
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
)

_KINDS: Final[dict[str, Any]] = {
    "Pod": Pod,
    "Node": Node,
    "Namespace": Namespace,
    "PriorityClass": PriorityClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
}


def object_from_dict(manifest: Mapping[str, Any]) -> KubeObject:
    """Convert one manifest by its ``kind``."""
    kind = manifest.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        name = ""
        meta = manifest.get("metadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
            name = meta["name"]
        raise InvalidObject(
            str(kind) if kind else "object",
            name,
            "kind",
            f"unsupported kind {kind!r}; supported: {', '.join(sorted(_KINDS))}",
        )
    obj: KubeObject = cls.from_dict(manifest)
    return obj


def load_objects(
    source: str | Path,
    *,
    ignore_unknown: bool = False,
    validation: Validation = "strict",
    on_warning: Callable[[str], None] | None = None,
) -> list[KubeObject]:
    """Typed objects from a path or YAML text (``kube.manifests.manifest_documents``).

    Every manifest is first strictly decoded, as kube-apiserver does with
    ``fieldValidation=Strict``: an unknown kind, an unknown or duplicate field or a wrong type
    raises ``InvalidManifest`` naming the file, document, object and field (``validation``
    "warn" reports unknown fields to ``on_warning``, "ignore" drops them). Kinds the
    scheduler does not model raise too, unless ``ignore_unknown``.
    """
    objects: list[KubeObject] = []
    for doc in manifest_documents(source, validation=validation, on_warning=on_warning):
        manifest = doc.manifest
        if ignore_unknown and manifest.get("kind") not in _KINDS:
            continue
        try:
            objects.append(object_from_dict(manifest))
        except InvalidObject as exc:
            detail = f"{exc.field}: {exc.detail}" if exc.field else exc.detail
            raise InvalidManifest(
                doc.error(detail), kind=exc.kind, name=exc.name, field_path=exc.field
            ) from exc
    return objects
