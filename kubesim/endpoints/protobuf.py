"""Decoding ``application/vnd.kubernetes.protobuf`` request bodies for a few kinds (``KINDS``).

kubectl 1.32+ sends typed-client bodies as protobuf (``kubectl create namespace``,
``priorityclass``, ``poddisruptionbudget``, ``deployment``, ``job``, ``role`` and the other RBAC
kinds, the ``DeleteOptions`` of ``kubectl drain --disable-eviction``, the access reviews of
``kubectl auth can-i``), and client-go does not fall back to JSON on a 415. ``decode_object``
reads them into the JSON shape; other kinds stay a 415.
"""

from __future__ import annotations

from typing import Any, Final

from kube.times import format_time

__all__ = ["MAGIC", "ProtobufError", "decode_object"]

MAGIC: Final = b"k8s\x00"

# message name -> field number -> (json name, type, repeated); types: string, int, bool, bytes,
# "msg:<Name>", "map:string", "map:<Name>"; a trailing "?" marks a Go pointer (zero kept).
Schema = dict[int, tuple[str, str, bool]]

_POD_SPEC: Final[Schema] = {
    2: ("containers", "msg:Container", True),
    3: ("restartPolicy", "string", False),
    4: ("terminationGracePeriodSeconds", "int?", False),
    5: ("activeDeadlineSeconds", "int?", False),
    6: ("dnsPolicy", "string", False),
    7: ("nodeSelector", "map:string", False),
    8: ("serviceAccountName", "string", False),
    9: ("serviceAccount", "string", False),
    10: ("nodeName", "string", False),
    11: ("hostNetwork", "bool", False),
    12: ("hostPID", "bool", False),
    13: ("hostIPC", "bool", False),
    14: ("securityContext", "msg:Empty", False),
    16: ("hostname", "string", False),
    17: ("subdomain", "string", False),
    19: ("schedulerName", "string", False),
    20: ("initContainers", "msg:Container", True),
    21: ("automountServiceAccountToken", "bool?", False),
    22: ("tolerations", "msg:Toleration", True),
    24: ("priorityClassName", "string", False),
    25: ("priority", "int?", False),
    27: ("shareProcessNamespace", "bool?", False),
    29: ("runtimeClassName", "string?", False),
    30: ("enableServiceLinks", "bool?", False),
    31: ("preemptionPolicy", "string?", False),
    35: ("setHostnameAsFQDN", "bool?", False),
    37: ("hostUsers", "bool?", False),
    38: ("schedulingGates", "msg:PodSchedulingGate", True),
}

