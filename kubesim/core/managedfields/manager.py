"""The managers of an object's fields, and what each write does to them.

kube-apiserver's field manager (``k8s.io/apimachinery/pkg/util/managedfields/internal``) as
one pipeline per write: every create, update and non-apply patch is an ``update`` by its
manager, an apply is ``apply``; ``decode`` and ``encode`` read and write the entries.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, Final

from kubesim.core.errors import Cause, StatusError
from kubesim.core.managedfields import fieldset as fs
from kubesim.core.managedfields import typed
from kubesim.core.managedfields.schema import Type, field_type
from kubesim.core.store import Shared

__all__ = [
    "APPLY",
    "LAST_APPLIED",
    "UPDATE",
    "Entry",
    "ManagerKey",
    "Write",
    "apply",
    "decode",
    "encode",
    "manager_from_user_agent",
    "update",
]

APPLY: Final = "Apply"
UPDATE: Final = "Update"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10
MAX_MANAGER_LENGTH: Final = 128

# Set by the server, never owned (stripMetaManager).
_STRIPPED: Final[fs.FieldSet] = {
    "f:apiVersion": {},
    "f:kind": {},
    "f:metadata": {
        ".": {},
        **{
            fs.field(name): {}
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        },
    },
}

_STRIPPED_META: Final = frozenset(_STRIPPED["f:metadata"])

# Struct fields the Go types hold by value: present, empty, in the object a create starts
# from, so they are not added fields of the creator's entry (every top-level kind's metadata,
# spec and status; the templates and strategies of the workloads).
_VALUE_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "V1PodTemplateSpec": ("metadata", "spec"),
    "V1JobTemplateSpec": ("metadata", "spec"),
    "V1DeploymentSpec": ("template", "strategy"),
    "V1ReplicaSetSpec": ("template",),
    "V1StatefulSetSpec": ("template", "updateStrategy"),
    "V1DaemonSetSpec": ("template", "updateStrategy"),
    "V1JobSpec": ("template",),
    "V1CronJobSpec": ("jobTemplate",),
}


@dataclass(frozen=True, slots=True)
class ManagerKey:
    """What tells two entries apart (``BuildManagerIdentifier``, ``buildmanagerinfo.go``):
    manager, operation, subresource and, for updates, apiVersion. Appliers keep one entry across
    API versions, updaters one per version.
    """

    manager: str
    operation: str
    api_version: str
    subresource: str


@dataclass(frozen=True, slots=True)
class Entry:
    fields: fs.FieldSet
    api_version: str
    time: str | None
    # the stored entry this one was read from, written back as it was when unchanged
    stored: dict[str, Any] | None = field(default=None, compare=False)


Managed = dict[ManagerKey, Entry]


@dataclass(frozen=True, slots=True)
class Write:
    """One write's context: the object's type, the request's apiVersion and subresource,
    whether the kind has a status subresource, and the time to stamp."""

    type: Type
    api_version: str
    subresource: str
    has_status: bool
    now: str


@lru_cache(maxsize=256)  # clients send the same agent on every request
def manager_from_user_agent(user_agent: str) -> str:
    """``prefixFromUserAgent``: the user agent up to its first ``/`` (``kubectl/v1.32.0
    (linux/amd64) ...`` → ``kubectl``), as the manager of a write without ``fieldManager``."""
    out = ""
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable():
            continue
        size += len(ch.encode())
        if size > MAX_MANAGER_LENGTH:
            break
        out += ch
    return out


def _key(manager: str, operation: str, api_version: str, subresource: str) -> ManagerKey:
    return ManagerKey(
        manager, operation, "" if operation == APPLY else api_version, subresource or ""
    )


def decode(entries: Any, *, trusted: bool = False) -> Managed:
    """``DecodeManagedFields``: the sent (or, ``trusted``, stored) entries; ValueError when
    malformed."""
    out: Managed = {}
    if entries is None:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for e in entries:
        if not isinstance(e, dict):
            raise ValueError("a managedFields entry must be an object")
        operation = e.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError(f"invalid operation {operation!r}")
        if e.get("fieldsType", "FieldsV1") != "FieldsV1":
            raise ValueError(f"invalid fieldsType {e.get('fieldsType')!r}")
        fields = e.get("fieldsV1") or {}
        if not trusted and (not isinstance(fields, dict) or not _valid_set(fields)):
            raise ValueError("invalid fieldsV1")
        manager = e.get("manager") or ""
        api_version = e.get("apiVersion") or ""
        if not isinstance(manager, str) or not isinstance(api_version, str):
            raise ValueError("manager and apiVersion must be strings")
        time = e.get("time")
        sub = e.get("subresource") or ""
        key = _key(manager, str(operation), api_version, str(sub))
        if key in out:
            raise ValueError(f"duplicate entry for manager {manager!r}")
        if not trusted:
            fields = fs.sorted_fields_v1(fields)
        out[key] = Entry(
            fields, api_version, time if isinstance(time, str) else None, e if trusted else None
        )
    return out


def _valid_set(s: Mapping[str, Any]) -> bool:
    for pe, node in s.items():
        if not isinstance(node, dict):
            return False
        if pe == fs.MEMBER:
            if node:
                return False
            continue
        if pe[:2] not in ("f:", "k:", "v:", "i:") or not _valid_set(node):
            return False
    return True


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The entries as ``metadata.managedFields`` holds them, in kube's order: appliers first,
    then by time, manager, apiVersion and subresource (``managedfields.go``).
    """

    def order(item: tuple[ManagerKey, Entry]) -> tuple[str, str, str, str, str]:
        key, entry = item
        return (key.operation, entry.time or "", key.manager, entry.api_version, key.subresource)

    out = []
    for key, entry in sorted(managed.items(), key=order):
        if entry.stored is not None:
            out.append(entry.stored)
            continue
        out.append(_encoded(key, entry.fields, entry.api_version, entry.time))
    return out


