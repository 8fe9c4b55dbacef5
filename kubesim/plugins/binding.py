"""The ``pods/binding`` subresource as storage: kube-apiserver's ``BindingREST``, without HTTP.

A scheduler never updates ``spec.nodeName`` itself (the pod update validation forbids it);
it creates a ``v1 Binding`` for the pod and the apiserver assigns the pod in one guarded
write (``pkg/registry/core/pod/storage/storage.go``: ``BindingREST.Create`` → ``assignPod`` →
``setPodNodeAndMetadata``). The endpoints decode the request and call ``BindingStorage.create``
(``kubesim.endpoints.subresources``); the scheduler loop calls ``BindingStorage.bind`` in
process (the same checks), so its write path is one dict copy and one store write per pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from kube.conditions import update_pod_condition
from kubesim.core.attributes import in_process
from kubesim.core.errors import (
    Cause,
    bad_request,
    check_body_namespace,
    conflict,
    invalid,
    not_found,
    success_status,
)
from kubesim.core.store import clone
from kubesim.registry.generic import GenericStore

__all__ = ["BindingStorage"]

POD_SCHEDULED: Final = "PodScheduled"


class BindingStorage:
    """The ``pods/binding`` subresource over the generic store: kube's ``BindingREST``."""

    def __init__(self, registry: GenericStore) -> None:
        self.registry = registry
        pods = registry.scheme.for_kind("v1", "Pod")
        assert pods is not None
        self.pods = pods
        # what a request body is decoded as (``v1 Binding``), for the endpoints
        self.body_type = dataclasses.replace(pods, kind="Binding")

    def create(
        self, namespace: str, name: str, binding: Mapping[str, Any], *, dry_run: list[str]
    ) -> dict[str, Any]:
        """``BindingREST.Create`` for a decoded body: the Success ``Status`` it answers with.
        ``dry_run``: the request's ``dryRun`` values, which the endpoints validated.

        Validating admission sees the Binding (for an API request); the pod's own write is the
        storage's, not admitted again. In this order:

        1. the body is a ``v1 Binding`` (JSON, YAML or protobuf); ``name in URL does not match name
           in Binding object`` is a 400; a namespace in the body must be the URL's (400);
        2. ``ValidatePodBinding``: ``target.kind`` must be empty or ``Node`` and ``target.name`` is
           required (422 ``Binding "x" is invalid: target.name: Required value``);
        3. preconditions: ``metadata.uid`` and ``metadata.resourceVersion`` of the Binding, when
           given, must be the pod's (409 ``Precondition failed: UID in precondition: …`` — the pod's
           storage error, as upstream);
        4. the guarded update answers 409 ``Operation cannot be fulfilled on pods/binding "x": …``
           when the pod is being deleted (``pod x is being deleted, cannot be assigned to a host``),
           already bound (``pod x is already assigned to node "n"``) or still has scheduling gates
           (``pod x has non-empty .spec.schedulingGates``); a missing pod is a 404;
        5. otherwise ``spec.nodeName`` is set, the Binding's annotations are merged into the pod's,
           the ``PodScheduled`` condition becomes True (``UpdatePodCondition``: the transition time
           moves only when the status changes) and the pod is written once (one watch event);
        6. the answer is ``201`` with a Success ``Status``; ``dryRun=All`` checks everything and
           writes nothing.

        ``ClearingNominatedNodeNameAfterBinding`` (1.34+) is not reproduced: as in the 1.32
        kube-apiserver kubesim reports by default, ``status.nominatedNodeName`` survives the bind.
        """
        self.registry.run_validating_admission(
            "CREATE",
            self.pods,
            binding,
            None,
            subresource="binding",
            dry_run=bool(dry_run),
            kind=("", "v1", "Binding"),
        )
        with in_process():
            self._create(namespace, name, binding, dry_run=bool(dry_run))
        return success_status(code=201)

    def _create(
        self, namespace: str, name: str, binding: Mapping[str, Any], *, dry_run: bool
    ) -> dict[str, Any]:
        api_version = binding.get("apiVersion")
        kind = binding.get("kind")
        if (api_version and api_version != "v1") or (kind and kind != "Binding"):
            raise bad_request(f"not a Binding object: {kind or ''} in version {api_version or ''}")
        meta = binding.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise bad_request("not a Binding object: metadata must be an object")
        check_body_namespace(meta.get("namespace") or "", namespace)
        if (meta.get("name") or "") != name:
            raise bad_request("name in URL does not match name in Binding object")
        target = binding.get("target") or {}
        if not isinstance(target, Mapping):
            target = {}
        causes: list[Cause] = []
        target_kind = target.get("kind") or ""
        if target_kind not in ("", "Node"):
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f'Unsupported value: "{target_kind}": supported values: "Node", "<empty>"',
                    "target.kind",
                )
            )
        if not target.get("name"):
            causes.append(Cause("FieldValueRequired", "Required value", "target.name"))
        if causes:
            raise invalid("Binding", "", name, causes)
        annotations = meta.get("annotations") or {}
        return self.bind(
            namespace,
            name,
            str(target["name"]),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            annotations=annotations if isinstance(annotations, Mapping) else {},
            dry_run=dry_run,
        )

    def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        uid: str = "",
        resource_version: str = "",
        annotations: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """``setPodNodeAndMetadata``: the guarded write; returns the stored pod."""
        registry = self.registry
        key = (namespace, name)
        pod = registry.store.get("pods", key)
        if pod is None:
            raise not_found("pods", "", name)
        meta = pod.get("metadata") or {}
        if uid and uid != meta.get("uid"):
            raise conflict(
                "pods",
                "",
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta:"
                f" {meta.get('uid', '')}",
            )
        if resource_version and resource_version != meta.get("resourceVersion"):
            raise conflict(
                "pods",
                "",
                name,
                f"Precondition failed: ResourceVersion in precondition: {resource_version},"
                f" ResourceVersion in object meta: {meta.get('resourceVersion', '')}",
            )
        spec = pod.get("spec") or {}
        if meta.get("deletionTimestamp"):
            raise conflict(
                "pods/binding",
                "",
                name,
                f"pod {name} is being deleted, cannot be assigned to a host",
            )
        if spec.get("nodeName"):
            raise conflict(
                "pods/binding",
                "",
                name,
                f'pod {name} is already assigned to node "{spec["nodeName"]}"',
            )
        if spec.get("schedulingGates"):
            raise conflict(
                "pods/binding", "", name, f"pod {name} has non-empty .spec.schedulingGates"
            )
        # Copy only what changes: the stored object is never mutated.
        new = dict(pod)
        new_meta = dict(meta)
        new["metadata"] = new_meta
        new["spec"] = {**spec, "nodeName": node_name}
        if annotations:
            new_meta["annotations"] = {
                **(meta.get("annotations") or {}),
                **{str(k): str(v) for k, v in annotations.items()},
            }
        status = clone(pod.get("status") or {})
        update_pod_condition(
            status, {"type": POD_SCHEDULED, "status": "True"}, now=registry.clock()
        )
        new["status"] = status
        if dry_run:
            return new
        rv = registry.store.next_rv()
        new_meta["resourceVersion"] = str(rv)
        registry.store.put("pods", key, new, rv=rv)
        return new
