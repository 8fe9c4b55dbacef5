"""The merge types of every served kind, as structured-merge-diff reads them from the OpenAPI.

kubesim has no OpenAPI schemas. The structure comes from ``kube/data/schema.json`` (the
fields and their types, ``kube.strict.model_fields``), the merge keys from the strategic merge
patch metadata kubesim already keeps (``kubesim.core.patch.patch_meta_for``), and the markers
the Go types carry beyond those (``+listType``, ``+listMapKey``, ``+structType=atomic``,
``+mapType=atomic``) from the tables below, for the types kubesim serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Final

from kube.strict import known_kinds, model_fields, model_for
from kubesim.core.patch import patch_meta_for

__all__ = ["DEDUCED", "Type", "element_type", "field_type", "root_type", "type_of"]

_SCALARS: Final = frozenset({"str", "int", "bool", "float", "datetime", "quantity", "date"})

# Lists keyed by more than their strategic merge key, or keyed without one (+listMapKey).
_LIST_KEYS: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("V1Container", "ports"): ("containerPort", "protocol"),
    ("V1EphemeralContainer", "ports"): ("containerPort", "protocol"),
    ("V1ServiceSpec", "ports"): ("port", "protocol"),
    ("V1PodSpec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
    ("V1PodStatus", "podIPs"): ("ip",),
    ("V1PodStatus", "hostIPs"): ("ip",),
    ("V1NodeStatus", "addresses"): ("type",),
    ("V1PodStatus", "resourceClaimStatuses"): ("name",),
}
# Lists of scalars that are sets (+listType=set) without the merge strategy saying so.
_LIST_SETS: Final = frozenset({("V1NodeSpec", "podCIDRs"), ("V1ObjectMeta", "finalizers")})
# Lists the merge strategy would key but the type declares atomic (+listType=atomic).
_LIST_ATOMIC: Final = frozenset({("V1Container", "resizePolicy"), ("V1NodeStatus", "images")})
# +structType=atomic: replaced as a whole, owned as one field.
_ATOMIC_STRUCTS: Final = frozenset(
    {
        "V1LabelSelector",
        "V1NodeSelector",
        "V1NodeSelectorTerm",
        "V1ObjectReference",
        "V1LocalObjectReference",
        "V1TypedLocalObjectReference",
        "V1ConfigMapKeySelector",
        "V1SecretKeySelector",
        "V1ObjectFieldSelector",
        "V1ResourceFieldSelector",
        "V1OwnerReference",
    }
)
# +mapType=atomic
_ATOMIC_MAPS: Final = frozenset(
    {
        ("V1ServiceSpec", "selector"),
        ("V1ReplicationControllerSpec", "selector"),
        ("V1PodSpec", "nodeSelector"),
    }
)
# Keys a list item may leave out because the type defaults them (+default on the key field).
KEY_DEFAULTS: Final[dict[str, object]] = {"protocol": "TCP"}


@dataclass(frozen=True, slots=True)
class Type:
    """One merge type: ``scalar``; ``struct`` (``model``'s fields); ``map`` (keys of type
    ``elem``); ``list`` (items of type ``elem``: atomic, a set, or keyed by ``keys``);
    ``deduced`` (an untyped value). ``atomic`` structs, maps and lists are one field."""

    kind: str
    model: str = ""
    elem: str = ""
    atomic: bool = False
    keys: tuple[str, ...] = ()
    is_set: bool = False
    # merged key by key / item by item (derived, for the walks' speed)
    granular_map: bool = field(init=False, default=False)
    granular_list: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "granular_map", self.kind in ("struct", "map", "deduced") and not self.atomic
        )
        object.__setattr__(self, "granular_list", self.kind == "list" and not self.atomic)

    @property
    def leaf(self) -> bool:
        return self.kind == "scalar" or self.atomic


DEDUCED: Final = Type("deduced")
_SCALAR: Final = Type("scalar")


@cache
def _merge_keys() -> dict[tuple[str, str], tuple[str, str]]:
    """(model, field) → (strategy, merge key), walked from each kind's patch metadata paths."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for api_version, kind in known_kinds():
        root = model_for(api_version, kind)
        if root is None:
            continue
        for path, meta in patch_meta_for(kind).items():
            model = root
            parts = path.split(".")
            for i, part in enumerate(parts):
                fields = model_fields(model) or {}
                ts = fields.get(part)
                if ts is None:
                    break
                if i == len(parts) - 1:
                    out[(model, part)] = meta
                    break
                inner = ts[5:-1] if ts.startswith("list[") else ts
                if model_fields(inner) is None:
                    break
                model = inner
    return out


@cache
def type_of(type_string: str, model: str = "", field: str = "") -> Type:
    """The merge type of ``type_string`` as the type of ``model.field`` (empty for a root or
    an element).

    Server-Side Apply merges and tracks fields by type: a struct's fields one by one, a map's keys
    one by one (unless the map is atomic), a list as a whole (atomic), as a set of scalars, or as a
    map keyed by some fields of its items (``x-kubernetes-list-type``,
    ``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``; for the built-in types, without them,
    the strategic merge patch tags: ``patchStrategy:"merge"`` with a ``patchMergeKey`` makes a keyed
    list, without one a set; ``schemaconv`` in structured-merge-diff). A kind outside the schema, or
    a field the schema does not know (``object``: ``RawExtension`` and the like), is *deduced* as
    structured-merge-diff deduces an untyped value: maps field by field, lists atomic.
    """
    if type_string in _SCALARS:
        return _SCALAR
    if type_string.startswith("list["):
        elem = type_string[5:-1]
        where = (model, field)
        if where in _LIST_ATOMIC:
            return Type("list", elem=elem, atomic=True)
        if where in _LIST_KEYS:
            return Type("list", elem=elem, keys=_LIST_KEYS[where])
        if where in _LIST_SETS:
            return Type("list", elem=elem, is_set=True)
        strategy, merge_key = _merge_keys().get(where, ("", ""))
        if "merge" in strategy.split(","):
            if merge_key:
                return Type("list", elem=elem, keys=(merge_key,))
            if elem in _SCALARS:
                return Type("list", elem=elem, is_set=True)
        return Type("list", elem=elem, atomic=True)
    if type_string.startswith("dict("):
        elem = type_string[len("dict(str, ") : -1]
        return Type("map", elem=elem, atomic=(model, field) in _ATOMIC_MAPS)
    if model_fields(type_string) is not None:
        return Type("struct", model=type_string, atomic=type_string in _ATOMIC_STRUCTS)
    return DEDUCED


@cache
def root_type(api_version: str, kind: str) -> Type:
    """The type of a whole object of a kind; deduced for kinds outside the schema."""
    model = model_for(api_version, kind)
    return type_of(model) if model is not None else DEDUCED


def field_type(t: Type, name: str) -> Type:
    """The type of the value under ``name`` in a struct or map of type ``t``."""
    if t.kind == "struct":
        return _struct_field(t, name)
    if t.kind == "map":
        return type_of(t.elem)
    return DEDUCED


@lru_cache(maxsize=4096)  # bounded: a struct may be sent any field name
def _struct_field(t: Type, name: str) -> Type:
    ts = (model_fields(t.model) or {}).get(name)
    return DEDUCED if ts is None else type_of(ts, t.model, name)


@cache
def element_type(t: Type) -> Type:
    """The type of a list's items."""
    return type_of(t.elem) if t.kind == "list" else DEDUCED
