"""Defaulting and validation of incoming objects, as the registry strategies do it, and the
table of every kind's ``Strategy`` (``kubesim.registry.strategy``).

kube-apiserver decodes a body into its Go type (``check_type`` against the schema, then
``decode_check``'s times and quantities: type errors are a 400), applies defaults
(``SetDefaults_*``), and runs the strategy's ``Validate`` (``validate``: a 422 with one cause
per ``field.Error``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

from kube.labels import dns1123_label_errors
from kube.objects import (
    DEFAULT_SCHEDULER_NAME,
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
    InvalidObject,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
)
from kube.quantity import QuantityError, canonical_quantity, parse_quantity
from kube.reader import NEGATIVE
from kube.strict import ManifestError, Problems, canonicalize_quantities, check_object, model_for
from kubesim.core.errors import Cause, StatusError, bad_request, invalid
from kubesim.core.scheme import ResourceType
from kubesim.core.timefields import TimeParseError, normalize_times
from kubesim.registry import admissionregistration, events, rbac, scheduling
from kubesim.registry.strategy import Causes, Strategy, field_error_cause
from scheduler.queue.validation import validate_pod_update_while_gated

__all__ = [
    "POD_UPDATE_FORBIDDEN",
    "STRATEGIES",
    "apply_defaults",
    "apply_update_defaults",
    "cannot_handle",
    "check_type",
    "decode_against_schema",
    "decode_check",
    "normalize_seed_times",
    "status_error_for",
    "strategy_for",
    "validate",
    "validate_pod_update",
    "validate_update",
]


def _meta_causes(strategy: Strategy, obj: Mapping[str, Any]) -> list[Cause]:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        return [
            Cause(
                "FieldValueRequired",
                "Required value: name or generateName is required",
                "metadata.name",
            )
        ]
    return [
        Cause("FieldValueInvalid", f'Invalid value: "{name}": {e}', "metadata.name")
        for e in strategy.name_errors(name)
    ]


def _pod_causes(obj: Mapping[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.containers"))
        return causes
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        if not isinstance(c, Mapping):
            continue
        if not c.get("name"):
            causes.append(
                Cause("FieldValueRequired", "Required value", f"spec.containers[{i}].name")
            )
        if not c.get("image"):
            causes.append(
                Cause("FieldValueRequired", "Required value", f"spec.containers[{i}].image")
            )
        causes.extend(_resource_causes(c.get("resources"), f"spec.containers[{i}].resources"))
    init = spec.get("initContainers")
    for i, c in enumerate(init if isinstance(init, list) else []):
        if isinstance(c, Mapping):
            path = f"spec.initContainers[{i}].resources"
            causes.extend(_resource_causes(c.get("resources"), path))
    return causes


def _quantities(raw: Any) -> dict[str, tuple[Any, Decimal]]:
    """A resource list's quantities, each as written and as a number (the decoding step has
    refused the ones that do not parse)."""
    out: dict[str, tuple[Any, Decimal]] = {}
    for name, value in (raw if isinstance(raw, Mapping) else {}).items():
        try:
            out[str(name)] = (value, parse_quantity(value))
        except QuantityError:
            continue
    return out


def _overcommit_allowed(resource: str) -> bool:
    """``IsOvercommitAllowed``: a native resource (no domain, or a kubernetes.io one) other
    than hugepages; extended resources and hugepages are requested exactly as limited."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def _resource_causes(resources: Any, path: str) -> list[Cause]:
    """``ValidateContainerResourceRequirements`` on the quantities: none negative, a request
    no larger than its limit, and, for a resource that cannot be overcommitted, a limit equal
    to the request. Limits first, then requests, each in the order written; a quantity is
    printed as Go prints it (``-0.5`` as ``-500m``)."""
    if not isinstance(resources, Mapping):
        return []
    limits = _quantities(resources.get("limits"))
    requests = _quantities(resources.get("requests"))

    def wrong(field: str, value: Any, rule: str) -> Cause:
        detail = f'Invalid value: "{canonical_quantity(value)}": {rule}'
        return Cause("FieldValueInvalid", detail, field)

    causes = [
        wrong(f"{path}.limits[{name}]", raw, NEGATIVE)
        for name, (raw, value) in limits.items()
        if value < 0
    ]
    for name, (raw, value) in requests.items():
        if value < 0:
            causes.append(wrong(f"{path}.requests[{name}]", raw, NEGATIVE))
        limit = limits.get(name)
        if limit is None:
            if not _overcommit_allowed(name):
                detail = "Required value: Limit must be set for non overcommitable resources"
                causes.append(Cause("FieldValueRequired", detail, f"{path}.limits"))
            continue
        if not _overcommit_allowed(name) and value != limit[1]:
            rule = "must be equal to"
        elif value > limit[1]:
            rule = "must be less than or equal to"
        else:
            continue
        shown = canonical_quantity(limit[0])
        causes.append(wrong(f"{path}.requests", raw, f"{rule} {name} limit of {shown}"))
    return causes


