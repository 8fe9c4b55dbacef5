"""The ``scale`` subresource (``autoscaling/v1`` ``Scale``) of the scalable workloads.

``kubectl scale`` and the HorizontalPodAutoscaler never touch a Deployment's spec directly:
they GET ``.../deployments/NAME/scale`` and PATCH or PUT a ``Scale`` back. kube-apiserver
serves it from the parent's storage (``pkg/registry/apps/deployment/storage.ScaleREST``):

* GET: ``metadata`` is the parent's (name, namespace, uid, resourceVersion,
  creationTimestamp), ``spec.replicas`` its ``spec.replicas``, ``status.replicas`` its
  ``status.replicas`` and ``status.selector`` its selector in label-selector string form
  (``metav1.FormatLabelSelector``; a ReplicationController's map selector likewise);
* PUT/PATCH: the patch applies to the Scale; only ``spec.replicas`` is copied to the parent,
  whose update keeps optimistic concurrency (a Scale carrying a stale ``resourceVersion`` is a
  409) and bumps ``generation``. ``spec.replicas`` must be >= 0 (422 ``Invalid value``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from kubesim.apiserver.patch import PATCH_TYPES, apply_patch
from kubesim.apiserver.resources import ResourceType
from kubesim.apiserver.rest import check_dry_run
from kubesim.apiserver.server import RequestContext, decode_body, json_response
from kubesim.apiserver.status import Cause, StatusError, bad_request, unsupported_media_type
from kubesim.apiserver.store import clone
from scheduler.labels import LabelSelector, SelectorError

if TYPE_CHECKING:
    from kubesim.sim import Simulator

__all__ = ["SCALABLE", "ScaleREST", "install"]

SCALABLE: Final = (
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("", "replicationcontrollers"),
)


def _selector_string(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec") or {}
    raw = spec.get("selector")
    if obj.get("kind") == "ReplicationController":
        labels = raw or ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        return ",".join(f"{k}={v}" for k, v in sorted(dict(labels).items()))
    try:
        return str(LabelSelector.from_dict(raw))
    except SelectorError:
        return ""


class ScaleREST:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def to_scale(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        replicas = (obj.get("spec") or {}).get("replicas")
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": 1 if replicas is None else int(replicas)},
            "status": {
                "replicas": int((obj.get("status") or {}).get("replicas") or 0),
                "selector": _selector_string(obj),
            },
        }

    async def handle(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        verb = ctx.info.verb
        rest = self.sim.rest
        namespace, name = ctx.info.namespace, ctx.info.name
        current = rest.get(rt, namespace, name)
        if verb == "get":
            return json_response(self.to_scale(current))
        if verb == "update":
            dry = check_dry_run(ctx.query.getall("dryRun", []), kind="UpdateOptions")
            scale = decode_body(ctx, rt)
        elif verb == "patch":
            dry = check_dry_run(ctx.query.getall("dryRun", []), kind="PatchOptions")
            ctype = (ctx.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype not in PATCH_TYPES:
                raise unsupported_media_type(ctype, PATCH_TYPES)
            scale = apply_patch(self.to_scale(current), ctx.body, ctype, kind="Scale")
        else:
            raise StatusError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        return json_response(self.update(rt, namespace, name, scale, dry_run=dry))

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        scale: Any,
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        if not isinstance(scale, Mapping):
            raise bad_request("the object provided is unrecognized (must be of type Scale)")
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            raise bad_request(
                "the object provided is unrecognized (must be of type Scale): json: cannot"
                f" unmarshal {json.dumps(replicas)} into Go struct field ScaleSpec.spec.replicas"
                " of type int32"
            )
        if replicas < 0:
            message = f"Invalid value: {replicas}: must be greater than or equal to 0"
            raise StatusError(
                422,
                "Invalid",
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: {message}',
                kind="Scale",
                group="autoscaling",
                name=name,
                causes=(Cause("FieldValueInvalid", message, "spec.replicas"),),
            )
        current = self.sim.rest.get(rt, namespace, name)
        new = clone(current)
        new["spec"]["replicas"] = replicas
        want_rv = (scale.get("metadata") or {}).get("resourceVersion")
        new["metadata"]["resourceVersion"] = want_rv or ""
        obj, _ = self.sim.rest.update(rt, namespace, name, new, dry_run=dry_run)
        return self.to_scale(obj)


def install(sim: Simulator) -> ScaleREST:
    """Serve ``<kind>/scale`` for the scalable kinds this simulator's registry has."""
    handler = ScaleREST(sim)
    for group, plural in SCALABLE:
        for rt in sim.registry.types:
            if rt.group == group and rt.plural == plural and rt.subresource("scale"):
                sim.server.subresources[(group, plural, "scale")] = handler.handle
    return handler
