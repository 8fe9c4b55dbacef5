"""Reading a manifest's fields into typed values, each failure naming the object and the field.

Manifests (camelCase dicts, as in YAML) are converted once, at the boundary, into the typed
views of ``kube.objects``; every ``from_dict`` there reads its fields through a ``Reader``,
which checks each value's JSON type and range as kube-apiserver's decoding and validation do
(``int32`` bounds, quantities non-negative, times RFC 3339, selectors valid) and raises
``InvalidObject`` with the field's path (``spec.containers[0].resources.requests.cpu``), so a
bad manifest is reported where it was written rather than failing later inside a decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kube.ints import INT32_MAX, INT32_MIN
from kube.labels import LabelSelector, SelectorError
from kube.quantity import QuantityError, resource_value
from kube.times import parse_time

__all__ = ["NEGATIVE", "InvalidObject", "Reader"]

# apimachinery's IsNegativeErrorMsg: the rule a count or a quantity below zero breaks.
NEGATIVE: Final = "must be greater than or equal to 0"


class InvalidObject(ValueError):
    """A manifest that cannot be turned into an object; names the object and the field."""

    def __init__(self, kind: str, name: str, field_path: str, detail: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field_path
        self.detail = detail
        who = f'{kind} "{name}"' if name else kind
        where = f"{field_path}: " if field_path else ""
        super().__init__(f"{who}: {where}{detail}")


class Reader:
    """Typed access to a manifest that reports errors against the object and field path."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: str, data: object) -> None:
        self.kind = kind
        self.name = ""
        if not isinstance(data, Mapping):
            raise InvalidObject(kind, "", "", f"expected a mapping, got {type(data).__name__}")
        meta = data.get("metadata")
        if isinstance(meta, Mapping):
            name = meta.get("name")
            ns = meta.get("namespace")
            if isinstance(name, str):
                self.name = f"{ns}/{name}" if isinstance(ns, str) and ns else name

    def fail(self, path: str, detail: str) -> InvalidObject:
        return InvalidObject(self.kind, self.name, path, detail)

    def mapping(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = data.get(key)
        if value is None:
            return {}
        if type(value) is not dict and not isinstance(value, Mapping):
            raise self.fail(path, f"must be an object, not {type(value).__name__}")
        return value

    def seq(self, data: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
        value = data.get(key)
        if value is None:
            return ()
        if type(value) is not list and not isinstance(value, list | tuple):
            raise self.fail(path, f"must be a list, not {type(value).__name__}")
        return value

    def string(self, data: Mapping[str, Any], key: str, path: str, default: str = "") -> str:
        value = data.get(key)
        if type(value) is str:
            return value
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string, not {value!r}")
        return value

    def optional_string(self, data: Mapping[str, Any], key: str, path: str) -> str | None:
        if data.get(key) is None:
            return None
        return self.string(data, key, path)

    def boolean(self, data: Mapping[str, Any], key: str, path: str) -> bool:
        value = data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.fail(path, f"must be a boolean, not {value!r}")
        return value

    def integer(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        *,
        lo: int = INT32_MIN,
        hi: int = INT32_MAX,
    ) -> int | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise self.fail(path, f"must be an integer, not {value!r}")
        if not lo <= value <= hi:
            raise self.fail(path, f"Invalid value: {value}: must be between {lo} and {hi}")
        return value

    def string_map(self, data: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        raw = self.mapping(data, key, path)
        out: dict[str, str] = {}
        for k, v in raw.items():
            if isinstance(v, bool) or v is None:
                raise self.fail(f"{path}.{k}", f"must be a string, not {v!r}")
            out[str(k)] = v if isinstance(v, str) else str(v)
        return out

    def time(self, data: Mapping[str, Any], key: str, path: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        try:
            return parse_time(value)
        except ValueError as exc:
            raise self.fail(path, f"invalid time {value!r}: {exc}") from None

    def resources(self, data: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
        raw = self.mapping(data, key, path)
        out: dict[str, int] = {}
        for name, qty in raw.items():
            try:
                value = resource_value(str(name), qty)
            except QuantityError as exc:
                raise self.fail(f"{path}.{name}", f"invalid quantity {qty!r}: {exc}") from None
            if value < 0:
                raise self.fail(f"{path}.{name}", f"{NEGATIVE}, not {qty}")
            out[str(name)] = value
        return out

    def selector(self, data: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
        raw = data.get(key)
        if raw is None:
            return None
        try:
            return LabelSelector.from_dict(raw)
        except SelectorError as exc:
            raise self.fail(path, str(exc)) from None

    def items(
        self, data: Mapping[str, Any], key: str, path: str
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The elements of a list of objects, each with its own path."""
        out: list[tuple[str, Mapping[str, Any]]] = []
        if data.get(key) is None:
            return out
        for i, item in enumerate(self.seq(data, key, path)):
            if type(item) is not dict and not isinstance(item, Mapping):
                raise self.fail(f"{path}[{i}]", "must be an object")
            out.append((f"{path}[{i}]", item))
        return out
