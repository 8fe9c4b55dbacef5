"""Typed walks over objects: their field set, the comparison of two, the merge of an applied
configuration into a live object, and the removal of fields.

structured-merge-diff's ``typed`` package (``sigs.k8s.io/structured-merge-diff/typed``:
``tofieldset.go``, ``compare.go``, ``merge.go``, ``remove.go``), over kubesim's plain dicts and
the merge types of ``schema``. Identical subtrees are skipped without being walked, so a write
that changes one field costs one path.
"""

from __future__ import annotations

import marshal
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from kube.strict import model_fields
from kubesim.core.managedfields import fieldset as fs
from kubesim.core.managedfields.schema import (
    KEY_DEFAULTS,
    Type,
    element_type,
    field_type,
)

__all__ = [
    "Comparison",
    "SchemaError",
    "compare",
    "created_fields",
    "item_element",
    "merge",
    "remove",
    "shape",
    "to_field_set",
]


class SchemaError(ValueError):
    """A value the schema cannot address: a keyed list item without its key."""


class _Missing:
    pass


_MISSING: Final = _Missing()
_CONTAINERS: Final = (dict, list)


@dataclass(slots=True)
class Comparison:
    added: fs.FieldSet = field(default_factory=dict)
    modified: fs.FieldSet = field(default_factory=dict)
    removed: fs.FieldSet = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.added or self.modified or self.removed)


def _struct_fields(t: Type) -> Mapping[str, str]:
    return model_fields(t.model) or {}


def item_element(t: Type, item: Any, i: int, path: fs.Path, *, strict: bool) -> str | None:
    """The path element of a list item: ``k:{...}`` for a keyed list, ``v:`` for a set;
    None when the item cannot be keyed and ``strict`` is off (the caller treats the list as
    one field)."""
    if t.is_set:
        return fs.value(item)
    if not isinstance(item, dict):
        if strict:
            raise SchemaError(
                f"{fs.path_string(path)}: element {i}: associative list with keys has an"
                " element that is not a map"
            )
        return None
    keys: dict[str, Any] = {}
    for k in t.keys:
        if k in item:
            keys[k] = item[k]
        elif k in KEY_DEFAULTS:
            keys[k] = KEY_DEFAULTS[k]
        else:
            if strict:
                raise SchemaError(
                    f"{fs.path_string(path)}: element {i}: associative list with keys has an"
                    f' element that omits key field "{k}" (and doesn\'t have default value)'
                )
            return None
    return fs.key(keys)


def _items(t: Type, items: list[Any], path: fs.Path, *, strict: bool) -> dict[str, Any] | None:
    """A keyed list's or set's items by path element (the first of duplicates kept); all
    ``k:`` or all ``v:``, so a plain sort puts them in FieldsV1 order."""
    out: dict[str, Any] = {}
    if len(t.keys) == 1 and not t.is_set:  # the common case without a call per item
        [k] = t.keys
        default = KEY_DEFAULTS.get(k, _MISSING)
        for item in items:
            v = item.get(k, default) if isinstance(item, dict) else _MISSING
            if v is _MISSING:  # not keyable: item_element says so
                out = {}
                break
            out.setdefault(fs.key1(k, v), item)
        else:
            return out
    for i, item in enumerate(items):
        pe = item_element(t, item, i, path, strict=strict)
        if pe is None:
            return None
        out.setdefault(pe, item)
    return out


def _granular_list(t: Type) -> bool:
    return t.granular_list


def _granular_map(t: Type) -> bool:
    return t.granular_map


# --- ToFieldSet ------------------------------------------------------------------------------


def to_field_set(obj: Mapping[str, Any], t: Type, *, strict: bool = True) -> fs.FieldSet:
    """Every field ``obj`` sets, as structured-merge-diff's ``ToFieldSet``: a struct's fields
    are members only when null or empty, a map's keys and a list's items always, atomic values as
    one field.
    """
    return _map_set(obj, t, (), strict)


def _map_set(obj: Mapping[str, Any], t: Type, path: fs.Path, strict: bool) -> fs.FieldSet:
    out: fs.FieldSet = {}
    fields = _struct_fields(t) if t.kind == "struct" else None
    for name, v in obj.items():
        ft = field_type(t, name)
        pe = fs.field(name)
        member, children = _node_set(v, ft, (*path, pe), strict)
        if fields is None or name not in fields:
            member = True
        node = _join(member, children)
        if node is not None:
            out[pe] = node
    return out