_SCHEMAS: Final[dict[str, Schema]] = {
    "Unknown": {
        1: ("typeMeta", "msg:TypeMeta", False),
        2: ("raw", "bytes", False),
        3: ("contentEncoding", "string", False),
        4: ("contentType", "string", False),
    },
    "TypeMeta": {1: ("apiVersion", "string", False), 2: ("kind", "string", False)},
    "ObjectMeta": {
        1: ("name", "string", False),
        2: ("generateName", "string", False),
        3: ("namespace", "string", False),
        4: ("selfLink", "string", False),
        5: ("uid", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("generation", "int", False),
        8: ("creationTimestamp", "msg:Time", False),
        9: ("deletionTimestamp", "msg:Time", False),
        10: ("deletionGracePeriodSeconds", "int?", False),
        11: ("labels", "map:string", False),
        12: ("annotations", "map:string", False),
        13: ("ownerReferences", "msg:OwnerReference", True),
        14: ("finalizers", "string", True),
    },
    "Time": {1: ("seconds", "int", False), 2: ("nanos", "int", False)},
    "Empty": {},
    "Quantity": {1: ("string", "string", False)},
    "OwnerReference": {
        1: ("kind", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("controller", "bool?", False),
        7: ("blockOwnerDeletion", "bool?", False),
    },
    "LabelSelector": {
        1: ("matchLabels", "map:string", False),
        2: ("matchExpressions", "msg:LabelSelectorRequirement", True),
    },
    "LabelSelectorRequirement": {
        1: ("key", "string", False),
        2: ("operator", "string", False),
        3: ("values", "string", True),
    },
    "IntOrString": {
        1: ("type", "int", False),
        2: ("intVal", "int", False),
        3: ("strVal", "string", False),
    },
    "Namespace": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:NamespaceSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "NamespaceSpec": {1: ("finalizers", "string", True)},
    "PriorityClass": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("value", "int", False),
        3: ("globalDefault", "bool", False),
        4: ("description", "string", False),
        5: ("preemptionPolicy", "string?", False),
    },
    "PodDisruptionBudget": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:PodDisruptionBudgetSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "msg:IntOrString", False),
        2: ("selector", "msg:LabelSelector", False),
        3: ("maxUnavailable", "msg:IntOrString", False),
        4: ("unhealthyPodEvictionPolicy", "string?", False),
    },
    "Eviction": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("deleteOptions", "msg:DeleteOptions", False),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int?", False),
        2: ("preconditions", "msg:Preconditions", False),
        3: ("orphanDependents", "bool?", False),
        4: ("propagationPolicy", "string?", False),
        5: ("dryRun", "string", True),
    },
    "Preconditions": {1: ("uid", "string?", False), 2: ("resourceVersion", "string?", False)},
    # core/v1 pod template
    "PodTemplateSpec": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:PodSpec", False),
    },
    "PodSpec": _POD_SPEC,
    "Container": {
        1: ("name", "string", False),
        2: ("image", "string", False),
        3: ("command", "string", True),
        4: ("args", "string", True),
        5: ("workingDir", "string", False),
        6: ("ports", "msg:ContainerPort", True),
        7: ("env", "msg:EnvVar", True),
        8: ("resources", "msg:ResourceRequirements", False),
        13: ("terminationMessagePath", "string", False),
        14: ("imagePullPolicy", "string", False),
        16: ("stdin", "bool", False),
        17: ("stdinOnce", "bool", False),
        18: ("tty", "bool", False),
        20: ("terminationMessagePolicy", "string", False),
        24: ("restartPolicy", "string?", False),
    },
    "ContainerPort": {
        1: ("name", "string", False),
        2: ("hostPort", "int", False),
        3: ("containerPort", "int", False),
        4: ("protocol", "string", False),
        5: ("hostIP", "string", False),
    },
    "EnvVar": {1: ("name", "string", False), 2: ("value", "string", False)},
    "ResourceRequirements": {
        1: ("limits", "map:Quantity", False),
        2: ("requests", "map:Quantity", False),
    },
    "Toleration": {
        1: ("key", "string", False),
        2: ("operator", "string", False),
        3: ("value", "string", False),
        4: ("effect", "string", False),
        5: ("tolerationSeconds", "int?", False),
    },
    "PodSchedulingGate": {1: ("name", "string", False)},
    # apps/v1
    "Deployment": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:DeploymentSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "DeploymentSpec": {
        1: ("replicas", "int?", False),
        2: ("selector", "msg:LabelSelector", False),
        3: ("template", "msg:PodTemplateSpec", False),
        4: ("strategy", "msg:DeploymentStrategy", False),
        5: ("minReadySeconds", "int", False),
        6: ("revisionHistoryLimit", "int?", False),
        7: ("paused", "bool", False),
        9: ("progressDeadlineSeconds", "int?", False),
    },
    "DeploymentStrategy": {
        1: ("type", "string", False),
        2: ("rollingUpdate", "msg:RollingUpdateDeployment", False),
    },
    "RollingUpdateDeployment": {
        1: ("maxUnavailable", "msg:IntOrString", False),
        2: ("maxSurge", "msg:IntOrString", False),
    },
    # authorization/v1: the reviews kubectl auth can-i sends
    "SelfSubjectAccessReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:SelfSubjectAccessReviewSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg:ResourceAttributes", False),
        2: ("nonResourceAttributes", "msg:NonResourceAttributes", False),
    },
    "SubjectAccessReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:SubjectAccessReviewSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "LocalSubjectAccessReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:SubjectAccessReviewSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg:ResourceAttributes", False),
        2: ("nonResourceAttributes", "msg:NonResourceAttributes", False),
        3: ("user", "string", False),
        4: ("groups", "string", True),
        5: ("extra", "map:ExtraValue", False),
        6: ("uid", "string", False),
    },
    "ExtraValue": {1: ("items", "string", True)},
    "ResourceAttributes": {
        1: ("namespace", "string", False),
        2: ("verb", "string", False),
        3: ("group", "string", False),
        4: ("version", "string", False),
        5: ("resource", "string", False),
        6: ("subresource", "string", False),
        7: ("name", "string", False),
    },
    "NonResourceAttributes": {1: ("path", "string", False), 2: ("verb", "string", False)},
    "SelfSubjectRulesReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:SelfSubjectRulesReviewSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string", False)},
    # rbac.authorization.k8s.io/v1: kubectl create role/clusterrole/(cluster)rolebinding
    "ClusterRole": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("rules", "msg:PolicyRule", True),
        3: ("aggregationRule", "msg:AggregationRule", False),
    },
    "Role": {1: ("metadata", "msg:ObjectMeta", False), 2: ("rules", "msg:PolicyRule", True)},
    "AggregationRule": {1: ("clusterRoleSelectors", "msg:LabelSelector", True)},
    "PolicyRule": {
        1: ("verbs", "string", True),
        2: ("apiGroups", "string", True),
        3: ("resources", "string", True),
        4: ("resourceNames", "string", True),
        5: ("nonResourceURLs", "string", True),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("subjects", "msg:Subject", True),
        3: ("roleRef", "msg:RoleRef", False),
    },
    "RoleBinding": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("subjects", "msg:Subject", True),
        3: ("roleRef", "msg:RoleRef", False),
    },
    "Subject": {
        1: ("kind", "string", False),
        2: ("apiGroup", "string", False),
        3: ("name", "string", False),
        4: ("namespace", "string", False),
    },
    "RoleRef": {
        1: ("apiGroup", "string", False),
        2: ("kind", "string", False),
        3: ("name", "string", False),
    },
    # batch/v1
    "Job": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:JobSpec", False),
        3: ("status", "msg:Empty", False),
    },
    "JobSpec": {
        1: ("parallelism", "int?", False),
        2: ("completions", "int?", False),
        3: ("activeDeadlineSeconds", "int?", False),
        4: ("selector", "msg:LabelSelector", False),
        5: ("manualSelector", "bool?", False),
        6: ("template", "msg:PodTemplateSpec", False),
        7: ("backoffLimit", "int?", False),
        8: ("ttlSecondsAfterFinished", "int?", False),
        9: ("completionMode", "string?", False),
        10: ("suspend", "bool?", False),
        12: ("backoffLimitPerIndex", "int?", False),
        13: ("maxFailedIndexes", "int?", False),
        14: ("podReplacementPolicy", "string?", False),
        15: ("managedBy", "string?", False),
    },
    # authentication.k8s.io/v1: what kubectl create token / auth whoami send
    "TokenRequest": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:TokenRequestSpec", False),
        3: ("status", "msg:TokenRequestStatus", False),
    },
    "TokenRequestSpec": {
        1: ("audiences", "string", True),
        3: ("boundObjectRef", "msg:BoundObjectReference", False),
        4: ("expirationSeconds", "int?", False),
    },
    "BoundObjectReference": {
        1: ("kind", "string", False),
        2: ("apiVersion", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
    },
    "TokenRequestStatus": {
        1: ("token", "string", False),
        2: ("expirationTimestamp", "msg:Time", False),
    },
    "TokenReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("spec", "msg:TokenReviewSpec", False),
        3: ("status", "msg:TokenReviewStatus", False),
    },
    "TokenReviewSpec": {1: ("token", "string", False), 2: ("audiences", "string", True)},
    "TokenReviewStatus": {
        1: ("authenticated", "bool", False),
        2: ("user", "msg:UserInfo", False),
        3: ("error", "string", False),
        4: ("audiences", "string", True),
    },
    "SelfSubjectReview": {
        1: ("metadata", "msg:ObjectMeta", False),
        2: ("status", "msg:SelfSubjectReviewStatus", False),
    },
    "SelfSubjectReviewStatus": {1: ("userInfo", "msg:UserInfo", False)},
    "UserInfo": {
        1: ("username", "string", False),
        2: ("uid", "string", False),
        3: ("groups", "string", True),
        4: ("extra", "map:ExtraValue", False),
    },
}

