"""Generate ``kube/data/schema.json``, the field schema the strict decoder checks against.

kube-apiserver rejects unknown and duplicate fields under ``fieldValidation=Strict`` because it
decodes into Go structs. kubernetes-asyncio's generated models carry the same information, but
importing them costs about a second, so the part reachable from the kinds we load is dumped
into a small JSON file, committed and shipped as package data. When
``tests/kube/test_strict_schema.py`` fails because the installed client would generate
something else, run ``.venv/bin/python -m kube.schemagen``.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any, Final

__all__ = ["KINDS", "QUANTITY_FIELDS", "SCHEMA_PATH", "generate", "main", "render"]

SCHEMA_PATH: Final = Path(__file__).with_name("data") / "schema.json"

# apiVersion, kind → kubernetes-asyncio model: everything kubesim serves or a manifest may hold.
KINDS: Final = {
    ("v1", "Pod"): "V1Pod",
    ("v1", "Node"): "V1Node",
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "Event"): "CoreV1Event",
    ("v1", "ReplicationController"): "V1ReplicationController",
    ("v1", "Service"): "V1Service",
    ("v1", "Endpoints"): "V1Endpoints",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "PersistentVolume"): "V1PersistentVolume",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("v1", "LimitRange"): "V1LimitRange",
    ("v1", "ResourceQuota"): "V1ResourceQuota",
    ("v1", "Binding"): "V1Binding",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "ReplicaSet"): "V1ReplicaSet",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("apps/v1", "ControllerRevision"): "V1ControllerRevision",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("policy/v1", "Eviction"): "V1Eviction",
    ("scheduling.k8s.io/v1", "PriorityClass"): "V1PriorityClass",
    ("coordination.k8s.io/v1", "Lease"): "V1Lease",
    ("autoscaling/v1", "Scale"): "V1Scale",
    ("events.k8s.io/v1", "Event"): "EventsV1Event",
    ("authentication.k8s.io/v1", "TokenRequest"): "AuthenticationV1TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "V1TokenReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "V1SelfSubjectReview",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "V1SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "V1SelfSubjectRulesReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "V1SubjectAccessReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "V1LocalSubjectAccessReview",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ): "V1ValidatingAdmissionPolicy",
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
    ): "V1ValidatingAdmissionPolicyBinding",
}

# (model, attribute) whose type is resource.Quantity (or a map of them) in the OpenAPI schema.
QUANTITY_FIELDS: Final = frozenset(
    {
        ("V1ResourceRequirements", "limits"),
        ("V1ResourceRequirements", "requests"),
        ("V1VolumeResourceRequirements", "limits"),
        ("V1VolumeResourceRequirements", "requests"),
        ("V1NodeStatus", "capacity"),
        ("V1NodeStatus", "allocatable"),
        ("V1PodSpec", "overhead"),
        ("V1ContainerStatus", "allocated_resources"),
        ("V1EmptyDirVolumeSource", "size_limit"),
        ("V1ResourceFieldSelector", "divisor"),
        ("V1PersistentVolumeSpec", "capacity"),
        ("V1PersistentVolumeClaimStatus", "capacity"),
        ("V1PersistentVolumeClaimStatus", "allocated_resources"),
        ("V1ResourceQuotaSpec", "hard"),
        ("V1ResourceQuotaStatus", "hard"),
        ("V1ResourceQuotaStatus", "used"),
        ("V1LimitRangeItem", "default"),
        ("V1LimitRangeItem", "default_request"),
        ("V1LimitRangeItem", "max"),
        ("V1LimitRangeItem", "min"),
        ("V1LimitRangeItem", "max_limit_request_ratio"),
    }
)

_SCALARS: Final = frozenset({"str", "int", "float", "bool", "datetime", "date", "object"})
_LIST = re.compile(r"list\[(.+)\]")
_DICT = re.compile(r"dict\(str, (.+)\)")


def _models() -> Any:
    return importlib.import_module("kubernetes_asyncio.client.models")


def _quantity(type_name: str) -> str:
    if type_name == "str":
        return "quantity"
    if (m := _DICT.fullmatch(type_name)) and m[1] == "str":
        return "dict(str, quantity)"
    raise ValueError(f"not a quantity type: {type_name}")


def generate() -> dict[str, Any]:
    """The schema of every kind in ``KINDS`` and of every model reachable from them.

    Read from the models' ``openapi_types`` (attribute → type) and ``attribute_map`` (attribute →
    JSON key). They lose one fact of the OpenAPI schema: which ``string`` fields are
    ``resource.Quantity`` (a quantity may be written as a JSON number). ``QUANTITY_FIELDS`` lists
    them so that ``cpu: 2`` is accepted as kube-apiserver accepts it.
    """
    models = _models()
    for model, attr in sorted(QUANTITY_FIELDS):
        if attr not in getattr(models, model).openapi_types:
            raise ValueError(f"QUANTITY_FIELDS: {model} has no attribute {attr}")
    types: dict[str, dict[str, str]] = {}
    todo = list(KINDS.values())
    while todo:
        name = todo.pop()
        if name in types:
            continue
        cls = getattr(models, name)
        fields: dict[str, str] = {}
        for attr, declared in cls.openapi_types.items():
            type_name = _quantity(declared) if (name, attr) in QUANTITY_FIELDS else declared
            fields[cls.attribute_map[attr]] = type_name
            inner = type_name
            while m := (_LIST.fullmatch(inner) or _DICT.fullmatch(inner)):
                inner = m[1]
            if inner not in _SCALARS and inner != "quantity":
                todo.append(inner)
        types[name] = dict(sorted(fields.items()))
    version = importlib.import_module("kubernetes_asyncio").__version__
    return {
        "generator": f"kubernetes_asyncio {version}",
        "kinds": {f"{v}/{k}": model for (v, k), model in sorted(KINDS.items())},
        "types": dict(sorted(types.items())),
    }


def render(schema: dict[str, Any]) -> str:
    """One type per line: small, and diffs stay readable."""
    lines = ["{"]
    lines.append(f'"generator": {json.dumps(schema["generator"])},')
    lines.append(f'"kinds": {json.dumps(schema["kinds"], separators=(",", ":"))},')
    lines.append('"types": {')
    items = list(schema["types"].items())
    for i, (name, fields) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}:{json.dumps(fields, separators=(',', ':'))}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main() -> int:
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