def _go_map(labels: Mapping[str, Any]) -> str:
    """A ``map[string]string`` as Go's ``%#v`` prints it (keys sorted)."""
    inner = ", ".join(
        f"{json.dumps(str(k))}:{json.dumps(str(v))}" for k, v in sorted(labels.items())
    )
    return "map[string]string{" + inner + "}"


def _replication_controller_causes(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateReplicationControllerSpec`` on the fields a client gets wrong."""
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    for key in ("replicas", "minReadySeconds"):
        value = spec.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {value}: {NEGATIVE}",
                    f"spec.{key}",
                )
            )
    selector = spec.get("selector") or {}
    if not selector:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.selector"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        causes.append(Cause("FieldValueRequired", "Required value", "spec.template"))
        return causes
    labels = (template.get("metadata") or {}).get("labels") or {}
    comparable = isinstance(selector, Mapping) and isinstance(labels, Mapping)
    if comparable and selector and any(labels.get(k) != v for k, v in selector.items()):
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {_go_map(labels)}: selector does not match template labels",
                "spec.template.metadata.labels",
            )
        )
    tspec = template.get("spec") or {}
    policy = tspec.get("restartPolicy")
    if policy not in (None, "Always"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Always"',
                "spec.template.spec.restartPolicy",
            )
        )
    if not tspec.get("containers"):
        causes.append(
            Cause("FieldValueRequired", "Required value", "spec.template.spec.containers")
        )
    return causes


def _is_type_error(exc: InvalidObject) -> bool:
    """A typed view's complaint about a value's JSON type (``must be a string, not 5``), which
    kube's decoder answers with a 400; its other complaints are validation's 422."""
    return exc.detail.startswith(("must be a ", "must be an ", "expected a mapping"))


def _decode_error(rt: ResourceType, exc: InvalidObject) -> StatusError:
    return cannot_handle(rt, f"{exc.field}: {exc.detail}")


def normalize_seed_times(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Time fields of a state-file object, stored as the apiserver would have stored them.

    A bad value is a 400 whose cause names the field, so the state loader can say where.
    """
    try:
        normalize_times(rt.kind, obj)
    except TimeParseError as exc:
        raise StatusError(
            400,
            "BadRequest",
            f"{exc.path}: {exc}",
            causes=(Cause("FieldValueInvalid", str(exc), exc.path),),
        ) from None


def cannot_handle(rt: ResourceType, detail: str) -> StatusError:
    """kube's 400 for a body that does not decode into ``rt``'s Go type."""
    return bad_request(
        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {detail}'
    )


def decode_check(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The decoding step's parsers: time fields and quantities (a bad one is a 400, ``<Kind>
    in version "<v>" cannot be handled as a <Kind>: ...``), before admission runs; a kind
    the schema does not hold is decoded by its strategy's ``decode`` (the JSON types of a
    kind the schema holds were checked by ``check_type``).

    Time fields are re-encoded here as the Go types would (``kubesim.core.timefields``), and
    every ``resource.Quantity`` (containers' resources, a pod's overhead, an emptyDir's
    sizeLimit, a node's capacity, in templates too) must decode: ``cpu: abc`` is kube's 400
    ``... cannot be handled as a Pod: quantities must match the regular expression ...``.
    Each is then stored as the Go type writes it back (``cpu: 1000m`` as ``"1"``, ``null`` as
    ``"0"``: ``kube.quantity.canonical_quantity``).
    """
    try:
        normalize_times(rt.kind, obj)
    except TimeParseError as exc:
        raise cannot_handle(rt, str(exc)) from None
    model = model_for(rt.api_version, rt.kind)
    if model is not None:
        try:
            canonicalize_quantities(obj, model)
        except QuantityError as exc:
            raise cannot_handle(rt, str(exc)) from None
        return
    decode = strategy_for(rt.kind).decode
    if decode is None:
        return
    try:
        decode(obj)
    except InvalidObject as exc:
        if _is_type_error(exc):
            raise _decode_error(rt, exc) from None


def decode_against_schema(
    rt: ResourceType,
    obj: Mapping[str, Any],
    model: str,
    *,
    duplicates: Mapping[int, tuple[dict[Any, Any], list[str]]] | None = None,
    decode: bool = True,
) -> Problems:
    """Walk ``obj`` against its schema type ``model``: a document too deep or too large to
    walk is a 400, and with ``decode`` so is a value of the wrong JSON type (Go's decoder's
    ``cannot be handled as`` 400); the rest (unknown and duplicate fields) is returned."""
    try:
        found = check_object(obj, model=model, duplicates=duplicates)
    except ManifestError as exc:
        raise bad_request(exc.detail) from None
    if decode and found.decode_error is not None:
        raise cannot_handle(rt, found.decode_error)
    return found


def validate(
    rt: ResourceType,
    obj: Mapping[str, Any],
    *,
    request_group: str | None = None,
    old: Mapping[str, Any] | None = None,
) -> Any:
    """Raise the 400/422 kube-apiserver gives for ``obj``; when valid, return its typed view
    (the kind's ``kube.objects`` conversion, None for kinds without one).

    A 422 is ``<Kind> "<name>" is invalid: <field>: <detail>`` with one cause per error (type
    ``FieldValueRequired``, ``FieldValueInvalid``, ``FieldValueNotSupported``, ...). For the
    kinds the policy core models (Pod, Node, PodDisruptionBudget, Namespace), the typed
    conversion ``kube.objects.X.from_dict`` is the validator: its ``InvalidObject`` names the
    field, and is mapped to the kube error shape. PriorityClasses are validated by their own
    strategy (``kubesim.registry.scheduling``), as upstream's scheduling validation; Events by
    ``kubesim.registry.events`` (the request's group matters); ReplicationControllers as
    ``ValidateReplicationControllerSpec`` for the fields clients get wrong. Names are checked
    as ``ValidateObjectMeta`` does (DNS-1123 subdomain, DNS-1123 label for namespaces).
    Defaults include the job strategy's generated selector (``controller-uid`` and
    ``job-name`` labels) and a Deployment's ``strategy: {}`` filled in, as kubectl sends it
    empty.

    ``rt`` is the storage type; ``request_group`` the group the client wrote through (events
    are validated more strictly through ``events.k8s.io``), ``old`` the stored object on update.
    """
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    strategy = strategy_for(rt.kind)
    group = rt.group if request_group is None else request_group
    if strategy.own_error_group and strategy.validate is not None:
        own = strategy.validate(obj, old, group)
        if own:
            raise invalid(rt.kind, group, name, own)
    decoded = None
    refused: InvalidObject | None = None
    if strategy.decode is not None:
        try:
            decoded = strategy.decode(obj)
        except InvalidObject as exc:
            if _is_type_error(exc):
                raise _decode_error(rt, exc) from None
            if exc.field != "metadata.name":
                refused = exc
    causes = _meta_causes(strategy, obj)
    if strategy.validate is not None and not strategy.own_error_group:
        causes.extend(strategy.validate(obj, old, group))
    # The kind's own field errors, worded as kube words them, come before what the typed view
    # refused (a negative request is both).
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)
    if refused is not None:
        raise status_error_for(rt, name, refused)
    return decoded


def validate_update(rt: ResourceType, new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """What the kind forbids an update of its main resource to change (a pod's spec)."""
    check = strategy_for(rt.kind).validate_update
    if check is not None:
        check(new, old)


# --- pod updates (ValidatePodUpdate) ---------------------------------------------------------

POD_UPDATE_FORBIDDEN: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only"
    " additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be"
    " set to 1 if it was previously negative)"
)


def _masked_spec(spec: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with the mutable fields replaced by ``other``'s, as ValidatePodUpdate masks."""
    out = dict(spec)
    for key in ("containers", "initContainers"):
        mine, theirs = spec.get(key), other.get(key)
        if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
            out[key] = [
                {**m, "image": t.get("image")} if isinstance(m, dict) and isinstance(t, dict) else m
                for m, t in zip(mine, theirs, strict=True)
            ]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if key in other:
            out[key] = other[key]
        else:
            out.pop(key, None)
    old_grace = other.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and spec.get("terminationGracePeriodSeconds") == 1
    ):
        out["terminationGracePeriodSeconds"] = old_grace
    return out


def _gated_directive_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause] | None:
    """The scheduling-directive rules (``scheduler.queue.validation``) as causes; None when
    either pod does not convert (the spec comparison then decides alone)."""
    try:
        old_pod, new_pod = Pod.from_dict(old), Pod.from_dict(new)
    except InvalidObject:
        return None
    return [
        Cause(err.type.value, err.error_body(), err.field)
        for err in validate_pod_update_while_gated(old_pod, new_pod)
        if err.field != "spec"  # the catch-all comes from the full spec comparison below
    ]


def _mask_gated_directives(masked: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
    """A gated pod's nodeSelector and node affinity were checked on their own: take the old."""
    if "nodeSelector" in old_spec:
        masked["nodeSelector"] = old_spec["nodeSelector"]
    else:
        masked.pop("nodeSelector", None)
    old_affinity = old_spec.get("affinity")
    old_na = old_affinity.get("nodeAffinity") if isinstance(old_affinity, Mapping) else None
    affinity = masked.get("affinity")
    affinity = dict(affinity) if isinstance(affinity, Mapping) else {}
    if old_na is not None:
        affinity["nodeAffinity"] = old_na
    else:
        affinity.pop("nodeAffinity", None)
    if affinity or isinstance(old_affinity, Mapping):
        masked["affinity"] = affinity
    else:
        masked.pop("affinity", None)


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """The spec part of ``ValidatePodUpdate``: 422 ``spec: Forbidden: pod updates may not ...``.

    Scheduling gates may only be removed; while the old pod is gated its nodeSelector may gain
    keys and its required node affinity may be tightened (``scheduler.queue.validation``,
    with kube's messages). kube appends a ``cmp.Diff`` of the Go structs to the catch-all
    message; kubesim appends the changed top-level spec fields as ``- field: old`` /
    ``+ field: new`` lines instead.
    """
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    name = str((new.get("metadata") or {}).get("name") or "")
    old_tols = old_spec.get("tolerations") or []
    new_tols = new_spec.get("tolerations") or []
    tolerations_ok = all(t in new_tols for t in old_tols)
    causes = _gated_directive_errors(new, old)
    masked = _masked_spec(new_spec, old_spec)
    if causes is None:
        causes = []
        if not all(
            g in (old_spec.get("schedulingGates") or [])
            for g in new_spec.get("schedulingGates") or []
        ):
            masked["schedulingGates"] = new_spec.get("schedulingGates")
    elif old_spec.get("schedulingGates"):
        _mask_gated_directives(masked, old_spec)
    if masked == old_spec and tolerations_ok:
        if causes:
            raise invalid("Pod", "", name, causes)
        return
    lines = []
    for key in sorted(set(masked) | set(old_spec)):
        if masked.get(key) != old_spec.get(key):
            lines.append(f"-  {key}: {json.dumps(old_spec.get(key), sort_keys=True)}")
            lines.append(f"+  {key}: {json.dumps(masked.get(key), sort_keys=True)}")
    if not tolerations_ok:
        lines.append("   tolerations: existing tolerations may not be removed")
    detail = f"Forbidden: {POD_UPDATE_FORBIDDEN}\n" + "\n".join(lines)
    causes.append(Cause("FieldValueForbidden", detail, "spec"))
    raise invalid("Pod", "", name, causes)


# --- defaulting ------------------------------------------------------------------------------


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_containers(containers: Any) -> None:
    if not isinstance(containers, list):
        return
    for c in containers:
        if not isinstance(c, dict):
            continue
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        if isinstance(c.get("image"), str):
            c.setdefault("imagePullPolicy", _image_pull_policy(c["image"]))
        for port in c.get("ports") or []:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"  # SetDefaults_ContainerPort


_DEFAULT_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", 300),
    ("node.kubernetes.io/unreachable", 300),
)


def _default_pod_spec(spec: dict[str, Any], *, tolerations: bool) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER_NAME)
    spec.setdefault("enableServiceLinks", True)
    _default_containers(spec.get("containers"))
    _default_containers(spec.get("initContainers"))
    if tolerations:
        # DefaultTolerationSeconds admission.
        tols = spec.get("tolerations")
        if not isinstance(tols, list):
            tols = []
        present = {(t.get("key"), t.get("effect")) for t in tols if isinstance(t, dict)}
        for key, seconds in _DEFAULT_TOLERATIONS:
            if (key, "NoExecute") not in present and not any(
                isinstance(t, dict) and t.get("operator") == "Exists" and not t.get("key")
                for t in tols
            ):
                tols.append(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": seconds,
                    }
                )
        spec["tolerations"] = tols