KINDS: Final = frozenset(
    {
        "Namespace",
        "PriorityClass",
        "PodDisruptionBudget",
        "Eviction",
        "DeleteOptions",
        "Deployment",
        "Job",
        "TokenRequest",
        "TokenReview",
        "SelfSubjectReview",
        "SelfSubjectAccessReview",
        "SubjectAccessReview",
        "LocalSubjectAccessReview",
        "SelfSubjectRulesReview",
        "ClusterRole",
        "Role",
        "ClusterRoleBinding",
        "RoleBinding",
    }
)


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            value = data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind in ("string", "bytes"):
        if wire != 2:
            raise ProtobufError(f"{kind} field with a non-length wire type")
        return bytes(value).decode("utf-8") if kind == "string" else bytes(value)
    if wire != 0:
        raise ProtobufError(f"{kind} field with wire type {wire}")
    return bool(value) if kind == "bool" else _signed(value)


def _is_empty(wire: int, value: Any) -> bool:
    return (wire == 0 and value == 0) or (wire == 2 and len(value) == 0)


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = _SCHEMAS[name]
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        spec = schema.get(number)
        if spec is None:
            if _is_empty(wire, value):
                continue
            raise ProtobufError(f"field {number} of {name} is not decoded by kubesim")
        json_name, kind, repeated = spec
        pointer = kind.endswith("?")
        kind = kind.rstrip("?")
        if kind.startswith(("map:", "msg:")) and wire != 2:
            raise ProtobufError(f"field {number} of {name} is a message, not wire type {wire}")
        if kind.startswith("map:"):
            entry = {n: v for n, _, v in _fields(value)}
            key = bytes(entry.get(1, b"")).decode("utf-8")
            raw = bytes(entry.get(2, b""))
            item: Any = (
                raw.decode("utf-8")
                if kind == "map:string"
                else _convert(kind[4:], _message(kind[4:], raw))
            )
            out.setdefault(json_name, {})[key] = item
            continue
        if kind.startswith("msg:"):
            sub = kind[4:]
            parsed: Any = _convert(sub, _message(sub, bytes(value)))
            if parsed is None:
                continue  # a zero Time: JSON null, omitted
        else:
            parsed = _scalar(kind, wire, value)
            if not repeated and not pointer and parsed in ("", 0):
                continue  # Go writes empty non-pointer fields; JSON omits them (omitempty)
        if repeated:
            out.setdefault(json_name, []).append(parsed)
        else:
            out[json_name] = parsed
    return out