def _encoded(
    key: ManagerKey, fields: fs.FieldSet, api_version: str, time: str | None
) -> dict[str, Any]:
    """One entry as ``metadata.managedFields`` holds it."""
    e: dict[str, Any] = {
        "manager": key.manager,
        "operation": key.operation,
        "apiVersion": api_version,
    }
    if time:
        e["time"] = time
    e["fieldsType"] = "FieldsV1"
    e["fieldsV1"] = fields
    if key.subresource:
        e["subresource"] = key.subresource
    return e


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return dict(obj)


def _owned(s: fs.FieldSet, w: Write) -> fs.FieldSet:
    """A field set less what the server sets (``stripmeta.go``) and what the endpoint resets."""
    if "f:apiVersion" in s or "f:kind" in s or "f:metadata" in s:
        s = {pe: n for pe, n in s.items() if pe not in _STRIPPED or pe == "f:metadata"}
        meta = s.get("f:metadata")
        if meta is not None and any(pe in meta for pe in _STRIPPED_META):
            kept = {pe: n for pe, n in meta.items() if pe not in _STRIPPED_META}
            if kept:
                s["f:metadata"] = kept
            else:
                del s["f:metadata"]
    return _reset(s, w)


def _reset(s: fs.FieldSet, w: Write) -> fs.FieldSet:
    """A field set less what the endpoint resets (``ResetFieldsStrategy``): ``status``
    through the main resource of a kind with a status subresource, all but ``status``
    through ``/status``."""
    if w.subresource == "status":
        return {pe: n for pe, n in s.items() if pe == "f:status"}
    if w.has_status and "f:status" in s:
        return {pe: n for pe, n in s.items() if pe != "f:status"}
    return s


@cache
def _zero(t: Type, *, top: bool = True) -> Mapping[str, Any]:
    """The object a create starts from: the by-value structs, empty (shared: never changed)."""
    out: dict[str, Any] = {}
    if t.kind != "struct":
        return out
    names: tuple[str, ...] = _VALUE_FIELDS.get(t.model, ())
    if top:
        names = ("metadata", "spec", "status")
    for name in names:
        ft = field_type(t, name)
        if ft.kind == "struct":
            out[name] = _zero(ft, top=False)
    return out