def _join(member: bool, children: fs.FieldSet) -> fs.FieldSet | None:
    if not children:
        return {} if member else None
    return {fs.MEMBER: {}, **children} if member else children


def _node_set(v: Any, t: Type, path: fs.Path, strict: bool) -> tuple[bool, fs.FieldSet]:
    if t.leaf or v is None:
        return True, {}
    if isinstance(v, dict):
        if not _granular_map(t):
            return True, {}
        return not v, _map_set(v, t, path, strict)
    if isinstance(v, list):
        if not _granular_list(t):
            return True, {}
        elem = element_type(t)
        items = _items(t, v, path, strict=strict)
        if items is None:
            return True, {}
        out: fs.FieldSet = {}
        for pe, item in items.items():
            _, children = _node_set(item, elem, (*path, pe), strict)
            node = _join(True, children)
            assert node is not None
            out[pe] = node
        return False, out
    return True, {}


# --- Compare ---------------------------------------------------------------------------------


def compare(old: Mapping[str, Any], new: Mapping[str, Any], t: Type) -> Comparison:
    """What changed from ``old`` to ``new``: added, modified and removed fields, each in
    FieldsV1 order (``Compare``).

    Leaves that differ are *modified*, a value or item present on one side only is *added* or
    *removed*; maps and lists empty on both sides count as leaves, which keeps ``{}`` apart from
    absent.
    """
    added, modified, removed = _compare(old, new, t, ())
    return Comparison(added or {}, modified or {}, removed or {})


def _is_empty(v: Any, kind: type) -> bool:
    return v is _MISSING or v is None or (isinstance(v, kind) and not v)


_Nodes = tuple[fs.FieldSet | None, fs.FieldSet | None, fs.FieldSet | None]
_NOTHING: Final[_Nodes] = (None, None, None)


def _compare(old: Any, new: Any, t: Type, path: fs.Path, *, differ: bool = False) -> _Nodes:
    """The added, modified and removed nodes at one position (None: nothing there). A value
    on one side only is added or removed whole; a leaf present on both sides that differs is
    modified; a map or list on both sides is no field itself, only its children are.
    ``differ``: the caller found ``old != new`` already."""
    if old is _MISSING:
        return _added(new, t, path), None, None
    if new is _MISSING:
        return None, None, _added(old, t, path)
    if not differ and old == new:
        return _NOTHING
    shape: type | None = None
    if t.granular_map:
        if (
            (isinstance(old, dict) or old is None)
            and (isinstance(new, dict) or new is None)
            and not (_is_empty(old, dict) and _is_empty(new, dict))
        ):
            shape = dict
    elif (
        t.granular_list
        and (isinstance(old, list) or old is None)
        and (isinstance(new, list) or new is None)
        and not (_is_empty(old, list) and _is_empty(new, list))
    ):
        shape = list
    if shape is None:
        return None, {}, None
    added: fs.FieldSet = {}
    modified: fs.FieldSet = {}
    removed: fs.FieldSet = {}
    # ``path`` only names a position in strict walks' errors: not extended here (never strict)
    if shape is dict:
        o = old if isinstance(old, dict) else {}
        n = new if isinstance(new, dict) else {}
        for name, ov in o.items():
            nv = n.get(name, _MISSING)
            if nv is _MISSING:
                removed["f:" + name] = (
                    _added(ov, field_type(t, name), path) if isinstance(ov, _CONTAINERS) else {}
                )
            elif ov != nv:
                _file(
                    "f:" + name,
                    _compare(ov, nv, field_type(t, name), path, differ=True),
                    added,
                    modified,
                    removed,
                )
        for name, nv in n.items():
            if name not in o:
                # a scalar is a leaf whatever its type: no type to look up
                added["f:" + name] = (
                    _added(nv, field_type(t, name), path) if isinstance(nv, _CONTAINERS) else {}
                )
    else:
        oi = _items(t, old if isinstance(old, list) else [], path, strict=False)
        ni = _items(t, new if isinstance(new, list) else [], path, strict=False)
        if oi is None or ni is None:  # items without their keys: the list is one field
            return None, {}, None
        elem = element_type(t)
        for pe, ov in oi.items():
            nv = ni.get(pe, _MISSING)
            if nv is _MISSING:
                removed[pe] = _added(ov, elem, path)
            elif ov != nv:
                _file(pe, _compare(ov, nv, elem, path, differ=True), added, modified, removed)
        for pe, nv in ni.items():
            if pe not in oi:
                added[pe] = _added(nv, elem, path)
    return _in_order(added), _in_order(modified), _in_order(removed)