def _convert(name: str, msg: dict[str, Any]) -> Any:
    if name == "Time":
        seconds = msg.get("seconds", 0)
        try:
            return format_time(float(seconds)) if seconds else None
        except (OverflowError, OSError, ValueError):
            raise ProtobufError(f"time out of range: {seconds} seconds") from None
    if name == "IntOrString":
        return msg.get("strVal", "") if msg.get("type") == 1 else msg.get("intVal", 0)
    if name == "Quantity":
        return msg.get("string", "")
    if name == "ExtraValue":
        return msg.get("items", [])
    return msg


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON-shaped object of a protobuf body, or ProtobufError.

    kube-apiserver's protobuf serializer frames a ``runtime.Unknown`` after the magic
    ``k8s\x00``: ``typeMeta`` (apiVersion, kind), ``raw`` (the object's own message),
    ``contentEncoding``, ``contentType``. The messages are read with the field numbers of
    ``k8s.io/api/*/generated.proto``. Go's gogo-protobuf marshaller writes every non-pointer
    field, empty or not, and a pointer field only when it is set; so an empty string, zero or
    false is dropped (JSON's ``omitempty``) except for pointer fields (marked ``?``), where
    ``replicas: 0`` or ``gracePeriodSeconds: 0`` is what the client asked for. A field kubesim
    has no schema for is ignored when empty and makes the body a 415 otherwise: dropping data
    silently would store something the client did not send."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = _message("Unknown", body[len(MAGIC) :])
    type_meta = unknown.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in KINDS:
        raise ProtobufError(f"kind {kind!r} is not decoded from protobuf by kubesim")
    obj = _message(kind, unknown.get("raw", b""))
    return {"kind": kind, "apiVersion": type_meta.get("apiVersion", ""), **obj}
