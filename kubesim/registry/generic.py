"""The generic store: create, get, list, update, patch and delete with kube's semantics.

``GenericStore`` is ``k8s.io/apiserver/pkg/registry/generic/registry.Store``: one
implementation for every kind over the object store (``kubesim.core.store``), each kind's
differences in its strategy (``kubesim.registry.validation``), admission called through the
shapes of ``kubesim.registry.admission``. It knows nothing of HTTP, so the endpoints, the
in-process API (``sim.apply``), the controllers, kubelets and scheduler loop, and the
eviction and binding storage all write through the same code (as ``sim.registry``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kube.labels import FieldRequirement, LabelSelector
from kube.objects import DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
from kube.qos import InvalidPodResources, compute_pod_qos
from kube.times import format_time
from kubesim.core import events as event_conv
from kubesim.core.attributes import current_attributes, current_field_manager
from kubesim.core.errors import (
    MODIFIED_CONFLICT,
    Cause,
    StatusError,
    already_exists,
    bad_request,
    check_body_namespace,
    conflict,
    forbidden,
    generate_name_conflict,
    not_found,
    success_status,
)
from kubesim.core.managedfields import manager as fieldmanager
from kubesim.core.managedfields.schema import root_type
from kubesim.core.names import generate_name, new_uid
from kubesim.core.objects import meta_of
from kubesim.core.scheme import ResourceType, Scheme
from kubesim.core.store import Key, Shared, Store, clone, dumps
from kubesim.registry.admission import (
    AdmissionCall,
    AdmissionPlugin,
    ValidatingAdmission,
    current_notes,
)
from kubesim.registry.validation import (
    apply_defaults,
    apply_update_defaults,
    check_type,
    decode_check,
    normalize_seed_times,
    strategy_for,
    validate,
    validate_update,
)

__all__ = [
    "DeleteOptions",
    "GenericStore",
]

SCHEDULING_GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"
GENERATE_NAME_ATTEMPTS: Final = 8  # maxNameGenerationCreateAttempts
PROTECTED_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})

_EMPTY_STATUS: Final[dict[str, dict[str, Any]]] = {
    "PodDisruptionBudget": {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
    "ReplicaSet": {"replicas": 0},
    "ReplicationController": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
}

# Seeded objects of these kinds are defaulted as etcd would hold them (controllers and kubectl
# compare a Deployment's template with its ReplicaSets'); pods are kept exactly as given.
_SEED_DEFAULTED: Final = frozenset(
    {
        "Namespace",
        "PriorityClass",
        "Deployment",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
    }
)


@dataclass(slots=True)
class DeleteOptions:
    """``metav1.DeleteOptions`` as far as the served kinds use it."""

    grace_period_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    propagation_policy: str | None = None
    dry_run: bool = False
    orphan_dependents: bool | None = None

    @classmethod
    def from_body_and_query(
        cls,
        body: Mapping[str, Any] | None,
        query: Mapping[str, str],
        dry_run_query: Iterable[str] = (),
    ) -> DeleteOptions:
        """The request's options: the body's when there is one, else the query's.

        As the DELETE handler (``handlers.DeleteResource``): a non-empty body is decoded and
        the query is not read at all; only a request without a body reads its parameters.
        """
        src: Mapping[str, Any] = body if body is not None else _query_options(query, dry_run_query)
        opts = cls()
        grace = src.get("gracePeriodSeconds")
        if grace is not None:
            if isinstance(grace, bool) or not isinstance(grace, int):
                raise bad_request("gracePeriodSeconds must be an integer")
            opts.grace_period_seconds = grace
        pre = src.get("preconditions") or {}
        if isinstance(pre, Mapping):
            opts.uid = pre.get("uid")
            opts.resource_version = pre.get("resourceVersion")
        opts.propagation_policy = src.get("propagationPolicy") or None
        if opts.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
            raise StatusError(
                422,
                "Invalid",
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value:'
                f' "{opts.propagation_policy}": supported values: "Foreground", "Background",'
                ' "Orphan", "nil"',
                kind="DeleteOptions",
                group="meta.k8s.io",
                causes=(
                    Cause(
                        "FieldValueNotSupported",
                        f'Unsupported value: "{opts.propagation_policy}": supported values:'
                        ' "Foreground", "Background", "Orphan", "nil"',
                        "propagationPolicy",
                    ),
                ),
            )
        dry = src.get("dryRun")
        opts.dry_run = check_dry_run([str(v) for v in dry] if isinstance(dry, list) else [])
        orphan = src.get("orphanDependents")
        if isinstance(orphan, bool):
            opts.orphan_dependents = orphan
        return opts


def _query_options(query: Mapping[str, str], dry_run: Iterable[str]) -> dict[str, Any]:
    """DeleteOptions from URL parameters (``ParameterCodec.DecodeParameters``)."""
    out: dict[str, Any] = {"dryRun": list(dry_run)}
    raw = query.get("gracePeriodSeconds")
    if raw not in (None, ""):
        try:
            out["gracePeriodSeconds"] = int(str(raw))
        except ValueError:
            raise bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None
    if query.get("propagationPolicy"):
        out["propagationPolicy"] = query["propagationPolicy"]
    raw = query.get("orphanDependents")
    if raw not in (None, ""):
        text = str(raw)
        if text.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')
        out["orphanDependents"] = text.lower() in ("true", "1", "t")
    return out


def check_dry_run(values: Iterable[str] | None, *, kind: str = "DeleteOptions") -> bool:
    """``dryRun`` must be ``All`` (or absent): 400 otherwise, as ``ValidateDryRun``."""
    vals = [v for v in (values or []) if v != ""]
    for v in vals:
        if v != "All":
            raise StatusError(
                422,
                "Invalid",
                f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["{v}"]:'
                ' supported values: "All"',
                kind=kind,
                group="meta.k8s.io",
                causes=(
                    Cause(
                        "FieldValueNotSupported",
                        f'Unsupported value: ["{v}"]: supported values: "All"',
                        "dryRun",
                    ),
                ),
            )
    return bool(vals)


def _as_dict(value: Any) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def _key(rt: ResourceType, namespace: str, name: str) -> Key:
    return (namespace if rt.namespaced else "", name)


class GenericStore:
    """kube's generic ``registry.Store`` over one object ``Store``, for every served kind."""

    def __init__(
        self,
        store: Store,
        scheme: Scheme,
        *,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.scheme = scheme
        self.clock = clock
        self.rng = rng or random.Random()
        self.admission: list[AdmissionPlugin] = []
        # The validating phase of the built-in plugins (Priority's one-globalDefault rule):
        # after the registry's validation, kubesim's own calls included.
        self.validating_plugins: list[AdmissionPlugin] = []
        # Run after those, for API requests only (kubesim's own calls are not admitted).
        self.validating_admission: list[ValidatingAdmission] = []
        # Pods the kubelet should start once bound to an existing node.
        self.pods_to_start: set[Key] = set()
        # Called after an object got its deletionTimestamp (the kubelet listens).
        self.on_graceful_delete: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        self._now: tuple[int, str] = (-1, "")

    # --- conversion between the wire shape of a type and its storage -----------------------

    @staticmethod
    def _wire_is_stored(rt: ResourceType) -> bool:
        """Whether ``rt``'s wire form is the stored form (all but events.k8s.io's Events,
        stored in the core shape)."""
        return rt.group != "events.k8s.io"

    def to_wire(self, rt: ResourceType, obj: Mapping[str, Any]) -> dict[str, Any]:
        if not self._wire_is_stored(rt):
            return event_conv.to_events_v1(obj)
        return dict(obj)

    def stored_encoding(self, rt: ResourceType, key: Key, obj: dict[str, Any]) -> bytes:
        """The JSON of ``to_wire(rt, obj)`` for ``obj``, a version stored at ``key`` (a watch
        event's object): the store's shared encoding when the wire form is the stored one."""
        if self._wire_is_stored(rt):
            return self.store.encoded(rt.storage_name, key, obj)
        return dumps(self.to_wire(rt, obj))

    def encoded(self, rt: ResourceType, wire: Mapping[str, Any]) -> bytes:
        """The JSON of ``wire``, a write's answer (``to_wire`` of what it stored): the store's
        encoding of the stored object when ``wire`` is a copy of it, so that the watch event
        announcing the write does not encode it again."""
        if self._wire_is_stored(rt):
            meta = wire.get("metadata")
            if isinstance(meta, dict):
                key = _key(rt, meta.get("namespace", ""), meta.get("name") or "")
                stored = self.store.get(rt.storage_name, key)
                if (
                    stored is not None
                    and len(stored) == len(wire)
                    and all(stored.get(k) is v for k, v in wire.items())
                ):
                    return self.store.encoded(rt.storage_name, key, stored)
        return dumps(wire)

    def from_wire(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if not self._wire_is_stored(rt):
            return event_conv.from_events_v1(obj)
        return obj

    def storage_type(self, rt: ResourceType) -> ResourceType:
        return self.scheme.for_storage(rt.storage_name)

    # --- reads ------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.storage_name, _key(rt, namespace, name))
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def find(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get(rt.storage_name, _key(rt, namespace, name))

    def matches(
        self,
        rt: ResourceType,
        obj: Mapping[str, Any],
        labels: LabelSelector | None,
        fields: tuple[FieldRequirement, ...],
    ) -> bool:
        if (
            labels is not None
            and not labels.is_empty()
            and not labels.matches(meta_of(obj).get("labels") or {})
        ):
            return False
        return all(req.matches(rt.field_value(obj, req.field)) for req in fields)

    def check_field_selector(self, rt: ResourceType, fields: tuple[FieldRequirement, ...]) -> None:
        allowed = rt.field_labels()
        for req in fields:
            if req.field not in allowed:
                raise bad_request(f"field label not supported: {req.field}")

    # --- create -----------------------------------------------------------------------------

    def prepare_create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        *,
        owned: bool = False,
        typed: bool = False,
    ) -> dict[str, Any]:
        """Type check, namespace, system fields, status reset, defaults; ``body`` is copied
        unless the caller hands it over (``owned``: a request's decoded body); ``typed``: its
        values were checked against the schema already (``check_type``)."""
        check_type(rt, body, typed=typed)
        stripped = _without_managed_fields(body)
        obj = _as_dict(stripped if owned else clone(stripped))
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        obj = self.from_wire(rt, obj)
        decode_check(self.storage_type(rt), obj)
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            body_ns = meta.get("namespace") or ""
            if namespace:
                check_body_namespace(body_ns, namespace)
            meta["namespace"] = namespace or body_ns or "default"
        else:
            meta.pop("namespace", None)
        for k in (
            "resourceVersion",
            "selfLink",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ):
            meta.pop(k, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = format_time(self.clock())
        if rt.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        self._reset_status_for_create(rt, obj)
        apply_defaults(rt, obj)
        return obj

    def _reset_status_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.kind == "Pod":
            obj["status"] = _pending_status(obj)
            if (obj.get("spec") or {}).get("schedulingGates"):
                # applySchedulingGatedCondition: the apiserver, not the scheduler, says so.
                obj["status"]["conditions"] = [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": None,
                        "reason": "SchedulingGated",
                        "message": SCHEDULING_GATED_MESSAGE,
                    }
                ]
        elif rt.kind == "Namespace":
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif rt.has_status and rt.kind != "Node":
            obj["status"] = clone(_EMPTY_STATUS.get(rt.kind, {}))

    def admit_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        """NamespaceLifecycle admission for a create in ``namespace``."""
        if not rt.namespaced:
            return
        ns_type = self.scheme.for_kind("v1", "Namespace")
        assert ns_type is not None
        ns = self.find(ns_type, "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if (
            meta_of(ns).get("deletionTimestamp")
            or (ns.get("status") or {}).get("phase") == "Terminating"
        ):
            raise forbidden(
                rt.plural,
                rt.group,
                name,
                f"unable to create new content in namespace {namespace} because it is being"
                " terminated",
                causes=(
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {namespace} is being terminated",
                        "metadata.namespace",
                    ),
                ),
            )

    def run_admission(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        for plugin in self.admission:
            plugin(op, rt, obj, old)

    def run_validating_plugins(
        self, op: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        for plugin in self.validating_plugins:
            plugin(op, rt, obj, old)

    def run_validating_admission(
        self,
        operation: str,
        rt: ResourceType,
        obj: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
        *,
        subresource: str = "",
        dry_run: bool = False,
        kind: tuple[str, str, str] | None = None,
        stored: bool = False,
    ) -> None:
        """Validating admission for the API request being served (none for in-process calls).
        ``stored``: ``obj`` and ``old`` are in the storage shape, turned into ``rt``'s wire
        shape only when a plugin is to see them."""
        request = current_attributes()
        if request is None or not self.validating_admission:
            return
        if stored:
            obj = None if obj is None else self.to_wire(rt, obj)
            old = None if old is None else self.to_wire(rt, old)
        meta = meta_of(obj if obj is not None else old or {})
        group, version, kind_name = kind if kind is not None else ("", "", "")
        call = AdmissionCall(
            operation=operation,
            rt=rt,
            subresource=subresource,
            namespace=str(meta.get("namespace") or request.namespace or ""),
            name=str(meta.get("name") or request.name or ""),
            obj=obj,
            old=old,
            request=request,
            dry_run=dry_run,
            kind=kind_name,
            kind_group=group,
            kind_version=version,
            notes=current_notes(),
        )
        for plugin in self.validating_admission:
            plugin(call)

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        managed_fields: list[dict[str, Any]] | None = None,
        owned: bool = False,
        typed: bool = False,
        stored: bool = False,
    ) -> dict[str, Any]:
        """POST (``rest.BeforeCreate``): returns the stored object in the wire shape of ``rt``,
        or with ``stored`` the object itself as stored (or as it would be, on a dry run),
        shared with the store: the caller reads it and never changes it.

        Namespace from the path (400 when the body names another), ``generateName`` with five
        random characters (a taken name is generated again, up to 8 names —
        RetryGenerateName —, then 409 ``… the server was not able to generate a unique
        name``), ``uid``/``creationTimestamp``/``resourceVersion`` set by the server,
        ``generation: 1`` for kinds with a spec, status reset (pods start ``Pending``; a pod
        with ``schedulingGates`` gets ``PodScheduled=False``, reason ``SchedulingGated``),
        defaults, admission (NamespaceLifecycle: 404 for a missing namespace, 403
        ``NamespaceTerminating`` while it is being deleted; then the mutating plugins of
        ``kubesim.plugins.admission``), validation (422), the validating plugins (403) and
        validating admission policies, then 409 ``AlreadyExists``; ``dryRun=All`` answers
        without storing. The creator (``field_manager``, kubesim's own name for in-process
        calls) owns every field it set (``metadata.managedFields``, operation ``Update``);
        ``managed_fields`` are an apply's, already computed. ``owned``: the caller hands
        ``body`` over and never reads it again (a request's decoded body), so it is not
        copied; ``typed``: every value of ``body`` was checked against the schema
        (``kubesim.endpoints.fieldvalidation``), so decoding does not walk it again."""
        sent = _sent_managed_fields(body)
        obj = self.prepare_create(rt, namespace, body, owned=owned, typed=typed)
        meta = obj["metadata"]
        self.admit_namespace(
            rt, meta.get("namespace", ""), meta.get("name") or meta.get("generateName") or ""
        )
        self.run_admission("CREATE", rt, obj, None)
        generated = not meta.get("name") and bool(meta.get("generateName"))
        # RetryGenerateName (GA in 1.32): a generated name that is taken is replaced by a new
        # one, up to 8 names in all; a dry run tries one. Only then does the client see a 409.
        attempts = GENERATE_NAME_ATTEMPTS if generated and not dry_run else 1
        for attempt in range(attempts):
            if generated:
                # rest.BeforeCreate: after (mutating) admission, as in kube-apiserver.
                meta["name"] = generate_name(meta["generateName"], self.rng)
            name = meta.get("name") or ""
            decoded = validate(self.storage_type(rt), obj, request_group=rt.group)
            self.run_validating_plugins("CREATE", rt, obj, None)
            # Store.Create's createValidation (policies, webhooks) runs before the storage
            # finds the name taken: a denied create is denied even where it would be a 409.
            self.run_validating_admission("CREATE", rt, obj, None, dry_run=dry_run, stored=True)
            key = _key(rt, meta.get("namespace", ""), name)
            if self.store.get(rt.storage_name, key) is None:
                break
            if not generated:
                raise already_exists(rt.plural, rt.group, name)
            if attempt + 1 == attempts:  # rest.CheckGeneratedNameError
                raise generate_name_conflict(rt.plural, rt.group, name)
        if managed_fields is None:
            managed_fields = fieldmanager.update(
                None,
                obj,
                manager=field_manager or current_field_manager(),
                sent=sent,
                w=self._write(rt, ""),
            )
        _set_managed_fields(meta, managed_fields)
        if not dry_run:
            rv = self.store.next_rv()
            meta["resourceVersion"] = str(rv)
            # Validation saw the stored object but for its resourceVersion and managedFields.
            self.store.put(rt.storage_name, key, obj, rv=rv, decoded=decoded)
            if rt.kind == "Pod":
                self.pods_to_start.add(key)
        return obj if stored else self.to_wire(rt, obj)

    # --- update -----------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        dry_run: bool = False,
        check_name: bool = True,
        field_manager: str | None = None,
        managed_fields: list[dict[str, Any]] | None = None,
        manager_subresource: str = "",
        typed: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """PUT (also the tail of PATCH): returns (object, created) (``rest.BeforeUpdate``).

        URL and body name and namespace must agree (400), a stale ``resourceVersion`` is a 409
        ``the object has been modified; ...``, an empty one is an unconditional update; the
        main resource keeps the stored status and the status subresource keeps everything but
        status; ``generation`` grows when the spec changes; an update that changes nothing is
        not written (no new resourceVersion, no watch event). The writer (``field_manager``)
        takes the fields it changed (``metadata.managedFields``); ``managed_fields`` are an
        apply's, already computed; ``manager_subresource`` names the subresource the write came
        through when the store writes it as the main resource's (``/scale``); ``typed`` as
        for ``create``."""
        check_type(rt, body, typed=typed)
        sent = _sent_managed_fields(body)
        new = self.from_wire(rt, clone(_without_managed_fields(body)))
        new["kind"] = self.storage_type(rt).kind
        new["apiVersion"] = self.storage_type(rt).api_version
        meta = new.setdefault("metadata", {})
        body_name = meta.get("name") or ""
        if check_name and body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        if rt.namespaced:
            check_body_namespace(meta.get("namespace") or "", namespace)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        key = _key(rt, namespace, name)
        old = self.store.get(rt.storage_name, key)
        if old is None:
            if rt.allow_create_on_update and not subresource:
                created = self.create(
                    rt,
                    namespace,
                    self.to_wire(rt, new),
                    dry_run=dry_run,
                    field_manager=field_manager,
                    managed_fields=managed_fields,
                    typed=typed,
                )
                return created, True
            raise not_found(rt.plural, rt.group, name)
        old_meta = meta_of(old)
        want_rv = meta.get("resourceVersion")
        if want_rv not in (None, "") and str(want_rv) != old_meta.get("resourceVersion"):
            if not str(want_rv).isdigit():
                raise bad_request(f"invalid resource version: {want_rv}")
            raise conflict(rt.plural, rt.group, name, MODIFIED_CONFLICT)
        decode_check(self.storage_type(rt), new)
        new = self._prepare_update(rt, new, old, subresource)
        if not subresource:
            apply_update_defaults(self.storage_type(rt), new)
        if not subresource or rt.kind == "Pod":
            self.run_admission("UPDATE", rt, new, old)
        validate(self.storage_type(rt), new, request_group=rt.group, old=old)
        if not subresource:
            validate_update(self.storage_type(rt), new, old)
        if not subresource or rt.kind == "Pod":
            self.run_validating_plugins("UPDATE", rt, new, old)
        self.run_validating_admission(
            "UPDATE", rt, new, old, subresource=subresource, dry_run=dry_run, stored=True
        )
        if managed_fields is None:
            managed_fields = fieldmanager.update(
                old,
                new,
                manager=field_manager or current_field_manager(),
                sent=sent,
                w=self._write(rt, subresource or manager_subresource),
            )
        _set_managed_fields(new["metadata"], managed_fields)
        return self._write_update(rt, key, new, old, dry_run=dry_run), False

    def _write(self, rt: ResourceType, subresource: str) -> fieldmanager.Write:
        st = self.storage_type(rt)
        second = math.floor(self.clock())
        if second != self._now[0]:  # managedFields times are whole seconds
            self._now = (second, format_time(second))
        return fieldmanager.Write(
            type=root_type(st.api_version, st.kind),
            api_version=rt.api_version,
            subresource=subresource,
            has_status=rt.has_status,
            now=self._now[1],
        )

    def apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        config: Any,
        *,
        manager: str,
        force: bool = False,
        subresource: str = "",
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Server-Side Apply (``kubesim.core.managedfields.manager.apply``): returns (object,
        created). The configuration must be an object of this kind without managed fields; a
        missing object is created (not through a subresource)."""
        if not isinstance(config, dict):
            raise bad_request("the body of an apply patch must be an object")
        meta = config.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if (meta or {}).get("managedFields") is not None:
            raise bad_request("metadata.managedFields must be nil")
        for fname, want in (("apiVersion", rt.api_version), ("kind", rt.kind)):
            got = config.get(fname)
            if got != want:
                raise bad_request(
                    f"{fname} in the apply configuration ({got or ''}) does not match the"
                    f" request's ({want})"
                )
        body_name = (meta or {}).get("name")
        if body_name not in (None, name):
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        config = {**config, "metadata": {**(meta or {}), "name": name}}
        if rt.namespaced:
            check_body_namespace((meta or {}).get("namespace") or "", namespace)
            config["metadata"]["namespace"] = namespace
        current = self.find(rt, namespace, name)
        if current is None and subresource:
            raise not_found(rt.plural, rt.group, name)
        live = self.to_wire(rt, current) if current is not None else None
        if live is not None:
            live = {**live, "kind": rt.kind, "apiVersion": rt.api_version}
        merged, managed = fieldmanager.apply(
            live, config, manager=manager, force=force, w=self._write(rt, subresource)
        )
        if current is None:
            obj = self.create(rt, namespace, merged, dry_run=dry_run, managed_fields=managed)
            return obj, True
        return self.update(
            rt,
            namespace,
            name,
            merged,
            # /scale writes the workload itself; its entries keep the subresource
            subresource="" if subresource == "scale" else subresource,
            dry_run=dry_run,
            managed_fields=managed,
        )

    def _prepare_update(
        self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        old_meta = meta_of(old)
        if subresource == "status":
            result = clone(_without_managed_fields(old))
            result["status"] = clone(new.get("status") or {})
            if rt.kind in ("Pod", "Node"):
                nm = meta_of(new)
                for k in ("labels", "annotations"):
                    if k in nm:
                        result["metadata"][k] = clone(nm[k])
                    else:
                        result["metadata"].pop(k, None)
            new = result
        else:
            if rt.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            if rt.kind == "Namespace":
                new["spec"] = clone(old.get("spec") or {})
        meta = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if rt.kind == "Namespace":
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = {}
            labels["kubernetes.io/metadata.name"] = old_meta.get("name", "")
            meta["labels"] = labels
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        if rt.has_generation:
            gen = int(old_meta.get("generation") or 1)
            if new.get("spec") != old.get("spec"):
                gen += 1
            meta["generation"] = gen
        else:
            meta.pop("generation", None)
        meta["resourceVersion"] = old_meta.get("resourceVersion", "")
        return new

    def _write_update(
        self,
        rt: ResourceType,
        key: Key,
        new: dict[str, Any],
        old: dict[str, Any],
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        meta = new["metadata"]
        if new == old:
            return self.to_wire(rt, old)
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
        ):
            # Finalizers gone from an object waiting for them: the delete completes.
            if not dry_run:
                self.store.remove(rt.storage_name, key, rv=self.store.next_rv())
            return self.to_wire(rt, new)
        if dry_run:
            return self.to_wire(rt, new)
        rv = self.store.next_rv()
        meta["resourceVersion"] = str(rv)
        self.store.put(rt.storage_name, key, new, rv=rv)
        return self.to_wire(rt, new)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        from kubesim.core.patch import apply_patch

        current = self.get(rt, namespace, name)
        wire = self.to_wire(rt, current)
        patched = apply_patch(wire, body, content_type, kind=rt.kind)
        pmeta = patched.get("metadata")
        if isinstance(pmeta, dict) and pmeta.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({pmeta.get('name')}) does not match the name on the URL"
                f" ({name})"
            )
        obj, _ = self.update(
            rt,
            namespace,
            name,
            patched,
            subresource=subresource,
            dry_run=dry_run,
            field_manager=field_manager,
        )
        return obj

    # --- delete -----------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions
    ) -> dict[str, Any]:
        """DELETE: the body kube answers with (object or Success Status) (``rest.BeforeDelete``).

        Preconditions (``uid``, ``resourceVersion``) → 409 ``Precondition failed: ...``; pods
        are deleted gracefully (``CheckGracefulDelete``: the request's grace period, else the
        pod's ``terminationGracePeriodSeconds``, else 0; unbound or terminal pods go at once),
        which only sets ``deletionTimestamp`` = now + grace and ``deletionGracePeriodSeconds``;
        a second delete may only shorten it. Objects with finalizers wait for them. Kinds with
        ``ReturnDeletedObject`` answer with the object, others with a Success ``Status``."""
        refuse = strategy_for(self.storage_type(rt).kind).validate_delete
        if refuse is not None:
            refuse(name)
        key = _key(rt, namespace, name)
        obj = self.store.get(rt.storage_name, key)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        meta = meta_of(obj)
        if options.uid is not None and options.uid != meta.get("uid"):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {options.uid}, UID in object meta:"
                f" {meta.get('uid', '')}",
            )
        if options.resource_version is not None and options.resource_version != meta.get(
            "resourceVersion"
        ):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "Precondition failed: ResourceVersion in precondition:"
                f" {options.resource_version}, ResourceVersion in object meta:"
                f" {meta.get('resourceVersion', '')}",
            )
        if rt.kind != "Namespace":
            self.run_admission("DELETE", rt, clone(obj), obj)
        self.run_validating_admission("DELETE", rt, None, obj, dry_run=options.dry_run, stored=True)
        if rt.kind == "Namespace":
            return self._delete_namespace(rt, key, obj, options)
        gc = _gc_finalizer(options)
        if gc and not meta.get("deletionTimestamp") and gc not in (meta.get("finalizers") or []):
            # deletionFinalizersForGarbageCollection: the garbage collector finishes the delete.
            obj = clone(obj)
            meta = obj["metadata"]
            meta["finalizers"] = [*(meta.get("finalizers") or []), gc]
        grace = self._grace_period(rt, obj, options)
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp"):
            pending = meta.get("deletionGracePeriodSeconds")
            if pending and (grace is None or grace >= pending):
                return self._deleted_response(rt, obj)  # pendingGraceful: unchanged
            if finalizers or (grace and grace > 0):
                return self._set_deletion(rt, key, obj, grace or 0, options.dry_run)
        elif (grace and grace > 0) or finalizers:
            return self._set_deletion(rt, key, obj, grace or 0, options.dry_run)
        if not options.dry_run:
            self.store.remove(rt.storage_name, key, rv=self.store.next_rv())
        return self._deleted_response(rt, obj)

    def _grace_period(
        self, rt: ResourceType, obj: Mapping[str, Any], options: DeleteOptions
    ) -> int | None:
        """``podStrategy.CheckGracefulDelete``; None for kinds deleted at once."""
        if rt.kind != "Pod":
            return None
        spec = obj.get("spec") or {}
        if options.grace_period_seconds is not None:
            period = options.grace_period_seconds
        else:
            tgps = spec.get("terminationGracePeriodSeconds")
            period = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS if tgps is None else int(tgps)
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            period = 0
        if period < 0:
            period = 1
        return period

    def _set_deletion(
        self, rt: ResourceType, key: Key, obj: dict[str, Any], grace: int, dry_run: bool
    ) -> dict[str, Any]:
        new = clone(obj)
        meta = new["metadata"]
        now = self.clock()
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds"):
            from kube.times import parse_time

            start = parse_time(meta["deletionTimestamp"]) - float(
                meta["deletionGracePeriodSeconds"]
            )
            meta["deletionTimestamp"] = format_time(start + grace)
        else:
            meta["deletionTimestamp"] = format_time(now + grace)
        meta["deletionGracePeriodSeconds"] = grace
        if rt.has_generation and meta.get("generation"):
            meta["generation"] = int(meta["generation"]) + 1
        if dry_run:
            return self.to_wire(rt, new) if rt.return_deleted_object else self._status_for(rt, new)
        if grace == 0 and not meta.get("finalizers"):
            self.store.remove(rt.storage_name, key, rv=self.store.next_rv())
            return self._deleted_response(rt, new)
        rv = self.store.next_rv()
        meta["resourceVersion"] = str(rv)
        self.store.put(rt.storage_name, key, new, rv=rv)
        for hook in self.on_graceful_delete:
            hook(rt, new)
        return self.to_wire(rt, new) if rt.return_deleted_object else self._status_for(rt, new)

    def _deleted_response(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.return_deleted_object:
            return self.to_wire(rt, obj)
        return self._status_for(rt, obj)

    def _status_for(self, rt: ResourceType, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = meta_of(obj)
        return success_status(
            name=meta.get("name", ""), group=rt.group, kind=rt.plural, uid=meta.get("uid", "")
        )

    def _delete_namespace(
        self, rt: ResourceType, key: Key, obj: dict[str, Any], options: DeleteOptions
    ) -> dict[str, Any]:
        name = key[1]
        if name in PROTECTED_NAMESPACES:
            raise forbidden("namespaces", "", name, "this namespace may not be deleted")
        meta = meta_of(obj)
        if meta.get("deletionTimestamp"):
            return self.to_wire(rt, obj)
        new = clone(obj)
        new["metadata"]["deletionTimestamp"] = format_time(self.clock())
        new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
        if options.dry_run:
            return self.to_wire(rt, new)
        if not (new.get("spec") or {}).get("finalizers") and not meta.get("finalizers"):
            self.store.remove(rt.storage_name, key, rv=self.store.next_rv())
            return self.to_wire(rt, new)
        rv = self.store.next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        self.store.put(rt.storage_name, key, new, rv=rv)
        return self.to_wire(rt, new)

    def finalize_namespace(self, name: str) -> None:
        """The namespace controller's last step: drop the ``kubernetes`` finalizer."""
        ns_type = self.scheme.for_kind("v1", "Namespace")
        assert ns_type is not None
        key = ("", name)
        obj = self.store.get("namespaces", key)
        if obj is None:
            return
        spec_finalizers = [
            f for f in (obj.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"
        ]
        if spec_finalizers or meta_of(obj).get("finalizers"):
            new = clone(obj)
            new["spec"] = {"finalizers": spec_finalizers}
            rv = self.store.next_rv()
            new["metadata"]["resourceVersion"] = str(rv)
            self.store.put("namespaces", key, new, rv=rv)
            return
        self.store.remove("namespaces", key, rv=self.store.next_rv())

    # --- seeding ----------------------------------------------------------------------------

    def seed(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a state-file object as given (status kept), filling only system fields."""
        obj = self.from_wire(rt, clone(obj))
        obj["kind"] = self.storage_type(rt).kind
        obj["apiVersion"] = self.storage_type(rt).api_version
        normalize_seed_times(self.storage_type(rt), obj)
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        meta.setdefault("uid", new_uid())
        meta.setdefault("creationTimestamp", format_time(self.clock()))
        if rt.has_generation:
            meta.setdefault("generation", 1)
        if rt.kind == "Namespace":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        if rt.kind in _SEED_DEFAULTED:
            apply_defaults(rt, obj)
        validate(self.storage_type(rt), obj)
        key = _key(rt, meta.get("namespace", ""), meta.get("name", ""))
        if rt.kind == "Pod" and "status" not in obj:
            obj["status"] = _pending_status(obj)
            self.pods_to_start.add(key)
        rv = self.store.next_rv()
        meta["resourceVersion"] = str(rv)
        self.store.put(rt.storage_name, key, obj, rv=rv)
        return obj

    def list_matching(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector | None = None,
        fields: tuple[FieldRequirement, ...] = (),
    ) -> list[dict[str, Any]]:
        return [
            o
            for o in self.store.items(rt.storage_name, namespace)
            if self.matches(rt, o, labels, fields)
        ]


def _sent_managed_fields(body: Any) -> Any:
    """The ``metadata.managedFields`` a request sends (None when it sends none)."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    return meta.get("managedFields") if isinstance(meta, dict) else None


def _without_managed_fields(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields`` (a shallow copy; not cloned only to be
    replaced)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _set_managed_fields(meta: dict[str, Any], managed: list[dict[str, Any]]) -> None:
    if managed:
        # never changed in place: every write replaces the list whole
        meta["managedFields"] = managed if isinstance(managed, Shared) else Shared(managed)
    else:
        meta.pop("managedFields", None)


def _gc_finalizer(options: DeleteOptions) -> str | None:
    """The finalizer a propagation policy asks for (Background, the default, needs none)."""
    if options.propagation_policy == "Foreground":
        return "foregroundDeletion"
    if options.propagation_policy == "Orphan" or (
        options.propagation_policy is None and options.orphan_dependents is True
    ):
        return "orphan"
    return None


def _pending_status(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The status a created pod starts with: Pending, and ``qos.ComputePodQOS`` (``kube.qos``).
    A pod whose resources do not parse gets no class here: validation refuses it next."""
    try:
        return {"phase": "Pending", "qosClass": compute_pod_qos(pod)}
    except InvalidPodResources:
        return {"phase": "Pending"}