# Field sets of creates by the object's shape (``typed.shape``) and what ``_owned`` reads of the
# write: the controllers' pods and the events create one shape over and over. Shared, like every
# field set (never changed in place); emptied when full.
_CREATED_CACHE_SIZE: Final = 256  # keys hold the objects' lists: kept few
_created_cache: dict[Hashable, fs.FieldSet] = {}


def _created(new: Mapping[str, Any], w: Write) -> fs.FieldSet:
    """The fields a create of ``new`` sets that its creator owns."""
    try:
        key = (w.type, w.subresource, w.has_status, typed.shape(new))
    except (TypeError, ValueError):  # a list marshal cannot write: no shape, computed each time
        return _owned(typed.created_fields(_zero(w.type), new, w.type), w)
    created = _created_cache.get(key)
    if created is None:
        created = _owned(typed.created_fields(_zero(w.type), new, w.type), w)
        if len(_created_cache) >= _CREATED_CACHE_SIZE:
            _created_cache.clear()
        _created_cache[key] = created
    return created


# The entries of the creates one manager makes in one second with one field set: one list for
# all of them (a burst of events, a ReplicaSet's pods), which the stored objects share as
# versions of one object share theirs (``Shared``: never changed in place; a write replaces it).
_entries_cache: dict[tuple[ManagerKey, str, str, int], tuple[fs.FieldSet, Shared]] = {}


def _creator_entries(owner: ManagerKey, created: fs.FieldSet, w: Write) -> Shared:
    # keyed by the set's id: the value holds the set, so no other set can take that id
    key = (owner, w.api_version, w.now, id(created))
    hit = _entries_cache.get(key)
    if hit is not None and hit[0] is created:
        return hit[1]
    entries = Shared([_encoded(owner, created, w.api_version, w.now)])
    if len(_entries_cache) >= _CREATED_CACHE_SIZE:
        _entries_cache.clear()
    _entries_cache[key] = (created, entries)
    return entries


def _cap(managed: Managed) -> Managed:
    """capManagers (``capmanagers.go``): past ten update entries, the oldest merge into
    ``ancient-changes``.
    """
    updates = [(k, e) for k, e in managed.items() if k.operation == UPDATE]
    if len(updates) <= MAX_UPDATE_MANAGERS:
        return managed
    updates.sort(key=lambda ke: (ke[1].time or "", ke[0].manager))
    out = dict(managed)
    excess = len(updates) - MAX_UPDATE_MANAGERS + 1
    for k, e in updates[:excess]:
        del out[k]
        ancient = _key(ANCIENT_CHANGES, UPDATE, e.api_version, "")
        prev = out.get(ancient)
        merged = fs.union(prev.fields, e.fields) if prev else e.fields
        out[ancient] = Entry(merged, e.api_version, None)
    return out


def _take(
    managed: Managed, owner: ManagerKey, changed: fs.FieldSet, removed: fs.FieldSet, w: Write
) -> Managed:
    """An update's effect on the entries (``Updater.Update`` with ``managedFieldsUpdater``):
    ``changed`` (added or modified, in FieldsV1 order) goes to ``owner``, ``removed`` leaves
    everyone."""
    changed = _owned(changed, w)
    out: Managed = {}
    for key, entry in managed.items():
        s = entry.fields
        if changed:
            s = fs.difference(s, changed)
        if removed:
            s = fs.difference(s, removed)
        if s:
            out[key] = entry if s is entry.fields else Entry(s, entry.api_version, entry.time)
    if changed:
        prev = out.get(owner)
        s = fs.union(prev.fields, changed) if prev else changed
        out[owner] = Entry(s, w.api_version, w.now)
    return _cap(out)


def _base(live: Mapping[str, Any] | None, sent: Any, w: Write) -> Managed:
    """``decodeLiveOrNew``: the entries a request sends replace the live ones (``[]`` clears
    them); none sent, or malformed ones, leave the live ones."""
    live_entries = ((live or {}).get("metadata") or {}).get("managedFields")
    if w.subresource or sent is None or sent == live_entries:
        return _decode_or_empty(live_entries)
    if sent in ([], [{}]):
        return {}
    try:
        got = decode(sent)
    except ValueError:
        return _decode_or_empty(live_entries)
    return got or _decode_or_empty(live_entries)