def _default_deployment_strategy(spec: dict[str, Any]) -> None:
    """``SetDefaults_Deployment``: kubectl sends ``strategy: {}``, which is defaulted inside."""
    strategy = spec.get("strategy")
    if not isinstance(strategy, dict):
        strategy = {}
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = {}
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
        strategy["rollingUpdate"] = rolling
    spec["strategy"] = strategy


JOB_NAME_LABELS: Final = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS: Final = ("controller-uid", "batch.kubernetes.io/controller-uid")


def _default_job(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """``SetDefaults_Job`` and the job strategy's ``generateSelector`` (unless manualSelector)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if not spec.get("podFailurePolicy"):
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    meta = obj.get("metadata") or {}
    template = spec.get("template")
    if spec.get("manualSelector") is True or not isinstance(template, dict):
        return
    tmeta = template.get("metadata")
    if not isinstance(tmeta, dict):
        tmeta = template["metadata"] = {}
    labels = tmeta.get("labels")
    if not isinstance(labels, dict):
        labels = tmeta["labels"] = {}
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, str(meta.get("name") or ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, str(meta.get("uid") or ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(CONTROLLER_UID_LABELS[1], str(meta.get("uid") or ""))
    if isinstance(meta, dict) and not meta.get("labels"):
        # SetDefaults_Job copies the template's labels when the Job has none.
        meta["labels"] = dict(labels)


def _default_replication_controller(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """``SetDefaults_ReplicationController``: selector and labels from the template's labels."""
    template = spec.get("template")
    labels = None
    if isinstance(template, dict):
        if isinstance(template.get("spec"), dict):
            _default_pod_spec(template["spec"], tolerations=False)
        tmeta = template.get("metadata")
        if isinstance(tmeta, dict) and isinstance(tmeta.get("labels"), dict):
            labels = tmeta["labels"]
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def _default_pod(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_pod_spec(spec, tolerations=True)


def _default_workload(kind: str) -> Callable[[dict[str, Any]], None]:
    """A workload's defaults: its pod template's, then the kind's own."""

    def defaults(obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            _default_pod_spec(template["spec"], tolerations=False)
        if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
            spec.setdefault("replicas", 1)
        if kind == "Deployment":
            _default_deployment_strategy(spec)
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
        elif kind == "StatefulSet":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault(
                "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
            )
            spec.setdefault("revisionHistoryLimit", 10)
        elif kind == "DaemonSet":
            spec.setdefault(
                "updateStrategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            )
            spec.setdefault("revisionHistoryLimit", 10)
        elif kind == "Job":
            _default_job(obj, spec)

    return defaults


def _default_rc(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_replication_controller(obj, spec)


def _default_namespace(obj: dict[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        labels = {}
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    meta["labels"] = labels


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The ``SetDefaults_*`` functions kube runs on create, for the fields clients read."""
    defaults = strategy_for(rt.kind).defaults
    if defaults is not None:
        defaults(obj)


def apply_update_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The defaults a kind also gets on update (kubesim defaults most kinds on create only)."""
    strategy = strategy_for(rt.kind)
    if strategy.defaults is not None and strategy.default_on_update:
        strategy.defaults(obj)


def check_type(rt: ResourceType, obj: Any, *, typed: bool = False) -> None:
    """The body must be an object of this endpoint's kind and group/version, each of its
    values of the JSON type of its field.

    The kind's schema (``kube.strict``) is its Go type: every field is checked against it
    and a mismatch worded as Go's decoder words it (``decode_against_schema``). ``typed``: the
    caller has walked ``obj`` against the schema already (a request's body, in
    ``fieldValidation``'s walk). A kind the schema does not hold gets its metadata, spec and
    status checked for what the generic store reads."""
    if not isinstance(obj, dict):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): "
            "couldn't get version/kind; json parse error: expected an object"
        )
    kind = obj.get("kind") or rt.kind
    api_version = obj.get("apiVersion") or rt.api_version
    if not isinstance(kind, str) or not isinstance(api_version, str):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}):"
            " kind and apiVersion must be strings"
        )
    version = api_version.rpartition("/")[2]
    if kind != rt.kind:
        raise bad_request(
            f'{kind} in version "{version}" cannot be handled as a {rt.kind}: converting'
            f" ({version}.{kind}) to ({rt.kind}): unknown conversion"
        )
    if api_version != rt.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API"
            f" version ({rt.api_version})"
        )
    model = model_for(rt.api_version, rt.kind)
    if model is not None:
        if not typed:
            decode_against_schema(rt, obj, model)
        return

    def fail(path: str, detail: str) -> StatusError:
        return bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {path}:'
            f" {detail}"
        )

    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise fail("metadata", "must be an object")
    for key in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        value = (meta or {}).get(key)
        if value is not None and not isinstance(value, str):
            raise fail(f"metadata.{key}", f"must be a string, not {value!r}")
    for key in ("labels", "annotations"):
        value = (meta or {}).get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise fail(f"metadata.{key}", "must be a map of strings")
    for key in ("spec", "status"):
        value = obj.get(key)
        if value is not None and not isinstance(value, dict):
            raise fail(key, "must be an object")