def _file(
    pe: str,
    child: _Nodes,
    added: fs.FieldSet,
    modified: fs.FieldSet,
    removed: fs.FieldSet,
) -> None:
    """File a child's (added, modified, removed) under its path element ``pe``."""
    a, m, r = child
    if a is not None:
        added[pe] = a
    if m is not None:
        modified[pe] = m
    if r is not None:
        removed[pe] = r


def _in_order(node: fs.FieldSet) -> fs.FieldSet | None:
    # one kind of element per level (fields, or a list's items): a plain sort is FieldsV1's
    if not node:
        return None
    return dict(sorted(node.items())) if len(node) > 1 else node


def created_fields(zero: Any, new: Any, t: Type) -> fs.FieldSet:
    """``added`` and ``modified`` of ``compare(zero, new)`` in one pass, in FieldsV1 order:
    what a create sets over the empty object ``zero`` (whose by-value structs are present)."""
    out = _created(zero, new, t, ())
    return out if out is not None else {}


def _list_bytes(items: list[Any]) -> bytes:
    """A list whole, exactly: marshal's format 0 writes true, 1 and 1.0 apart (as the path
    elements do), keeps a map's key order, and has no references or interning marks, so
    equal lists give equal bytes; four times as fast as json for a pod's few short lists.
    ValueError for a value it cannot write (anything but the built-in types)."""
    return marshal.dumps(items, 0)


def shape(obj: Mapping[str, Any]) -> Hashable:
    """All that ``created_fields`` reads of ``obj``: every map's keys in order and what is under
    them, lists whole (their items' keys and set values are path elements), and not the scalars
    under map keys (a leaf is one field whatever it holds). Objects of one shape have one field
    set over the same empty object: pods from one template, events from one recorder.
    ValueError for a list ``_list_bytes`` cannot write."""
    return tuple(
        [
            k  # a scalar: its key alone
            if not isinstance(v, _CONTAINERS)
            else (k, shape(v) if isinstance(v, dict) else _list_bytes(v))
            for k, v in obj.items()
        ]
    )


@lru_cache(maxsize=1024)
def _leaves(names: tuple[str, ...]) -> fs.FieldSet:
    """A member whose fields are all scalars (shared: field sets are never changed)."""
    return {fs.MEMBER: {}, **{"f:" + name: {} for name in sorted(names)}}


def _added(new: Any, t: Type, path: fs.Path) -> fs.FieldSet:
    """The node of a value the empty object does not have: a member, with every field."""
    if t.granular_map and isinstance(new, dict) and new:
        for v in new.values():
            if isinstance(v, _CONTAINERS):
                break
        else:
            return _leaves(tuple(new))
        out: fs.FieldSet = {fs.MEMBER: {}}
        for name in sorted(new):
            v = new[name]
            if isinstance(v, dict | list):
                out["f:" + name] = _added(v, field_type(t, name), path)
            else:
                out["f:" + name] = {}  # a scalar: a leaf whatever its type
        return out
    if t.granular_list and isinstance(new, list) and new:
        items = _items(t, new, path, strict=False)
        if items is None:
            return {}
        elem = element_type(t)
        out = {fs.MEMBER: {}}
        for pe in sorted(items):
            out[pe] = _added(items[pe], elem, path)
        return out
    return {}


