"""PATCH bodies: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386), strategic merge patch.

kube-apiserver's ``patchResource`` accepts three content types (``apply_patch``), plus
server-side apply (``application/apply-patch+yaml``), which is not a patch of the object but a
configuration merged by field ownership (``kubesim.core.managedfields``). The per-kind patch
metadata below is the subset of the Go struct tags the served kinds need; Server-Side Apply
reads its merge keys from it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from kubesim.core.errors import Cause, StatusError, bad_request
from kubesim.core.store import clone

__all__ = [
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "json_merge_patch",
    "json_patch",
    "patch_meta_for",
    "strategic_merge_patch",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)

# (strategy, merge key); strategy "merge", "retainKeys" or "merge,retainKeys".
PatchMeta = Mapping[str, tuple[str, str]]

_CONTAINER: Final[dict[str, tuple[str, str]]] = {
    "env": ("merge", "name"),
    "ports": ("merge", "containerPort"),
    "volumeMounts": ("merge", "mountPath"),
    "volumeDevices": ("merge", "devicePath"),
    "resizePolicy": ("", ""),
}


def _pod_spec(prefix: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {
        f"{prefix}.containers": ("merge", "name"),
        f"{prefix}.initContainers": ("merge", "name"),
        f"{prefix}.ephemeralContainers": ("merge", "name"),
        f"{prefix}.volumes": ("merge,retainKeys", "name"),
        f"{prefix}.imagePullSecrets": ("merge", "name"),
        f"{prefix}.hostAliases": ("merge", "ip"),
        f"{prefix}.topologySpreadConstraints": ("merge", "topologyKey"),
        f"{prefix}.resourceClaims": ("merge,retainKeys", "name"),
        f"{prefix}.schedulingGates": ("merge", "name"),
    }
    for c in ("containers", "initContainers", "ephemeralContainers"):
        for k, v in _CONTAINER.items():
            if v[0]:
                out[f"{prefix}.{c}.{k}"] = v
    return out


_METADATA: Final[dict[str, tuple[str, str]]] = {
    "metadata.ownerReferences": ("merge", "uid"),
    "metadata.finalizers": ("merge", ""),
}
_CONDITIONS: Final[dict[str, tuple[str, str]]] = {"status.conditions": ("merge", "type")}
_TEMPLATE: Final = {**_pod_spec("spec.template.spec"), **_METADATA, **_CONDITIONS}

_PATCH_META: Final[dict[str, dict[str, tuple[str, str]]]] = {
    "Pod": {**_pod_spec("spec"), **_METADATA, **_CONDITIONS},
    "Node": {
        **_METADATA,
        **_CONDITIONS,
        "status.addresses": ("merge", "type"),
        "spec.podCIDRs": ("merge", ""),
    },
    "Namespace": {**_METADATA, **_CONDITIONS},
    "PodDisruptionBudget": {**_METADATA, **_CONDITIONS},
    "Deployment": {**_TEMPLATE, "spec.strategy": ("retainKeys", "")},
    "DaemonSet": {**_TEMPLATE},
    "ReplicaSet": {**_TEMPLATE},
    "StatefulSet": {**_TEMPLATE},
    "Job": {**_TEMPLATE},
}


def patch_meta_for(kind: str) -> PatchMeta:
    """Patch metadata of a kind; unknown kinds get only the metadata lists."""
    return _PATCH_META.get(kind, _METADATA)


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from None


def apply_patch(
    original: Mapping[str, Any], body: bytes, content_type: str, *, kind: str
) -> dict[str, Any]:
    """Apply a PATCH body of ``content_type`` to ``original`` (not modified).

    * ``application/json-patch+json`` — a list of operations; a malformed document is a 400,
      an operation that does not apply (missing path, failed ``test``) a 422 ``the server
      rejected our request due to an error in our request`` with the library's message as the
      cause;
    * ``application/merge-patch+json`` — objects merge recursively, ``null`` deletes, lists
      replace (``json_merge_patch``);
    * ``application/strategic-merge-patch+json`` — ``strategic_merge_patch``.
    """
    if content_type == JSON_PATCH:
        return json_patch(original, _decode(body))
    patch = _decode(body)
    if not isinstance(patch, dict):
        raise bad_request(
            f"the body of the request was not a JSON object: {body[:30].decode(errors='replace')}"
        )
    if content_type == MERGE_PATCH:
        result = json_merge_patch(original, patch)
    else:
        result = strategic_merge_patch(original, patch, patch_meta_for(kind))
    if not isinstance(result, dict):
        raise bad_request("the patch removed the whole object")
    return result


# --- RFC 7386 --------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


# --- RFC 6902 --------------------------------------------------------------------------------


class _PatchFailed(Exception):
    pass


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise _PatchFailed(f"invalid path {path!r}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise _PatchFailed(f'JSON pointer must be empty or start with a "/": {path}')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, *, for_add: bool) -> int:
    if token == "-" and for_add:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _PatchFailed(f"invalid array index {token!r} in {path}")
    idx = int(token)
    limit = len(container) if for_add else len(container) - 1
    if idx > limit:
        raise _PatchFailed(f"array index out of bounds: {path}")
    return idx


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    cur = doc
    for token in parts[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise _PatchFailed(f"doc is missing path: {path}: missing value")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, path, for_add=False)]
        else:
            raise _PatchFailed(f"doc is missing path: {path}: missing value")
    return cur


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _PatchFailed(f"doc is missing key: {path}: missing value")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, for_add=False)]
    raise _PatchFailed(f"doc is missing path: {path}: missing value")


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, for_add=True), value)
    else:
        raise _PatchFailed(f"add operation does not apply: doc is missing path: {path}")
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    parts = _pointer(path)
    if not parts:
        raise _PatchFailed(f"{op} operation does not apply: cannot remove the whole document")
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _PatchFailed(
                f"{op} operation does not apply: doc is missing path: {path}: missing value"
            )
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, path, for_add=False)]
    else:
        raise _PatchFailed(f"{op} operation does not apply: doc is missing path: {path}")
    return doc


def json_patch(original: Mapping[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc: Any = clone(dict(original))
    try:
        for op in operations:
            if not isinstance(op, dict):
                raise bad_request(
                    "json: cannot unmarshal non-object into Go value of type jsonpatch.Operation"
                )
            kind = op.get("op")
            path = op.get("path")
            if kind == "add":
                if "value" not in op:
                    raise _PatchFailed("add operation does not apply: missing value")
                doc = _add(doc, str(path), clone(op["value"]))
            elif kind == "remove":
                doc = _remove(doc, str(path))
            elif kind == "replace":
                if "value" not in op:
                    raise _PatchFailed("replace operation does not apply: missing value")
                if _pointer(path):
                    doc = _remove(doc, str(path), "replace")
                doc = _add(doc, str(path), clone(op["value"]))
            elif kind == "move":
                value = _get(doc, str(op.get("from")))
                doc = _remove(doc, str(op.get("from")), "move")
                doc = _add(doc, str(path), value)
            elif kind == "copy":
                doc = _add(doc, str(path), clone(_get(doc, str(op.get("from")))))
            elif kind == "test":
                try:
                    have = _get(doc, str(path))
                except _PatchFailed:
                    have = None
                if have != op.get("value"):
                    raise _PatchFailed(f"testing value {path} failed: test failed")
            else:
                raise _PatchFailed(f"Unexpected kind: {kind}")
    except _PatchFailed as exc:
        raise StatusError(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            causes=(Cause("UnexpectedServerResponse", str(exc)),),
        ) from None
    if not isinstance(doc, dict):
        raise bad_request("the patch must leave an object")
    return doc


# --- strategic merge patch -------------------------------------------------------------------

_DIRECTIVE: Final = "$patch"
_RETAIN: Final = "$retainKeys"
_ORDER: Final = "$setElementOrder/"
_DELETE_PRIMITIVE: Final = "$deleteFromPrimitiveList/"


def strategic_merge_patch(
    original: Mapping[str, Any], patch: Mapping[str, Any], meta: PatchMeta
) -> Any:
    """Like merge patch, but lists declared with ``patchStrategy:"merge"`` in the Go types
    merge element-wise by their ``patchMergeKey`` (containers by ``name``, conditions by
    ``type``, ownerReferences by ``uid``, ...; ``meta``), lists of primitives with the merge
    strategy are unions, and the directives kubectl emits for three-way patches are honoured:
    ``$patch: replace|delete|merge``, ``$setElementOrder/<field>``,
    ``$deleteFromPrimitiveList/<field>`` and ``$retainKeys``. Lists without a strategy
    (``tolerations``, node ``taints``) are replaced, as in kube."""
    try:
        return _merge_map(clone(dict(original)), patch, "", meta)
    except _PatchFailed as exc:
        raise bad_request(str(exc)) from None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(orig: dict[str, Any], patch: Mapping[str, Any], path: str, meta: PatchMeta) -> Any:
    directive = patch.get(_DIRECTIVE)
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != _DIRECTIVE}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise _PatchFailed(f"Unknown patch type: {directive}")
    retain = patch.get(_RETAIN)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN):
            continue
        if key.startswith(_ORDER):
            if not isinstance(value, list):
                raise _PatchFailed(f"{key} must be a list")
            orders[key[len(_ORDER) :]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE) :]
            current = orig.get(name)
            if isinstance(current, list) and isinstance(value, list):
                orig[name] = [v for v in current if v not in value]
            continue
        sub = _join(path, key)
        if value is None:
            orig.pop(key, None)
        elif isinstance(value, dict):
            current = orig.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value, sub, meta)
            if merged is None:
                orig.pop(key, None)
            else:
                orig[key] = merged
        elif isinstance(value, list):
            strategy, merge_key = meta.get(sub, ("", ""))
            current = orig.get(key)
            if "merge" in strategy.split(","):
                orig[key] = _merge_list(
                    current if isinstance(current, list) else [], value, sub, merge_key, meta
                )
            else:
                orig[key] = [_strip(v) for v in value]
        else:
            orig[key] = value
    for name, order in orders.items():
        if isinstance(orig.get(name), list):
            _, merge_key = meta.get(_join(path, name), ("", ""))
            orig[name] = _reorder(orig[name], order, merge_key)
    if isinstance(retain, list):
        keep = set(retain)
        for key in list(orig):
            if key not in keep:
                del orig[key]
    return orig


def _strip(value: Any) -> Any:
    """A replaced value must not keep directives."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in (_DIRECTIVE, _RETAIN) and not k.startswith((_ORDER, _DELETE_PRIMITIVE))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _merge_list(
    orig: list[Any], patch: list[Any], path: str, merge_key: str, meta: PatchMeta
) -> list[Any]:
    if any(isinstance(p, dict) and p.get(_DIRECTIVE) == "replace" for p in patch):
        return [_strip(p) for p in patch if not (isinstance(p, dict) and _DIRECTIVE in p)]
    if not merge_key:  # a set of primitives
        result = list(orig)
        for item in patch:
            if isinstance(item, dict):
                continue
            if item not in result:
                result.append(item)
        return result
    result = list(orig)
    for item in patch:
        if not isinstance(item, dict):
            raise _PatchFailed(f"{path}: element {item!r} is not an object")
        if merge_key not in item:
            raise _PatchFailed(f"map: {item} does not contain declared merge key: {merge_key}")
        wanted = item[merge_key]
        idx = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and o.get(merge_key) == wanted),
            None,
        )
        if item.get(_DIRECTIVE) == "delete":
            if idx is not None:
                del result[idx]
            continue
        if idx is None:
            result.append(_strip(item))
        else:
            merged = _merge_map(result[idx], item, path, meta)
            if merged is None:
                del result[idx]
            else:
                result[idx] = merged
    return result


def _reorder(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    def ident(x: Any) -> Any:
        if merge_key and isinstance(x, dict):
            return json.dumps(x.get(merge_key), sort_keys=True)
        return json.dumps(x, sort_keys=True)

    rank = {ident(o): i for i, o in enumerate(order)}
    ranked = [x for x in items if ident(x) in rank]
    ranked.sort(key=lambda x: rank[ident(x)])
    rest = [x for x in items if ident(x) not in rank]
    return ranked + rest
