"""The ``pods/eviction`` subresource as storage: kube-apiserver's ``EvictionREST``, without HTTP.

The eviction subresource is how ``kubectl drain``, the cluster autoscaler and the descheduler
remove pods without breaking PodDisruptionBudgets. This module reproduces
``pkg/registry/core/pod/storage/eviction.go`` (policy/v1 with ``unhealthyPodEvictionPolicy``
and the ``DisruptionTarget`` condition) with what the generic create handler does around it;
``EvictionStorage.create`` lists the steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from kube.conditions import DISRUPTION_TARGET, update_pod_condition
from kube.times import format_time
from kubesim.core.attributes import in_process
from kubesim.core.conditions import is_pod_ready, update_disruption_allowed_condition
from kubesim.core.errors import (
    Cause,
    StatusError,
    bad_request,
    check_body_namespace,
    conflict,
    forbidden,
    success_status,
    too_many_requests,
)
from kubesim.core.objects import meta_of, pdb_selects
from kubesim.core.store import clone
from kubesim.registry.generic import DeleteOptions, GenericStore

__all__ = [
    "EVICTION_MESSAGE",
    "MAX_DISRUPTED_POD_SIZE",
    "EvictionStorage",
]

MAX_DISRUPTED_POD_SIZE: Final = 2000
EVICTION_MESSAGE: Final = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS: Final = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not"
    " support."
)
ACCEPTED_VERSIONS: Final = ("policy/v1", "policy/v1beta1")
DISRUPTION_BUDGET_CAUSE: Final = "DisruptionBudget"


def _still_processing(pdb_name: str) -> StatusError:
    """``createTooManyRequestsError``: 429 with Retry-After 10."""
    err = too_many_requests(EVICTION_MESSAGE, 10)
    err.causes = (
        Cause(
            DISRUPTION_BUDGET_CAUSE,
            f"The disruption budget {pdb_name} is still being processed by the server.",
        ),
    )
    return err


def _can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return phase in ("Succeeded", "Failed", "Pending") or deleting


def _should_enforce_resource_version(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return not (phase in ("Succeeded", "Failed") or deleting)


def _go_list(values: list[str]) -> str:
    """``fmt`` ``%v`` of a ``[]string``."""
    return "[" + " ".join(values) + "]"


class EvictionStorage:
    """The ``pods/eviction`` subresource over the generic store: kube's ``EvictionREST``."""

    def __init__(self, registry: GenericStore) -> None:
        self.registry = registry
        pods = registry.scheme.for_kind("v1", "Pod")
        pdbs = registry.scheme.for_kind("policy/v1", "PodDisruptionBudget")
        assert pods is not None and pdbs is not None
        self.pods = pods
        self.pdbs = pdbs
        # what a request body is decoded as (``policy/v1 Eviction``), for the endpoints
        self.body_type = dataclasses.replace(pods, kind="Eviction")

    def create(
        self, namespace: str, name: str, eviction: Mapping[str, Any], *, dry_run: list[str]
    ) -> dict[str, Any]:
        """Evict; returns the Success Status body or raises the StatusError kube would.

        In this order:

        1. the body is an ``Eviction`` in ``policy/v1`` or ``policy/v1beta1`` (JSON, YAML or
           protobuf); a namespace in the body must be the URL's (400); the dry-run query is
           validated as ``CreateOptions`` (422);
        2. ``name in URL does not match name in Eviction object`` (400, also for an empty name);
        3. ``propagateDryRun``: a dry run given in the query or in ``deleteOptions.dryRun`` is
           copied to the other; both given and different is a plain Go error, which the apiserver
           turns into a 500 with an empty reason (``ErrorToAPIStatus``), not a 400;
        4. admission: NamespaceLifecycle (404 for a missing namespace, 403 with the
           ``NamespaceTerminating`` cause while it is being deleted);
        5. the pod (404 when missing); pods that ``canIgnorePDB`` — ``Succeeded``, ``Failed``,
           ``Pending`` or already terminating — are deleted without looking at budgets, a Pending
           pod with a ``resourceVersion`` precondition unless the caller gave one;
        6. the PDBs of the pod's namespace whose selector matches (policy/v1: ``{}`` matches every
           pod, an absent or invalid selector nothing): more than one is a 500 Status with an empty
           reason; none means the eviction is allowed;
        7. an unready pod is deleted without touching the budget when the policy is ``AlwaysAllow``,
           or (``IfHealthyBudget``, the default) when ``currentHealthy >= desiredHealthy > 0``; the
           delete then carries the pod's resourceVersion and a conflict becomes the "still being
           processed" 429;
        8. ``checkAndDecrement``: ``observedGeneration < generation`` → 429 with Retry-After 10;
           ``disruptionsAllowed < 0`` → 403; more than 2000 ``disruptedPods`` → 403;
           ``disruptionsAllowed == 0`` → 429 with no Retry-After; otherwise the budget is
           decremented, the ``DisruptionAllowed`` condition turns False/InsufficientPods at 0, the
           pod is recorded in ``disruptedPods`` and the status written (nothing is written on a dry
           run);
        9. ``addConditionAndDeletePod``: unless dry run, the UID and resourceVersion preconditions
           are checked against the stored pod (409 with upstream's wording), the pod gets
           ``DisruptionTarget=True`` (``EvictionByEvictionAPI``, "Eviction API: evicting") and is
           then deleted with the caller's DeleteOptions (gracefully);
        10. success is ``201`` with ``Status{status: Success, code: 201}``.

        Upstream wraps steps 5 and 8 in conflict retries (20 × ~500 ms) because another writer may
        change the pod or the PDB between its read and its write. kubesim's handler reads and writes
        without yielding to the event loop, so no other request or controller can interleave and
        those retries could never trigger; they are not reproduced. The endpoints decode the request
        and validate its dry-run query (``kubesim.endpoints.subresources``); the rest is here.
        """
        self._check_type(eviction)
        meta = eviction.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise bad_request("the object provided is unrecognized (must be of type Eviction)")
        check_body_namespace(meta.get("namespace") or "", namespace)
        if (meta.get("name") or "") != name:
            raise bad_request("name in URL does not match name in Eviction object")
        raw_opts = eviction.get("deleteOptions")
        opts_body: dict[str, Any] = dict(raw_opts) if isinstance(raw_opts, Mapping) else {}
        body_dry = opts_body.get("dryRun")
        body_dry_run = [str(v) for v in body_dry] if isinstance(body_dry, list) else []
        if not body_dry_run:
            opts_body["dryRun"] = list(dry_run)
        elif dry_run and dry_run != body_dry_run:
            raise StatusError(
                500,
                "",
                "Non-matching dry-run options in request and content:"
                f" {_go_list(dry_run)} and {_go_list(body_dry_run)}",
                has_details=False,
            )
        self.registry.admit_namespace(self.pods, namespace, name)
        original = DeleteOptions.from_body_and_query(opts_body, {})
        # Validating admission sees the Eviction, not the pod (the pod's own update and delete
        # below are the registry's, not admitted again).
        self.registry.run_validating_admission(
            "CREATE",
            self.pods,
            eviction,
            None,
            subresource="eviction",
            dry_run=bool(opts_body.get("dryRun")),
            kind=("policy", "v1", "Eviction"),
        )
        with in_process():
            return self._evict(namespace, name, original)

    def _evict(self, namespace: str, name: str, original: DeleteOptions) -> dict[str, Any]:
        pod = self.registry.get(self.pods, namespace, name)
        if _can_ignore_pdb(pod):
            options = dataclasses.replace(original)
            if _should_enforce_resource_version(pod) and original.resource_version is None:
                options.resource_version = meta_of(pod).get("resourceVersion")
            self._add_condition_and_delete(namespace, name, options)
            return success_status(code=201)

        pdbs = self._pdbs_for(pod)
        if len(pdbs) > 1:
            raise StatusError(500, "", MULTIPLE_PDBS, has_details=False)
        enforce_rv = False
        pdb_name = ""
        if pdbs:
            pdb = pdbs[0]
            pdb_name = meta_of(pdb).get("name", "")
            if not is_pod_ready(pod):
                spec = pdb.get("spec") or {}
                status = pdb.get("status") or {}
                current = int(status.get("currentHealthy") or 0)
                desired = int(status.get("desiredHealthy") or 0)
                if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or (
                    current >= desired > 0
                ):
                    enforce_rv = True
            if not enforce_rv:
                self._check_and_decrement(pod, pdb, dry_run=original.dry_run)
        options = dataclasses.replace(original)
        if enforce_rv:
            options.resource_version = meta_of(pod).get("resourceVersion")
        try:
            self._add_condition_and_delete(namespace, name, options)
        except StatusError as err:
            if err.code == 409 and enforce_rv and original.resource_version is None:
                raise _still_processing(pdb_name) from None
            raise
        return success_status(code=201)

    def _check_type(self, eviction: Mapping[str, Any]) -> None:
        api_version = eviction.get("apiVersion")
        if api_version and api_version not in ACCEPTED_VERSIONS:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API"
                " version (policy/v1)"
            )
        kind = eviction.get("kind")
        if kind and kind != "Eviction":
            raise bad_request(
                f"the object provided is unrecognized (must be of type Eviction): {kind} in"
                f' version "{api_version or ""}" cannot be handled as a Eviction'
            )

    def _pdbs_for(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        meta = meta_of(pod)
        labels = meta.get("labels") or {}
        return [
            pdb
            for pdb in self.registry.store.items(self.pdbs.storage_name, meta.get("namespace", ""))
            if pdb_selects(pdb, labels)
        ]

    def _check_and_decrement(
        self, pod: Mapping[str, Any], pdb: dict[str, Any], *, dry_run: bool
    ) -> None:
        meta = meta_of(pdb)
        name = meta.get("name", "")
        status = clone(pdb.get("status") or {})
        if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
            raise _still_processing(name)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise forbidden(
                "poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative"
            )
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
            raise forbidden(
                "poddisruptionbudget",
                "policy",
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )
        if allowed == 0:
            err = too_many_requests(EVICTION_MESSAGE, 0)
            err.causes = (
                Cause(
                    DISRUPTION_BUDGET_CAUSE,
                    f"The disruption budget {name} needs"
                    f" {int(status.get('desiredHealthy') or 0)} healthy pods and has"
                    f" {int(status.get('currentHealthy') or 0)} currently",
                ),
            )
            raise err
        now = self.registry.clock()
        status["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            update_disruption_allowed_condition(status, now=now)
        if dry_run:
            return
        disrupted = status.get("disruptedPods")
        if not isinstance(disrupted, dict):
            disrupted = status["disruptedPods"] = {}
        disrupted[meta_of(pod).get("name", "")] = format_time(now)
        new = clone(pdb)
        new["status"] = status
        self.registry.update(self.pdbs, meta.get("namespace", ""), name, new, subresource="status")

    def _add_condition_and_delete(self, namespace: str, name: str, options: DeleteOptions) -> None:
        registry = self.registry
        if not options.dry_run:
            latest = registry.get(self.pods, namespace, name)
            meta = meta_of(latest)
            if options.uid and options.uid != meta.get("uid"):
                raise conflict(
                    "Pod",
                    "",
                    name,
                    f"the UID in the precondition ({options.uid}) does not match the UID in"
                    f" record ({meta.get('uid', '')}). The object might have been deleted and"
                    " then recreated",
                )
            if options.resource_version and options.resource_version != meta.get("resourceVersion"):
                raise conflict(
                    "Pod",
                    "",
                    name,
                    f"the ResourceVersion in the precondition ({options.resource_version}) does"
                    f" not match the ResourceVersion in record ({meta.get('resourceVersion', '')})."
                    " The object might have been modified",
                )
            updated, _ = registry.update(
                self.pods,
                namespace,
                name,
                _with_disruption_target(latest, registry.clock()),
                subresource="status",
            )
            if options.resource_version:
                options.resource_version = meta_of(updated).get("resourceVersion")
        registry.delete(self.pods, namespace, name, options)


def _with_disruption_target(pod: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The pod with ``DisruptionTarget=True`` (``EvictionByEvictionAPI``)."""
    new: dict[str, Any] = clone(pod)
    update_pod_condition(
        new.setdefault("status", {}),
        {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        },
        now=now,
    )
    return new