def status_error_for(rt: ResourceType, name: str, exc: InvalidObject) -> StatusError:
    """The 422 for a manifest its typed conversion refused (``name``: the object's own)."""
    return invalid(rt.kind, rt.group, name, [field_error_cause(exc.field, exc.detail)])


def _causes_of(check: Callable[[Mapping[str, Any]], list[Cause]]) -> Causes:
    return lambda obj, old, group: check(obj)


# The strategies of the core and apps kinds; every other group's module declares its own.
_BUILT_IN: Final[dict[str, Strategy]] = {
    "Pod": Strategy(
        decode=Pod.from_dict,
        validate=_causes_of(_pod_causes),
        validate_update=validate_pod_update,
        defaults=_default_pod,
    ),
    "Node": Strategy(decode=Node.from_dict),
    "Namespace": Strategy(
        decode=Namespace.from_dict, defaults=_default_namespace, name_errors=dns1123_label_errors
    ),
    "PodDisruptionBudget": Strategy(decode=PodDisruptionBudget.from_dict),
    "ReplicationController": Strategy(
        validate=_causes_of(_replication_controller_causes), defaults=_default_rc
    ),
    **{
        kind: Strategy(defaults=_default_workload(kind))
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")
    },
}

STRATEGIES: Final[Mapping[str, Strategy]] = {
    **_BUILT_IN,
    **events.STRATEGIES,
    **rbac.STRATEGIES,
    **admissionregistration.STRATEGIES,
    **scheduling.STRATEGIES,
}
_DEFAULT: Final = Strategy()


def strategy_for(kind: str) -> Strategy:
    """The kind's strategy; kinds without one get the generic checks only."""
    return STRATEGIES.get(kind, _DEFAULT)