def _decode_or_empty(entries: Any) -> Managed:
    try:
        return decode(entries, trusted=True)
    except ValueError:
        return {}


def update(
    live: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    sent: Any,
    w: Write,
) -> list[dict[str, Any]]:
    """The managed fields after ``manager`` wrote ``new`` over ``live`` (None: a create);
    ``sent`` is the request's ``metadata.managedFields`` (None when it sent none).

    The fields the write added or changed become the manager's own and leave every other manager,
    the fields it removed leave everyone (``structuredmerge.go``, ``managedfieldsupdater.go``); the
    entry's ``time`` moves only when the write took fields.
    """
    owner = _key(manager, UPDATE, w.api_version, w.subresource)
    if live is None:
        created = _created(new, w)
        if sent is None:  # the common create: one entry, the creator's
            return _creator_entries(owner, created, w) if created else []
        return encode(_take(_base(None, sent, w), owner, created, {}, w))
    c = typed.compare(_without_managed_fields(live), _without_managed_fields(new), w.type)
    live_entries = (live.get("metadata") or {}).get("managedFields")
    if c.empty() and (sent is None or sent == live_entries):
        return live_entries if isinstance(live_entries, list) else []
    managed = _base(live, sent, w)
    if c.empty():
        return encode(managed)
    return encode(_take(managed, owner, fs.union(c.modified, c.added), c.removed, w))


