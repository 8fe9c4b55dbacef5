"""The REST verbs of every stored kind: get, list, watch, create, update, patch, delete and
deletecollection, with the ``status`` and ``scale`` subresources, over the generic store
(kube-apiserver's ``pkg/endpoints/handlers``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import contextlib
import itertools
import json
from collections.abc import Iterable
from typing import Any, Final

from aiohttp import web

from kube.labels import (
    FieldRequirement,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from kube.strict import InvalidYaml, ManifestError, decode_json, parse_yaml
from kubesim.core.errors import (
    Cause,
    StatusError,
    bad_request,
    expired,
    invalid,
    method_not_allowed,
    too_large_resource_version,
    unsupported_media_type,
)
from kubesim.core.managedfields.manager import MAX_MANAGER_LENGTH, manager_from_user_agent
from kubesim.core.patch import (
    APPLY_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
)
from kubesim.core.scheme import ResourceType
from kubesim.core.store import CONTINUE_TOO_OLD, TooOld, dumps
from kubesim.core.tables import TABLE_MEDIA, table_for_list, table_row_object, wants_table
from kubesim.endpoints import fieldvalidation
from kubesim.endpoints.codec import (
    JSON,
    decode_body,
    decode_delete_options,
    decode_typed_body,
    json_response,
)
from kubesim.endpoints.request import RequestContext, RequestInfo, truthy
from kubesim.endpoints.requestlog import RequestLog
from kubesim.endpoints.watch import DEFAULT_TIMEOUT, WatchRequest, watch_stream
from kubesim.registry import scale
from kubesim.registry.generic import GenericStore, check_dry_run

__all__ = ["ResourceHandlers"]

TOO_LARGE_WAIT: Final = 3.0  # the cacher's blockTimeout


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    start = f"{key[0]}/{key[1]}" if key[0] else key[1]
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode()


def _decode_continue(token: str, namespaced: bool) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        rv = int(data["rv"])
        start = str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise bad_request(f"invalid continue token: continue key is not valid: {exc}") from None
    if rv <= 0:
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded"
            " start resourceVersion (version meta.k8s.io/v1)"
        )
    if "/" in start:
        ns, _, name = start.partition("/")
        return rv, (ns, name)
    return rv, ("", start)


def _parse_int(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


def _key(rt: ResourceType, info: RequestInfo) -> tuple[str, str]:
    return (info.namespace if rt.namespaced else "", info.name)


def _field_manager(ctx: RequestContext, options_kind: str, *, apply: bool = False) -> str:
    """The write's manager (``managerOrUserAgent``): ``fieldManager``, else the user agent up
    to its first ``/``. ``fieldManager`` is required for an apply, at most 128 bytes and
    printable (``ValidateFieldManager``), and ``force`` is for applies only; 422 otherwise."""
    q = ctx.query
    manager = q.get("fieldManager") or ""
    causes: list[Cause] = []
    if apply and not manager:
        causes.append(
            Cause(
                "FieldValueRequired", "Required value: is required for apply patch", "fieldManager"
            )
        )
    if len(manager.encode()) > MAX_MANAGER_LENGTH:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {MAX_MANAGER_LENGTH} bytes",
                "fieldManager",
            )
        )
    for i, ch in enumerate(manager):
        if not ch.isprintable():
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{manager}": invalid character U+{ord(ch):04X}'
                    f" (at position {i})",
                    "fieldManager",
                )
            )
    if "force" in q and not apply and options_kind == "PatchOptions":
        causes.append(
            Cause(
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch",
                "force",
            )
        )
    if causes:
        raise invalid(options_kind, "meta.k8s.io", "", causes)
    return manager or manager_from_user_agent(ctx.request.headers.get("User-Agent", ""))


class ResourceHandlers:
    """The handlers of the stored kinds over one generic store; watches are logged when their
    stream starts (``log``), every other request when its answer is written.

    Each handler reads the request's options (label and field selectors, ``limit``/``continue``
    paging with etcd's semantics, ``resourceVersion`` and ``resourceVersionMatch``, ``dryRun``, the
    three patch types), calls the generic store (``kubesim.registry.generic``) and writes the
    answer: lists straight from the stored bytes when nothing converts them, ``meta.k8s.io/v1``
    Tables when asked (``kubesim.core.tables``), watches as a chunked stream from the cacher
    (``kubesim.endpoints.watch``). ``/scale`` serves an ``autoscaling/v1`` Scale
    (``kubesim.registry.scale``).
    """

    def __init__(
        self, registry: GenericStore, log: RequestLog, *, bookmark_interval: float = 60.0
    ) -> None:
        self.registry = registry
        self.log = log
        self.bookmark_interval = bookmark_interval

    # --- reads ------------------------------------------------------------------------------

    def get(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        info = ctx.info
        obj = self.registry.get(rt, info.namespace, info.name)
        wire = self.registry.to_wire(rt, obj)
        accept = ctx.request.headers.get("Accept", "")
        if wants_table(accept):
            table = table_for_list(
                rt, [wire], resource_version="", include_object=ctx.query.get("includeObject")
            )
            return json_response(table, content_type=TABLE_MEDIA)
        if rt.group != "events.k8s.io":
            return json_response(self.registry.store.raw(rt.storage_name, _key(rt, info)))
        return json_response(wire)

    def _selectors(
        self, ctx: RequestContext, rt: ResourceType
    ) -> tuple[LabelSelector | None, tuple[FieldRequirement, ...]]:
        q = ctx.query
        labels = None
        if q.get("labelSelector"):
            try:
                labels = parse_label_selector(q["labelSelector"])
            except SelectorError as exc:
                raise bad_request(str(exc)) from None
        fields: tuple[FieldRequirement, ...] = ()
        if q.get("fieldSelector"):
            try:
                fields = parse_field_selector(q["fieldSelector"])
            except SelectorError as exc:
                raise bad_request(str(exc)) from None
            self.registry.check_field_selector(rt, fields)
        return labels, fields

    def list(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        q = ctx.query
        labels, fields = self._selectors(ctx, rt)
        limit = _parse_int(q, "limit") or 0
        token = q.get("continue") or ""
        rv_param = q.get("resourceVersion") or ""
        rv_match = q.get("resourceVersionMatch") or ""
        store = self.registry.store
        namespace = ctx.info.namespace if rt.namespaced and ctx.info.namespace else None
        after: tuple[str, str] | None = None
        if rv_match and rv_match not in ("Exact", "NotOlderThan"):
            raise bad_request(f"invalid resourceVersionMatch: {rv_match}")
        if token:
            if rv_param:
                raise bad_request("specifying resource version is not allowed when using continue")
            list_rv, after = _decode_continue(token, rt.namespaced)
        elif rv_param and rv_param != "0":
            if not rv_param.isdigit():
                raise bad_request(f"invalid resource version: {rv_param}")
            want = int(rv_param)
            if want > store.resource_version:
                raise too_large_resource_version(want, store.resource_version)
            list_rv = want if rv_match == "Exact" else store.resource_version
        else:
            if rv_match == "Exact":
                raise bad_request(
                    'resourceVersionMatch "Exact" is forbidden for resourceVersion "0"'
                )
            list_rv = store.resource_version
        try:
            if list_rv == store.resource_version:
                keys = store.keys(rt.storage_name, namespace)
                start = bisect.bisect_right(keys, after) if after is not None else 0
                objects = store.objects(rt.storage_name)
                entries: Iterable[tuple[tuple[str, str], dict[str, Any] | None]] = (
                    (k, objects.get(k)) for k in itertools.islice(keys, start, None)
                )
                total_after = len(keys) - start
            else:
                snap = store.snapshot(rt.storage_name, list_rv, namespace)
                if after is not None:
                    snap = [(k, o) for k, o in snap if k > after]
                entries = snap
                total_after = len(snap)
        except TooOld as exc:
            if token:
                raise expired(CONTINUE_TOO_OLD) from None
            raise expired(str(exc)) from None
        direct = list_rv == store.resource_version and rt.group != "events.k8s.io"
        selected: list[tuple[tuple[str, str], dict[str, Any]]] = []
        scanned = 0
        next_token = ""
        for key, obj in entries:
            if limit and len(selected) >= limit:
                # etcd had more keys: the list continues (kube does not check they match).
                next_token = _encode_continue(list_rv, selected[-1][0])
                break
            scanned += 1
            if obj is None or not self.registry.matches(rt, obj, labels, fields):
                continue
            selected.append((key, obj))
        remaining = total_after - scanned
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if next_token:
            meta["continue"] = next_token
            if labels is None and not fields:
                meta["remainingItemCount"] = remaining
        accept = ctx.request.headers.get("Accept", "")
        if wants_table(accept):
            wires = [self.registry.to_wire(rt, o) for _, o in selected]
            table = table_for_list(
                rt,
                wires,
                resource_version=str(list_rv),
                include_object=q.get("includeObject"),
                meta=meta,
            )
            return json_response(table, content_type=TABLE_MEDIA)
        head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        if direct:
            items = b",".join(store.raw(rt.storage_name, k) for k, _ in selected)
        else:
            items = b",".join(dumps(self.registry.to_wire(rt, o)) for _, o in selected)
        return json_response(head[:-1] + b',"items":[' + items + b"]}")

    async def watch(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        q = ctx.query
        labels, fields = self._selectors(ctx, rt)
        rv_param = q.get("resourceVersion")
        store = self.registry.store
        if rv_param not in (None, "", "0"):
            if not rv_param.isdigit():
                raise bad_request(f"invalid resource version: {rv_param}")
            want = int(rv_param)
            if want > store.resource_version and not await store.wait_for_rv(want, TOO_LARGE_WAIT):
                raise too_large_resource_version(want, store.resource_version)
        timeout = _parse_int(q, "timeoutSeconds")
        send_initial = truthy(q.get("sendInitialEvents"))
        if send_initial and q.get("resourceVersionMatch") != "NotOlderThan":
            raise StatusError(
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden:'
                " sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                group="meta.k8s.io",
                kind="ListOptions",
            )
        accept = ctx.request.headers.get("Accept", "")
        table = wants_table(accept)
        include_object = q.get("includeObject")
        encode = None
        if table:

            def encode(event_type: str, obj: dict[str, Any]) -> bytes:
                if event_type in ("BOOKMARK", "ERROR"):
                    return dumps(obj)
                return dumps(table_row_object(rt, obj, include_object=include_object))

        req = WatchRequest(
            rt=rt,
            namespace=ctx.info.namespace if rt.namespaced and ctx.info.namespace else None,
            name=ctx.info.name or None,
            labels=labels,
            fields=fields,
            resource_version=rv_param,
            timeout=float(timeout) if timeout and timeout > 0 else DEFAULT_TIMEOUT,
            allow_bookmarks=truthy(q.get("allowWatchBookmarks")),
            send_initial_events=send_initial,
            bookmark_interval=self.bookmark_interval,
            encode=encode,
        )
        stream = watch_stream(self.registry, req)
        resp = web.StreamResponse(status=200)
        resp.headers["Content-Type"] = TABLE_MEDIA if table else JSON
        resp.headers["Transfer-Encoding"] = "chunked"
        await resp.prepare(ctx.request)
        ctx.record.code = 200
        self.log.append(ctx.record)
        try:
            async for line in stream:
                await resp.write(line)
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            await stream.aclose()
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await resp.write_eof()
        return resp

    # --- writes -----------------------------------------------------------------------------

    def _dry_run(self, ctx: RequestContext, kind: str) -> bool:
        return check_dry_run(ctx.query.getall("dryRun", []), kind=kind)

    def create(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        dry = self._dry_run(ctx, "CreateOptions")
        manager = _field_manager(ctx, "CreateOptions")
        body, typed = decode_typed_body(ctx, rt)
        obj = self.registry.create(
            rt,
            ctx.info.namespace,
            body,
            dry_run=dry,
            field_manager=manager,
            owned=True,
            typed=typed,
        )
        return json_response(self.registry.encoded(rt, obj), 201)

    def update(self, ctx: RequestContext, rt: ResourceType, sub: str) -> web.StreamResponse:
        dry = self._dry_run(ctx, "UpdateOptions")
        manager = _field_manager(ctx, "UpdateOptions")
        body, typed = decode_typed_body(ctx, rt)
        obj, created = self.registry.update(
            rt,
            ctx.info.namespace,
            ctx.info.name,
            body,
            subresource=sub,
            dry_run=dry,
            field_manager=manager,
            typed=typed,
        )
        return json_response(obj, 201 if created else 200)

    def _apply_scale(
        self, ctx: RequestContext, rt: ResourceType, *, manager: str, dry_run: bool
    ) -> web.StreamResponse:
        """Server-Side Apply of a Scale: its ``spec.replicas`` applied to the workload's, owned
        by the manager with subresource ``scale`` (``managedfields.NewScaleHandler``)."""
        config, _ = self._apply_config(ctx)
        spec = config.get("spec")
        if spec is not None and not isinstance(spec, dict):
            raise bad_request("spec of a Scale must be an object")
        workload: dict[str, Any] = {
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            "metadata": {"name": ctx.info.name},
        }
        if spec and "replicas" in spec:
            workload["spec"] = {"replicas": spec["replicas"]}
        obj, _ = self.registry.apply(
            rt,
            ctx.info.namespace,
            ctx.info.name,
            workload,
            manager=manager,
            force=truthy(ctx.query.get("force")),
            subresource="scale",
            dry_run=dry_run,
        )
        return json_response(scale.to_scale(rt, obj))

    def patch(self, ctx: RequestContext, rt: ResourceType, sub: str) -> web.StreamResponse:
        dry = self._dry_run(ctx, "PatchOptions")
        ctype = (ctx.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in (*PATCH_TYPES, APPLY_PATCH):
            raise unsupported_media_type(ctype, [*PATCH_TYPES, APPLY_PATCH])
        manager = _field_manager(ctx, "PatchOptions", apply=ctype == APPLY_PATCH)
        if ctype == APPLY_PATCH:
            return self._apply(ctx, rt, sub, manager=manager, dry_run=dry)
        if ctype in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            with contextlib.suppress(ValueError, UnicodeDecodeError):  # registry.patch reports it
                patch, dups = decode_json(ctx.body)
                fieldvalidation.check_body(
                    ctx.request, rt, patch, duplicates=dups, options_kind="PatchOptions", patch=True
                )
        obj = self.registry.patch(
            rt,
            ctx.info.namespace,
            ctx.info.name,
            ctx.body,
            ctype,
            subresource=sub,
            dry_run=dry,
            field_manager=manager,
        )
        return json_response(obj)

    def _apply_config(self, ctx: RequestContext) -> tuple[dict[str, Any], Any]:
        try:
            text = ctx.body.decode("utf-8")
            docs, dups = parse_yaml(text, duplicates="record")
        except (UnicodeDecodeError, InvalidYaml) as exc:
            raise bad_request(f"error decoding YAML: {exc}") from None
        except ManifestError as exc:
            raise bad_request(exc.detail) from None
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise bad_request("error decoding YAML: the apply patch must be one object")
        return docs[0], dups

    def _apply(
        self, ctx: RequestContext, rt: ResourceType, sub: str, *, manager: str, dry_run: bool
    ) -> web.StreamResponse:
        """Server-Side Apply: the body is YAML (JSON is YAML too); 201 when it created."""
        config, dups = self._apply_config(ctx)
        fieldvalidation.check_body(
            ctx.request, rt, config, duplicates=dups, options_kind="PatchOptions", decode=False
        )
        force = truthy(ctx.query.get("force"))
        obj, created = self.registry.apply(
            rt,
            ctx.info.namespace,
            ctx.info.name,
            config,
            manager=manager,
            force=force,
            subresource=sub,
            dry_run=dry_run,
        )
        return json_response(obj, 201 if created else 200)

    def delete(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        opts = decode_delete_options(ctx)
        result = self.registry.delete(rt, ctx.info.namespace, ctx.info.name, opts)
        return json_response(result)

    def delete_collection(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        if "deletecollection" not in rt.verbs:
            raise method_not_allowed()
        opts = decode_delete_options(ctx)
        labels, fields = self._selectors(ctx, rt)
        namespace = ctx.info.namespace if rt.namespaced and ctx.info.namespace else None
        victims = self.registry.list_matching(rt, namespace, labels=labels, fields=fields)
        deleted = []
        for obj in victims:
            meta = obj.get("metadata") or {}
            try:
                self.registry.delete(rt, meta.get("namespace", ""), meta.get("name", ""), opts)
            except StatusError as err:
                if err.code != 404:
                    raise
            deleted.append(self.registry.to_wire(rt, obj))
        return json_response(
            {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.registry.store.resource_version)},
                "items": deleted,
            }
        )

    async def status(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        verb = ctx.info.verb
        if verb == "get":
            obj = self.registry.get(rt, ctx.info.namespace, ctx.info.name)
            return json_response(self.registry.to_wire(rt, obj))
        if verb == "update":
            return self.update(ctx, rt, "status")
        if verb == "patch":
            return self.patch(ctx, rt, "status")
        raise method_not_allowed()

    async def scale(self, ctx: RequestContext, rt: ResourceType) -> web.StreamResponse:
        """``/scale`` (``kubesim.registry.scale``): GET, PUT and PATCH of a Scale."""
        info = ctx.info
        verb = info.verb
        if verb not in ("get", "update", "patch"):
            raise method_not_allowed()
        current = self.registry.get(rt, info.namespace, info.name)
        if verb == "get":
            return json_response(scale.to_scale(rt, current))
        options_kind = "UpdateOptions" if verb == "update" else "PatchOptions"
        dry = self._dry_run(ctx, options_kind)
        ctype = (ctx.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        manager = _field_manager(ctx, options_kind, apply=verb == "patch" and ctype == APPLY_PATCH)
        if verb == "update":
            body = decode_body(ctx, rt)
        else:
            if ctype not in (*PATCH_TYPES, APPLY_PATCH):
                raise unsupported_media_type(ctype, [*PATCH_TYPES, APPLY_PATCH])
            if ctype == APPLY_PATCH:
                return self._apply_scale(ctx, rt, manager=manager, dry_run=dry)
            body = apply_patch(scale.to_scale(rt, current), ctx.body, ctype, kind="Scale")
        wire = scale.apply_scale(rt, self.registry.to_wire(rt, current), body, name=info.name)
        updated, _ = self.registry.update(
            rt,
            info.namespace,
            info.name,
            wire,
            dry_run=dry,
            field_manager=manager,
            manager_subresource="scale",
        )
        return json_response(scale.to_scale(rt, updated))
