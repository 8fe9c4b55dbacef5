"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of a workload's replicas.

``kubectl scale`` (and the HPA, and the disruption controller's ``getScaleController``) never
edit a workload itself: they read and write ``/scale``, a ``Scale`` whose ``spec.replicas`` is
the workload's and whose ``status`` carries the observed ``replicas`` and the pod ``selector``
as a string (``pkg/registry/core/replicationcontroller/storage``, ``pkg/registry/apps/*``).
PATCH applies the patch to the Scale and then behaves as PUT (``apply_scale``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.reader import NEGATIVE
from kubesim.core.errors import Cause, bad_request, invalid
from kubesim.core.objects import meta_of, selector_string
from kubesim.core.scheme import ResourceType
from kubesim.core.store import clone

__all__ = ["SCALE_API_VERSION", "apply_scale", "to_scale"]

SCALE_API_VERSION: Final = "autoscaling/v1"


def to_scale(rt: ResourceType, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Scale of a stored workload (GET): name, namespace, uid, resourceVersion and
    creationTimestamp of the workload. A ReplicationController's selector is a plain map
    (``app=web,tier=db``); the apps kinds' ``LabelSelector`` is printed as
    ``labels.Selector.String()`` does (``k in (a,b)``, ``!k``), by ``kube.labels``."""
    meta = meta_of(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    scale_status: dict[str, Any] = {"replicas": int(status.get("replicas") or 0)}
    selector = selector_string(spec.get("selector"), plain_map=rt.kind == "ReplicationController")
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": {"replicas": int(spec.get("replicas") or 0)},
        "status": scale_status,
    }


def apply_scale(
    rt: ResourceType, obj: Mapping[str, Any], scale: Any, *, name: str
) -> dict[str, Any]:
    """The workload (wire shape) with the Scale's replicas, for an update; or 400/422.

    The Scale's name must be the URL's (400), ``spec.replicas`` must not be negative (422
    ``Scale.autoscaling "<name>" is invalid: spec.replicas: Invalid value: -1: must be greater
    than or equal to 0``), a ``metadata.resourceVersion`` is a precondition on the workload
    (409 on a stale one); only ``spec.replicas`` of the workload changes, so its
    ``generation`` grows."""
    if not isinstance(scale, Mapping):
        raise bad_request("the object provided is unrecognized (must be of type Scale)")
    scale_meta = meta_of(scale)
    body_name = scale_meta.get("name") or ""
    if body_name != name:
        raise bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )
    spec = scale.get("spec")
    replicas = spec.get("replicas", 0) if isinstance(spec, Mapping) else 0
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise bad_request(
            f'Scale in version "v1" cannot be handled as a Scale: spec.replicas: must be an'
            f" integer, not {replicas!r}"
        )
    if replicas < 0:
        raise invalid(
            "Scale",
            "autoscaling",
            name,
            [
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: {NEGATIVE}",
                    "spec.replicas",
                )
            ],
        )
    new: dict[str, Any] = clone(dict(obj))
    new.setdefault("spec", {})["replicas"] = replicas
    new.setdefault("metadata", {})["resourceVersion"] = scale_meta.get("resourceVersion") or ""
    return new