def _created(zero: Any, new: Any, t: Type, path: fs.Path) -> fs.FieldSet | None:
    """The node of ``new`` at ``path`` (children plus ``"."`` when a member), None when the
    create sets nothing there."""
    if zero is _MISSING:
        return _added(new, t, path)
    if zero == new:
        return None
    children: fs.FieldSet = {}
    member = zero is _MISSING
    if _granular_map(t) and isinstance(new, dict) and new:
        if zero is not _MISSING and not isinstance(zero, dict | None):
            return {}
        z = zero if isinstance(zero, dict) else {}
        for name in sorted(new):
            zv = z.get(name, _MISSING)
            v = new[name]
            if zv is _MISSING and not isinstance(v, dict | list):
                children["f:" + name] = {}
                continue
            node = _created(zv, v, field_type(t, name), path)
            if node is not None:
                children["f:" + name] = node
    elif _granular_list(t) and isinstance(new, list) and new and zero in (_MISSING, None, []):
        items = _items(t, new, path, strict=False)
        if items is None:
            return {}
        elem = element_type(t)
        for pe in sorted(items):
            node = _created(_MISSING, items[pe], elem, path)
            children[pe] = node if node is not None else {}
    else:
        return {}  # a leaf: added, or changed from the empty object's value
    if not children:
        return {} if member else None
    return {fs.MEMBER: {}, **children} if member else children


# --- Merge -----------------------------------------------------------------------------------


def merge(live: Any, config: Any, t: Type, path: fs.Path = ()) -> Any:
    """``config`` merged into ``live`` (neither is changed): the configuration's leaves win
    (``Merge``); maps merge key by key, keyed lists and sets item by item in the order ``merge.go``
    keeps.
    """
    if live is _MISSING or live is None:
        return config
    if _granular_map(t) and isinstance(live, dict) and isinstance(config, dict):
        out = dict(live)
        for name, cv in config.items():
            lv = live.get(name, _MISSING)
            ft = field_type(t, name)
            out[name] = cv if lv is _MISSING else merge(lv, cv, ft, (*path, fs.field(name)))
        return out
    if _granular_list(t) and isinstance(live, list) and isinstance(config, list):
        return _merge_list(live, config, t, path)
    return config


def _merge_list(live: list[Any], config: list[Any], t: Type, path: fs.Path) -> list[Any]:
    """Items of both in structured-merge-diff's order: the live order, except that items the
    configuration also holds come in the configuration's order, its new items where it puts
    them."""
    rhs = _items(t, config, path, strict=True)
    lhs = _items(t, live, path, strict=False)
    assert rhs is not None
    if lhs is None:  # the live list cannot be keyed: the configuration replaces it
        return list(config)
    elem = element_type(t)
    l_order, r_order = list(lhs), list(rhs)
    shared = [pe for pe in r_order if pe in lhs]
    out: list[Any] = []
    li = ri = si = 0

    def next_shared() -> str | None:
        return shared[si] if si < len(shared) else None

    while li < len(l_order) or ri < len(r_order):
        if li < len(l_order) and ri < len(r_order):
            pe = l_order[li]
            if pe == r_order[ri]:
                out.append(merge(lhs[pe], rhs[pe], elem, (*path, pe)))
                li += 1
                ri += 1
                si += 1
                continue
            want = next_shared()
            if pe in rhs and want is not None and want != pe:
                li += 1  # a shared item, emitted where the configuration puts it
                continue
        if li < len(l_order) and l_order[li] not in rhs:
            out.append(lhs[l_order[li]])
            li += 1
            continue
        if ri < len(r_order):
            pe = r_order[ri]
            out.append(merge(lhs.get(pe, _MISSING), rhs[pe], elem, (*path, pe)))
            ri += 1
            if pe == next_shared():
                si += 1
            continue
        li += 1  # a shared item already emitted
    return out


# --- RemoveItems -----------------------------------------------------------------------------


def remove(value: Any, s: Mapping[str, Any], t: Type, path: fs.Path = ()) -> Any:
    """``value`` without the members of ``s`` (a member's whole subtree goes with it;
    ``RemoveItems``).
    """
    if not s:
        return value
    if isinstance(value, dict) and _granular_map(t):
        out: dict[str, Any] = {}
        for name, v in value.items():
            pe = fs.field(name)
            node = s.get(pe)
            if node is None:
                out[name] = v
            elif fs.is_member(node):
                continue
            else:
                out[name] = remove(v, node, field_type(t, name), (*path, pe))
        return out
    if isinstance(value, list) and _granular_list(t):
        elem = element_type(t)
        kept: list[Any] = []
        for i, item in enumerate(value):
            ipe = item_element(t, item, i, path, strict=False)
            node = s.get(ipe) if ipe is not None else None
            if node is None or ipe is None:
                kept.append(item)
            elif not fs.is_member(node):
                kept.append(remove(item, node, elem, (*path, ipe)))
        return kept
    return value