def _conflict_error(conflicts: list[tuple[ManagerKey, Entry, fs.Path]]) -> StatusError:
    def who(key: ManagerKey, entry: Entry) -> str:
        name = json.dumps(key.manager, ensure_ascii=False)
        if key.subresource:
            name += f" with subresource {json.dumps(key.subresource)}"
        if key.operation == UPDATE:
            name += f" using {entry.api_version}"
            if entry.time:
                name += f" at {entry.time}"
        return name

    causes = tuple(
        Cause("FieldManagerConflict", f"conflict with {who(k, e)}", fs.path_string(p))
        for k, e, p in conflicts
    )
    if len(conflicts) == 1:
        k, e, p = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {who(k, e)}: {fs.path_string(p)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for k, e, p in conflicts:
            by_manager.setdefault(who(k, e), []).append(fs.path_string(p))
        lines = []
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {p}" for p in by_manager[name])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, causes=causes)


def _last_applied_owned(live: Mapping[str, Any], w: Write) -> fs.FieldSet | None:
    """The fields client-side apply set that still hold their applied values
    (``allowedConflictsFromLastApplied``); None without a usable annotation."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != w.api_version:
        return None
    try:
        owned = typed.to_field_set(last, w.type)
    except typed.SchemaError:
        return None
    c = typed.compare(last, _without_managed_fields(live), w.type)
    for s in (c.modified, c.added, c.removed):
        owned = fs.difference(owned, s)
    return owned


def _prune(merged: dict[str, Any], last: fs.FieldSet, keep: fs.FieldSet, t: Type) -> dict[str, Any]:
    """Fields the applier owned last time that nobody owns now are removed, subtree and all
    (a field with an owned field below it stays)."""

    def gone(last_node: Mapping[str, Any], keep_node: Mapping[str, Any]) -> fs.FieldSet:
        out: fs.FieldSet = {}
        for pe, node in last_node.items():
            if pe == fs.MEMBER:
                continue
            kept = keep_node.get(pe)
            if kept is None:
                out[pe] = {}
            else:
                sub = gone(node, kept)
                if sub:
                    out[pe] = sub
        return out

    removal = gone(last, keep)
    if not removal:
        return merged
    result = typed.remove(merged, removal, t)
    assert isinstance(result, dict)
    return result


def apply(
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    w: Write,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Apply ``config`` as ``manager``: the new object (without managed fields) and its
    managed fields. A 409 ``Conflict`` when another manager owns a field the apply changes
    and ``force`` is off.

    An apply owns exactly the fields of its configuration: the configuration is merged into the
    live object, fields the manager applied last time and no longer applies are removed unless
    another manager owns them (``prune``), and a field another manager owns that the apply would
    change is a conflict (409 with the fields and their managers) unless ``force`` moves them
    (``merge/update.go``, ``conflict.go``). Agreeing values are shared.

    An object with no managed fields that is applied to is first owned by ``before-first-apply``
    (``skipnonapplied.go``); ``kubectl``'s apply to an object carrying
    ``kubectl.kubernetes.io/last-applied-configuration`` takes over the fields client-side apply set
    without conflict and keeps the annotation current (``lastappliedmanager.go``,
    ``lastappliedupdater.go``).
    """
    managed = _decode_or_empty(((live or {}).get("metadata") or {}).get("managedFields"))
    current = _without_managed_fields(live) if live is not None else {}
    if live is not None and not managed:
        first = _key(BEFORE_FIRST_APPLY, UPDATE, w.api_version, w.subresource)
        created = typed.created_fields(_zero(w.type), current, w.type)
        managed = _take({}, first, created, {}, w)
    try:
        configured = fs.sorted_fields_v1(typed.to_field_set(config, w.type))
        applied = _owned(configured, w)
        merged = typed.merge(current, dict(config), w.type)
    except typed.SchemaError as exc:
        kind = f"{w.api_version}, Kind={current.get('kind') or config.get('kind')}"
        raise StatusError(
            500, "InternalError", f"failed to create typed patch object ({kind}): {exc}"
        ) from None
    assert isinstance(merged, dict)
    me = _key(manager, APPLY, w.api_version, w.subresource)
    last = managed.get(me)
    managed[me] = Entry(applied, w.api_version, last.time if last else None)
    if last is not None and last.fields:
        # What the configuration names keeps its parents, the server's fields included.
        keep: fs.FieldSet = fs.difference(configured, _owned(configured, w))
        for entry in managed.values():
            keep = fs.union(keep, entry.fields)
        merged = _prune(merged, last.fields, keep, w.type)
    c = typed.compare(current, merged, w.type)
    # what the endpoint resets neither conflicts nor changes hands
    changed = _reset(fs.union(c.modified, c.added), w)
    removed = _reset(c.removed, w)
    conflicts: list[tuple[ManagerKey, Entry, fs.Path]] = []
    if changed:
        for key, entry in managed.items():
            if key == me:
                continue
            conflicts.extend(
                (key, entry, path) for path in fs.members(fs.intersection(entry.fields, changed))
            )
    if conflicts and not force:
        allowed = (
            _last_applied_owned(current, w) if manager == "kubectl" and live is not None else None
        )
        remaining = conflicts
        if allowed is not None:
            remaining = [
                (k, e, p) for k, e, p in conflicts if not fs.intersection(_single(p), allowed)
            ]
        if remaining:
            raise _conflict_error(remaining)
    out: Managed = {}
    for key, entry in managed.items():
        s = entry.fields
        if key != me:
            if changed:
                s = fs.difference(s, changed)
            if removed:
                s = fs.difference(s, removed)
        if s:
            out[key] = entry if s is entry.fields else Entry(s, entry.api_version, entry.time)
    if (changed or removed) and me in out:
        out[me] = Entry(out[me].fields, w.api_version, w.now)
    if manager == "kubectl" and live is not None:
        merged = _sync_last_applied(merged, config)
    return merged, encode(_cap(out))


def _single(path: fs.Path) -> fs.FieldSet:
    s: fs.FieldSet = {}
    fs.insert(s, path)
    return s


def _sync_last_applied(obj: dict[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """kubectl's server-side apply keeps an existing client-side apply annotation current."""
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return obj
    body = json.loads(json.dumps(config))
    cmeta = body.get("metadata")
    if isinstance(cmeta, dict) and isinstance(cmeta.get("annotations"), dict):
        cmeta["annotations"].pop(LAST_APPLIED, None)
        if not cmeta["annotations"]:
            del cmeta["annotations"]
    text = json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n"
    return {**obj, "metadata": {**meta, "annotations": {**annotations, LAST_APPLIED: text}}}
