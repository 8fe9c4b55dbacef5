"""Sets of field paths in the shape metadata.managedFields stores them (``FieldsV1``).

kubesim computes on that shape directly (a ``FieldSet`` is the dict ``fieldsV1`` holds), so a
stored entry is read and written without conversion. Sets are never changed in place: every
operation returns a new one, or an argument it would only copy; results share subtrees.

Upstream: ``sigs.k8s.io/structured-merge-diff/fieldpath`` (``set.go``, ``serialize.go``,
``element.go``, ``path.go``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "MEMBER",
    "FieldSet",
    "Path",
    "difference",
    "element_order",
    "field",
    "index",
    "insert",
    "intersection",
    "is_member",
    "key",
    "key1",
    "members",
    "path_string",
    "sorted_fields_v1",
    "union",
    "value",
]

MEMBER: Final = "."
# A node's children by path element; the node itself is a member when it has no children or
# when ``"."`` is among them.
FieldSet = dict[str, Any]
Path = tuple[str, ...]

_EMPTY: Final[FieldSet] = {}


# one encoder: json.dumps with options builds a new one on every call
_compact: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode
_STR: Final = json.encoder.encode_basestring  # a JSON string, non-ASCII kept


def field(name: str) -> str:
    """``f:<name>``: a field of a struct or a key of a map."""
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """``k:{...}``: an item of a list keyed by ``fields`` (sorted by name, as kube writes it)."""
    if len(fields) == 1:
        [(k, v)] = fields.items()
        return key1(k, v)
    return "k:{" + ",".join(_STR(k) + ":" + _scalar(fields[k]) for k in sorted(fields)) + "}"


def key1(name: str, v: Any) -> str:
    """``key({name: v})``: most lists are keyed by one field."""
    return "k:{" + _STR(name) + ":" + _scalar(v) + "}"


def _scalar(v: Any) -> str:
    # the common key values without the encoder's detour
    if v.__class__ is str:
        return _STR(v)
    if v.__class__ is int:
        return str(v)
    return _compact(v)


def value(v: Any) -> str:
    """``v:<json>``: an item of a set."""
    return "v:" + _compact(v)


def index(i: int) -> str:
    """``i:<n>``: an item of a list addressed by position."""
    return f"i:{i}"


def is_member(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` is in the set itself, not only through its children.

    structured-merge-diff's ``fieldpath.Set`` is a tree of path elements in which a node may be a
    member and may have children. ``FieldsV1`` writes each element as a key (``f:``, ``k:``, ``v:``,
    ``i:``; the functions above), a member with no children as ``{}`` and a member with children as
    ``{".": {}, ...}``.
    """
    return not node or MEMBER in node


def _make(member: bool, children: FieldSet) -> FieldSet | None:
    if not children:
        return {} if member else None
    if member:
        return {MEMBER: {}, **children}
    return children


def _children(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return node if MEMBER not in node else {k: v for k, v in node.items() if k != MEMBER}


def union(a: Mapping[str, Any], b: Mapping[str, Any]) -> FieldSet:
    """The children of two sets merged (the root is never a member). Sets in FieldsV1 order
    give a set in that order; subtrees only one side has are shared, not copied."""
    if not a:
        return dict(b)
    if not b:
        return dict(a)
    out: FieldSet = dict(a)
    grew = False
    for pe, nb in b.items():
        if pe == MEMBER:
            continue
        na = out.get(pe)
        if na is None:
            out[pe] = nb
            grew = True
        else:
            merged = _make(is_member(na) or is_member(nb), union(_children(na), _children(nb)))
            out[pe] = merged if merged is not None else {}
    if grew:
        out = {pe: out[pe] for pe in sorted(out, key=_order)}
    return out


def difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> FieldSet:
    """Members of ``a`` that are not members of ``b`` (``a`` itself when ``b`` takes none)."""
    if not b or not any(pe in b for pe in a):
        return a if isinstance(a, dict) else dict(a)
    out: FieldSet = {}
    for pe, na in a.items():
        if pe == MEMBER:
            continue
        nb = b.get(pe)
        if nb is None:
            out[pe] = na
            continue
        node = _make(is_member(na) and not is_member(nb), difference(_children(na), _children(nb)))
        if node is not None:
            out[pe] = node
    return out


def intersection(a: Mapping[str, Any], b: Mapping[str, Any]) -> FieldSet:
    """Members of both."""
    out: FieldSet = {}
    if len(b) < len(a):
        a, b = b, a
    for pe, na in a.items():
        if pe == MEMBER:
            continue
        nb = b.get(pe)
        if nb is None:
            continue
        node = _make(is_member(na) and is_member(nb), intersection(_children(na), _children(nb)))
        if node is not None:
            out[pe] = node
    return out


def members(s: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    """Every member's path, parents before their children, elements in FieldsV1 order."""
    for pe in sorted((k for k in s if k != MEMBER), key=_order):
        node = s[pe]
        path = (*prefix, pe)
        if is_member(node):
            yield path
        yield from members(node, path)


def insert(s: FieldSet, path: Path) -> None:
    """Add ``path`` as a member of ``s`` (which the caller owns and is building)."""
    node = s
    for i, pe in enumerate(path):
        child = node.get(pe)
        last = i == len(path) - 1
        if child is None:
            child = {}
            if not last:
                node[pe] = child
                node = child
                continue
            node[pe] = child
            return
        if last:
            if child:
                child[MEMBER] = {}
            return
        if not child:  # a member leaf gains children
            child[MEMBER] = {}
        node = child
    return


_RANK: Final = {".": 0, "f": 1, "k": 2, "v": 3, "i": 4}


def element_order(pe: str) -> tuple[int, str]:
    """Sort key of path elements as FieldsV1 lists them: ``.`` first, then field names, keys,
    values and indices."""
    return (_RANK.get(pe[:1], 5), pe)


_order = element_order


def sorted_fields_v1(s: Mapping[str, Any]) -> FieldSet:
    """``s`` with its keys in the order kube serialises them: ``.`` first, then by element."""
    out: FieldSet = {}
    if MEMBER in s:
        out[MEMBER] = {}
    for pe in sorted((k for k in s if k != MEMBER), key=_order):
        out[pe] = sorted_fields_v1(s[pe])
    return out


def _element_string(pe: str) -> str:
    kind, text = pe[:2], pe[2:]
    if kind == "f:":
        return "." + text
    if kind == "i:":
        return f"[{text}]"
    if kind == "v:":
        return f"[={text}]"
    if kind == "k:":
        try:
            fields = json.loads(text)
        except ValueError:
            return f"[{text}]"
        if isinstance(fields, dict):
            inner = ",".join(f"{k}={_compact(v)}" for k, v in sorted(fields.items()))
            return f"[{inner}]"
    return pe


def path_string(path: Path) -> str:
    """``fieldpath.Path.String()``: ``.spec.containers[name="web"].image``."""
    return "".join(_element_string(pe) for pe in path)
