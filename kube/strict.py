"""Strict decoding of manifests, as kube-apiserver does with ``fieldValidation=Strict``.

Without it a misspelled ``requets:`` or ``priorityClasName:`` is silently dropped and the object
behaves as if the field were absent. The schema of every kind we load lives in
``kube/data/schema.json``, generated from kubernetes-asyncio's models by ``kube.schemagen`` so
that no command imports the client at run time (``validate_document``, ``check_object``).
Also here: reading a manifest file defensively (``read_text``) and the one YAML loader of the
project (``parse_yaml``).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from kube.quantity import canonical_quantity, json_error

__all__ = [
    "MAX_MANIFEST_BYTES",
    "MAX_NODES",
    "AliasRefused",
    "Aliases",
    "Document",
    "DuplicateKey",
    "Duplicates",
    "InvalidYaml",
    "ManifestError",
    "Problems",
    "Timestamps",
    "TooManyValues",
    "Validation",
    "canonicalize_quantities",
    "check_object",
    "decode_json",
    "describe",
    "drop_nulls",
    "known_kinds",
    "load_documents",
    "model_fields",
    "model_for",
    "parse_validation",
    "parse_yaml",
    "quantity_error",
    "read_text",
    "strict_message",
    "validate_document",
]

Validation = Literal["strict", "warn", "ignore"]

# A state or cluster file larger than this is a mistake (kube-apiserver takes 3 MiB a request).
MAX_MANIFEST_BYTES: Final = 32 * 1024 * 1024
# Containers visited per document: YAML aliases can expand a small file exponentially.
MAX_NODES: Final = 1_000_000

_SCHEMA_PATH: Final = Path(__file__).with_name("data") / "schema.json"


class ManifestError(ValueError):
    """A manifest that cannot be loaded: what is wrong, and where."""

    def __init__(
        self,
        detail: str,
        *,
        source: str = "",
        document: int = 0,
        item: str = "",
        obj: str = "",
    ) -> None:
        self.detail = detail
        self.source = source
        self.document = document
        self.item = item
        self.obj = obj
        parts = [source] if source else []
        if document:
            parts.append(f"document {document}" + (f" {item}" if item else ""))
        if obj:
            parts.append(obj)
        parts.append(detail)
        super().__init__(": ".join(parts))


def parse_validation(value: str | bool) -> Validation:
    """kubectl's ``--validate`` values: strict|warn|ignore, true = strict, false = ignore.

    ``strict`` fails on unknown or duplicate fields, ``warn`` reports them and goes on,
    ``ignore`` drops them silently — the opt-out for manifests written for a newer Kubernetes.
    Wrong types and unknown kinds fail at every level, as they do on the server."""
    text = str(value).lower()
    if text in ("strict", "true"):
        return "strict"
    if text == "warn":
        return "warn"
    if text in ("ignore", "false"):
        return "ignore"
    raise ValueError(
        f'invalid - validate option "{value}"; must be one of: strict (or true), warn, '
        "ignore (or false)"
    )


# --- reading ---------------------------------------------------------------------------------


def read_text(path: str | Path, *, limit: int = MAX_MANIFEST_BYTES) -> str:
    """A manifest file's text, or a ``ManifestError`` saying in one line why not (too large,
    binary, not UTF-8)."""
    name = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise ManifestError("is a directory, not a file", source=name) from None
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", source=name) from None
    if len(data) > limit:
        raise ManifestError(f"larger than {limit // (1024 * 1024)} MiB", source=name)
    if b"\x00" in data:
        raise ManifestError("binary file (contains NUL bytes), not YAML or JSON", source=name)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", source=name
        ) from None


# --- YAML ------------------------------------------------------------------------------------
# One loader for every YAML the project reads, configured by its caller: a key given twice is
# recorded (manifests: kubectl's --validate level decides) or refused (the agent's configuration,
# kubeconfig files), and aliases are bounded (a document may not expand to more than
# ``max_values`` containers) or refused outright.

Duplicates = Literal["record", "refuse"]
Aliases = Literal["bound", "refuse"]
# "strings": timestamps stay text, as sigs.k8s.io/yaml's YAML-to-JSON conversion leaves them;
# "dates": PyYAML's own reading (a date that does not exist is then invalid YAML).
Timestamps = Literal["strings", "dates"]

_MERGE: Final = "tag:yaml.org,2002:merge"


class InvalidYaml(ManifestError):
    """Text that is not YAML (or holds a scalar Python cannot hold): ``problem`` says where."""

    def __init__(self, problem: str, *, source: str = "", document: int = 0) -> None:
        self.problem = problem
        super().__init__(f"invalid YAML: {problem}", source=source, document=document)


class DuplicateKey(ManifestError):
    """A key given twice in one mapping, refused. ``path`` leads to the key (keys as text, list
    indices as ints), ``lines`` are the 1-based lines of its first and its second occurrence."""

    def __init__(
        self,
        path: tuple[str | int, ...],
        lines: tuple[int, int],
        *,
        source: str = "",
        document: int = 0,
    ) -> None:
        self.path = path
        self.lines = lines
        super().__init__(
            f'duplicate key "{self.dotted}" ({self.where})', source=source, document=document
        )

    @property
    def dotted(self) -> str:
        """``spec.containers[0].name``: the path as a field path."""
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out

    @property
    def where(self) -> str:
        """``line 3`` or ``lines 3 and 9``."""
        first, second = self.lines
        return f"line {second}" if first == second else f"lines {first} and {second}"


class AliasRefused(ManifestError):
    """An alias (``*anchor``) where aliases are refused; ``line`` is 1-based."""

    def __init__(self, anchor: str, line: int, *, source: str = "", document: int = 0) -> None:
        self.anchor = anchor
        self.line = line
        super().__init__(
            f"line {line}: YAML aliases (*{anchor}) are not allowed",
            source=source,
            document=document,
        )


class TooManyValues(ManifestError):
    """A document that aliases expand to more than ``limit`` mappings and lists."""

    def __init__(self, limit: int, *, source: str = "", document: int = 0) -> None:
        self.limit = limit
        super().__init__(
            f"more than {limit} nested values (YAML alias expansion?)",
            source=source,
            document=document,
        )


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the duplicate keys and the aliases its caller asked for."""

    def __init__(
        self,
        stream: str,
        *,
        source: str,
        duplicates: Duplicates,
        aliases: Aliases,
        max_values: int,
    ) -> None:
        super().__init__(stream)
        self.source = source
        self.duplicate_keys = duplicates
        self.aliases = aliases
        self.max_values = max_values
        self.document = 0
        # id(dict) → (dict, duplicate keys); the dict is kept so its id stays unique.
        self.duplicates: dict[int, tuple[dict[Any, Any], list[str]]] = {}
        self._duplicates_of: dict[int, list[str]] = {}  # id(mapping node) → its duplicate keys

    def compose_document(self) -> yaml.Node | None:
        self.document += 1
        node: yaml.Node | None = super().compose_document()
        if node is not None and self.aliases == "bound":
            self._bound(node)
        return node

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.aliases == "refuse" and self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise AliasRefused(
                str(event.anchor),
                event.start_mark.line + 1,
                source=self.source,
                document=self.document,
            )
        return super().compose_node(parent, index)

    def construct_document(self, node: yaml.Node) -> Any:
        self._duplicates_of.clear()
        for mapping, path, key, lines in self._duplicate_keys(node):
            if self.duplicate_keys == "refuse":
                raise DuplicateKey(
                    (*path, str(key)), lines, source=self.source, document=self.document
                )
            self._duplicates_of.setdefault(id(mapping), []).append(str(key))
        return super().construct_document(node)

    def _bound(self, root: yaml.Node) -> None:
        if _expands_beyond(root, self.max_values):
            raise TooManyValues(self.max_values, source=self.source, document=self.document)

    def _duplicate_keys(
        self, root: yaml.Node
    ) -> Iterator[tuple[yaml.MappingNode, tuple[str | int, ...], Any, tuple[int, int]]]:
        """Every key given twice in a mapping of the document, outermost mappings first: the
        mapping, its path, the key and the lines of both. Keys are compared as the values
        they load as (``1`` and ``0x1`` are one key, ``"1"`` and ``1`` are two); a key that
        ``<<`` merges in is overridden, not repeated."""
        walked: set[int] = set()
        todo: deque[tuple[yaml.Node, tuple[str | int, ...]]] = deque([(root, ())])
        while todo:
            node, path = todo.popleft()
            if id(node) in walked:  # an alias of a node already walked
                continue
            walked.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                todo.extend((item, (*path, i)) for i, item in enumerate(node.value))
            if not isinstance(node, yaml.MappingNode):
                continue
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:
                    todo.append((value_node, path))
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a complex key: construction refuses it with its reason
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:
                    continue
                if first is None:
                    seen[key] = line
                else:
                    yield node, path, key, (first, line)
                todo.append((value_node, (*path, str(key))))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _expands_beyond(root: yaml.Node, limit: int) -> bool:
    """Whether the document, its aliases expanded, holds more than ``limit`` mappings and
    lists; counted once a node (an alias adds its anchor's count), so nothing is expanded."""
    sizes: dict[int, int] = {}
    ancestors: set[int] = set()
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, children_done = todo.pop()
        if not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            continue
        key = id(node)
        if children_done:
            ancestors.discard(key)
            size = 1 + sum(sizes.get(id(child), 0) for child in _children(node))
            if size > limit:
                return True
            sizes[key] = size
        elif key in ancestors:  # an alias inside its own anchor: no end to it
            return True
        elif key not in sizes:
            ancestors.add(key)
            todo.append((node, True))
            todo.extend((child, False) for child in _children(node))
    return False


class _JsonLikeLoader(_Loader):
    """Timestamps stay strings, as the YAML-to-JSON conversion of ``sigs.k8s.io/yaml`` leaves
    them."""


_JsonLikeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    data.update(loader.construct_mapping(node))
    duplicates = loader._duplicates_of.get(id(node))
    if duplicates:
        loader.duplicates[id(data)] = (data, duplicates)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def parse_yaml(
    text: str,
    *,
    source: str = "",
    duplicates: Duplicates = "record",
    aliases: Aliases = "bound",
    max_values: int = MAX_NODES,
    timestamps: Timestamps = "strings",
) -> tuple[list[Any], dict[int, tuple[dict[Any, Any], list[str]]]]:
    """The documents of a YAML stream (``None`` for empty ones) and the keys given twice in
    them (by ``id`` of the dict holding them; none when they are refused).

    ``duplicates="refuse"`` raises ``DuplicateKey`` for the first, outermost first;
    ``aliases="bound"`` raises ``TooManyValues`` for a document that expands to more than
    ``max_values`` mappings and lists, ``"refuse"`` raises ``AliasRefused`` for any alias.
    ``InvalidYaml`` for anything else that does not load.

    The project's one YAML loader: timestamps stay strings, as the YAML-to-JSON conversion of
    ``sigs.k8s.io/yaml`` keeps them; the caller decides whether a key given twice is recorded
    (manifests, for the ``--validate`` level) or refused with both lines (the agent's
    configuration, kubeconfig files), and whether aliases are bounded or refused.
    """
    raw: list[Any] = []
    loader: _Loader | None = None
    cls = _JsonLikeLoader if timestamps == "strings" else _Loader
    try:
        loader = cls(
            text,
            source=source,
            duplicates=duplicates,
            aliases=aliases,
            max_values=max_values,
        )
        while loader.check_data():  # type: ignore[no-untyped-call]
            raw.append(loader.get_data())
    except ManifestError:
        raise
    except yaml.YAMLError as exc:
        raise InvalidYaml(_yaml_problem(exc), source=source, document=len(raw) + 1) from None
    except RecursionError:
        raise InvalidYaml("nested too deeply", source=source, document=len(raw) + 1) from None
    except ValueError as exc:  # a scalar Python cannot hold: 2024-02-30, an int of 5000 digits
        raise InvalidYaml(str(exc), source=source, document=len(raw) + 1) from None
    finally:
        if loader is not None:
            loader.dispose()
    return raw, loader.duplicates


@dataclass(frozen=True, slots=True)
class Document:
    """One manifest of a file: ``document`` counts from 1; ``item`` is ``items[i]`` in a List."""

    manifest: dict[str, Any]
    source: str = ""
    document: int = 1
    item: str = ""
    duplicates: Mapping[int, tuple[dict[Any, Any], list[str]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def obj(self) -> str:
        return describe(self.manifest)

    def error(self, detail: str) -> ManifestError:
        return ManifestError(
            detail, source=self.source, document=self.document, item=self.item, obj=self.obj
        )


def describe(manifest: Mapping[str, Any]) -> str:
    """``Pod "shop/web"`` — as much of kind, namespace and name as the manifest has."""
    kind = manifest.get("kind")
    kind = kind if isinstance(kind, str) and kind else "object"
    meta = manifest.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return kind if kind != "object" else ""
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return f'{kind} "{ns}/{name}"' if isinstance(ns, str) and ns else f'{kind} "{name}"'


def load_documents(text: str, *, source: str = "") -> list[Document]:
    """The manifests of a YAML (or JSON) stream, ``kind: List`` flattened, empty ones skipped."""
    raw, duplicates = parse_yaml(text, source=source)
    out: list[Document] = []

    def add(doc: object, n: int, item: str) -> None:
        if not isinstance(doc, dict):
            what = "a list" if isinstance(doc, list) else f"a {type(doc).__name__}"
            raise ManifestError(
                f"a manifest must be a mapping, not {what}", source=source, document=n, item=item
            )
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise ManifestError("items: must be a list", source=source, document=n, item=item)
            for i, element in enumerate(items):
                add(element, n, f"{item}items[{i}]")
            return
        out.append(Document(doc, source, n, item, duplicates))

    for n, doc in enumerate(raw, 1):
        if doc is not None:
            add(doc, n, "")
    return out


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.reader.ReaderError):
        return f"character #x{exc.character:04x} at offset {exc.position}: {exc.reason}"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "syntax error"
        if mark is not None:
            return f"line {mark.line + 1}, column {mark.column + 1}: {what}"
        return what
    return str(exc).splitlines()[0]


def decode_json(text: str | bytes) -> tuple[Any, dict[int, tuple[dict[Any, Any], list[str]]]]:
    """A JSON body and its duplicate keys (``json.loads`` keeps the last value silently)."""
    duplicates: dict[int, tuple[dict[Any, Any], list[str]]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        data = dict(items)  # the last value wins, at the first key's place, as json.loads does
        if len(data) != len(items):  # a key came twice: name each repeat, in document order
            seen: set[str] = set()
            dups: list[str] = []
            for k, _ in items:
                if k in seen:
                    dups.append(k)
                seen.add(k)
            duplicates[id(data)] = (data, dups)
        return data

    return json.loads(text, object_pairs_hook=pairs), duplicates


# --- checking --------------------------------------------------------------------------------


@cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


def known_kinds() -> frozenset[tuple[str, str]]:
    """(apiVersion, kind) of every kind the schema covers."""
    return frozenset((k.rsplit("/", 1)[0], k.rsplit("/", 1)[1]) for k in _schema()["kinds"])


@dataclass(slots=True)
class Problems:
    """What a strict decode finds: a type error fails at every level, the rest under Strict."""

    type_error: str | None = None
    # The same error as kube-apiserver's decoder words it: Go's field path has no list
    # indices and no map keys (``Container.spec.containers.args``); None for a quantity or
    # a time, whose own parsers answer.
    decode_error: str | None = None
    strict: list[str] = field(default_factory=list)
    # (mapping, key) of each unknown field, for a server that drops them (Warn, Ignore).
    unknown: list[tuple[dict[Any, Any], Any]] = field(default_factory=list)

    def drop_unknown(self) -> None:
        """Remove the unknown fields from the checked object, as decoding into a struct does."""
        for parent, key in self.unknown:
            parent.pop(key, None)


_LIST = re.compile(r"list\[(.+)\]")
_DICT = re.compile(r"dict\(str, (.+)\)")
_INDEX = re.compile(r"\[\d+\]")
# Types whose Go ``UnmarshalJSON`` parses any JSON value itself, with errors of its own
# (``quantities must match ...``, ``parsing time ...``): the server's decoder leaves them to it.
_OWN_DECODERS: Final = frozenset({"quantity", "datetime", "date"})
_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:alpha\d+|beta\d+)?(?=[A-Z])")


@cache
def _element(type_name: str) -> tuple[str, str] | None:
    """("list", item type) or ("dict", value type) for a container type, None otherwise: the
    schema names a few hundred types, and every walk asks about each of them again."""
    if m := _LIST.fullmatch(type_name):
        return "list", m[1]
    if m := _DICT.fullmatch(type_name):
        return "dict", m[1]
    return None


@cache
def _struct(type_name: str) -> str:
    """The Go struct name of a schema type, as the decoder's messages name it."""
    return _PREFIX.sub("", type_name)


_GO_SCALARS: Final = {
    "str": "string",
    "int": "int",
    "float": "float64",
    "bool": "bool",
    "datetime": "v1.Time",
    "date": "v1.Time",
    "quantity": "resource.Quantity",
}


def _go_type(type_name: str) -> str:
    element = _element(type_name)
    if element is not None:
        container, inner = element
        return ("[]" if container == "list" else "map[string]") + _go_type(inner)
    if type_name in _GO_SCALARS:
        return _GO_SCALARS[type_name]
    return "v1." + _struct(type_name)


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# The scalar types whose values pass ``_Walk.value`` by their Python type alone (bool is not
# int here: ``type(True) is int`` is false), checked inline for the most common fields.
_PLAIN: Final[Mapping[str, type]] = {
    "str": str,
    "int": int,
    "bool": bool,
    "float": float,
    "quantity": str,
    "datetime": str,
    "date": str,
}


class _Walk:
    __slots__ = ("duplicates", "fold_case", "nodes", "problems", "types")

    def __init__(
        self,
        duplicates: Mapping[int, tuple[dict[Any, Any], list[str]]],
        *,
        fold_case: bool,
        extra_types: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        types: Mapping[str, Mapping[str, str]] = _schema()["types"]
        self.types = {**types, **extra_types} if extra_types else types
        self.duplicates = duplicates
        self.problems = Problems()
        self.nodes = 0
        self.fold_case = fold_case

    def _count(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ManifestError(f"more than {MAX_NODES} nested values (YAML alias expansion?)")

    def _dups(self, value: Mapping[Any, Any], path: str) -> None:
        entry = self.duplicates.get(id(value))
        if entry is not None and entry[0] is value:
            for key in entry[1]:
                self.problems.strict.append(f'duplicate field "{_join(path, key)}"')

    def type_error(
        self, value: object, struct: str, path: str, type_name: str, go_path: str | None
    ) -> None:
        if self.problems.type_error is None:
            kind = _json_kind(value)
            if kind == "number" and type_name == "int":
                kind = f"number {value}"
            head = f"json: cannot unmarshal {kind} into Go struct field {struct}."
            tail = f" of type {_go_type(type_name)}"
            self.problems.type_error = head + path + tail
            if type_name not in _OWN_DECODERS:
                go = _INDEX.sub("", path if go_path is None else go_path)
                self.problems.decode_error = head + go + tail

    def any(self, value: object, path: str) -> None:
        """Free-form JSON (``object``): only duplicates and size are checked."""
        if isinstance(value, Mapping):
            self._count()
            self._dups(value, path)
            for k, v in value.items():
                self.any(v, _join(path, str(k)))
        elif isinstance(value, list):
            self._count()
            for i, v in enumerate(value):
                self.any(v, f"{path}[{i}]")

    def value(
        self, value: object, type_name: str, struct: str, path: str, go_path: str | None = None
    ) -> None:
        """Check ``value`` against ``type_name``; ``go_path`` is the path Go's decoder names
        when it differs (a map's value: Go names the map)."""
        if value is None or type_name == "object":
            self.any(value, path)
            return
        ok = True
        if type_name == "str":
            ok = isinstance(value, str)
        elif type_name == "int":
            ok = not isinstance(value, bool) and (
                isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            )
        elif type_name == "float":
            ok = not isinstance(value, bool) and isinstance(value, int | float)
        elif type_name == "bool":
            ok = isinstance(value, bool)
        elif type_name in ("datetime", "date"):
            ok = isinstance(value, str) or hasattr(value, "isoformat")
        elif type_name == "quantity":
            ok = not isinstance(value, bool) and isinstance(value, str | int | float)
        elif element := _element(type_name):
            container, inner = element
            if container == "list":
                if isinstance(value, list):
                    self._count()
                    if inner in self.types:  # objects: straight to their model
                        for i, item in enumerate(value):
                            if type(item) is dict:
                                self.model(item, inner, f"{path}[{i}]")
                            else:
                                self.value(item, inner, struct, f"{path}[{i}]")
                        return
                    plain = _PLAIN.get(inner)
                    for i, item in enumerate(value):
                        if type(item) is not plain:  # a plain scalar of its type is fine
                            self.value(item, inner, struct, f"{path}[{i}]")
                    return
            elif type(value) is dict or isinstance(value, Mapping):
                self._count()
                self._dups(value, path)
                for k, item in value.items():
                    self.value(item, inner, struct, _join(path, str(k)), path)
                return
            ok = False
        elif type(value) is dict or isinstance(value, Mapping):  # the ABC check is slow
            self.model(value, type_name, path)
            return
        else:
            ok = False
        if not ok:
            self.type_error(value, struct, path, type_name, go_path)

    def model(self, value: Mapping[Any, Any], type_name: str, path: str) -> None:
        # Every document a server decodes comes through here: _count and _dups inline.
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self._count()
        if self.duplicates:
            self._dups(value, path)
        fields = self.types[type_name]
        struct = _struct(type_name)
        if self.fold_case and isinstance(value, dict):
            self._fold(value, fields)
        plain = _PLAIN.get
        for key, item in value.items():
            field_type = fields.get(key) if type(key) is str else None
            if field_type is None:
                sub = _join(path, str(key))
                self.problems.strict.append(f'unknown field "{sub}"')
                if isinstance(value, dict):
                    self.problems.unknown.append((value, key))
                self.any(item, sub)
            elif type(item) is not plain(field_type):  # a plain scalar of its type is fine
                self.value(item, field_type, struct, f"{path}.{key}" if path else key)

    @staticmethod
    def _fold(value: dict[Any, Any], fields: Mapping[str, str]) -> None:
        """Rename keys that name a field only case-insensitively (``encoding/json``)."""
        renames = []
        for key in value:
            if isinstance(key, str) and key not in fields:
                for name in fields:
                    if name.lower() == key.lower():
                        renames.append((key, name))
                        break
        for key, name in renames:
            item = value.pop(key)
            value.setdefault(name, item)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def model_fields(type_name: str) -> Mapping[str, str] | None:
    """The fields of a schema type (JSON key → type: ``str``, ``list[V1Container]``,
    ``dict(str, str)``, a model name, ...), or None for a type the schema does not hold."""
    found: dict[str, str] | None = _schema()["types"].get(type_name)
    return found


def model_for(api_version: object, kind: object) -> str | None:
    """The schema type of a kind, or None when the schema does not cover it."""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    found: str | None = _schema()["kinds"].get(f"{api_version}/{kind}")
    return found


def check_object(
    obj: Mapping[str, Any],
    *,
    model: str | None = None,
    duplicates: Mapping[int, tuple[dict[Any, Any], list[str]]] | None = None,
    fold_case: bool = False,
    extra_types: Mapping[str, Mapping[str, str]] | None = None,
) -> Problems:
    """Walk ``obj`` against its kind's schema (``model`` or found from apiVersion/kind).

    ``extra_types`` adds types the generated schema does not hold (a component's own
    configuration, as ``scheduler.config`` has: KubeSchedulerConfiguration), in the schema's
    form: type name -> field -> type; they may refer to the schema's own types.

    ``fold_case`` decodes as Go's ``encoding/json`` (``sigs.k8s.io/yaml``) does rather than
    kube-apiserver: a key that names a field only case-insensitively (``NodeTaintsPolicy``)
    is that field, and is renamed in ``obj``.

    Raises ``ManifestError`` for a kind the schema does not cover or a hostile document.
    """
    if model is None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(kind, str) or not kind:
            raise ManifestError("Object 'Kind' is missing")
        if not isinstance(api_version, str) or not api_version:
            raise ManifestError("Object 'apiVersion' is missing")
        model = model_for(api_version, kind)
        if model is None:
            raise ManifestError(f'no matches for kind "{kind}" in version "{api_version}"')
    walk = _Walk(duplicates or {}, fold_case=fold_case, extra_types=extra_types)
    try:
        walk.model(obj, model, "")
    except RecursionError:
        raise ManifestError("nested too deeply") from None
    return walk.problems


@cache
def _inner(type_name: str) -> str:
    while element := _element(type_name):
        type_name = element[1]
    return type_name


@cache
def _quantity_models() -> frozenset[str]:
    """The schema types with a ``resource.Quantity`` somewhere below them (a fixed point: the
    schema's types may refer to each other in circles)."""
    types: dict[str, dict[str, str]] = _schema()["types"]
    holding: set[str] = set()
    changed = True
    while changed:
        changed = False
        for model, fields in types.items():
            if model not in holding and any(
                _inner(t) == "quantity" or _inner(t) in holding for t in fields.values()
            ):
                holding.add(model)
                changed = True
    return frozenset(holding)


def _quantity_error(value: object, type_name: str) -> str | None:
    if type_name == "quantity":
        return json_error(value)
    element = _element(type_name)
    if element and element[0] == "list" and isinstance(value, list):
        return next((e for v in value if (e := _quantity_error(v, element[1])) is not None), None)
    if element and element[0] == "dict" and isinstance(value, Mapping):
        return next(
            (e for v in value.values() if (e := _quantity_error(v, element[1])) is not None),
            None,
        )
    if isinstance(value, Mapping) and type_name in _quantity_models():
        for key, field_type in _quantity_fields(value, type_name):
            err = _quantity_error(value[key], field_type)
            if err is not None:
                return err
    return None


def _quantity_fields(value: Mapping[Any, Any], type_name: str) -> list[tuple[str, str]]:
    """(key, field type) of the fields of ``value``, a ``type_name``, that hold a quantity at or
    somewhere below them, in document order."""
    fields = _quantity_holding_fields(type_name)
    return [
        (key, field_type)
        for key in value
        if isinstance(key, str) and (field_type := fields.get(key)) is not None
    ]


@cache
def _quantity_holding_fields(type_name: str) -> Mapping[str, str]:
    """The fields of ``type_name`` (name → type) that hold a quantity at or below them."""
    fields: dict[str, str] = _schema()["types"][type_name]
    holding = _quantity_models()
    return {
        key: field_type
        for key, field_type in fields.items()
        if _inner(field_type) == "quantity" or _inner(field_type) in holding
    }


def canonicalize_quantities(obj: dict[str, Any], model: str) -> None:
    """Every ``resource.Quantity`` of ``obj`` rewritten in place as kube-apiserver stores it:
    ``kube.quantity.canonical_quantity`` (``cpu: 1000m`` is ``"1"``, ``memory: 0.5Gi`` is
    ``"512Mi"``, ``null`` is ``"0"``). The first that does not decode, in document order,
    raises ``QuantityError`` with ``quantity_error``'s message (``obj`` is then partly
    rewritten)."""
    _canonicalize(obj, model)


def _canonicalize(value: Any, type_name: str) -> Any:
    if type_name == "quantity":
        return canonical_quantity(value)
    element = _element(type_name)
    if element and element[0] == "list" and isinstance(value, list):
        value[:] = [_canonicalize(v, element[1]) for v in value]
    elif element and element[0] == "dict" and isinstance(value, dict):
        for key, item in value.items():
            value[key] = _canonicalize(item, element[1])
    elif isinstance(value, dict) and type_name in _quantity_models():
        for key, field_type in _quantity_fields(value, type_name):
            value[key] = _canonicalize(value[key], field_type)
    return value


def quantity_error(obj: Mapping[str, Any], model: str) -> str | None:
    """The first ``resource.Quantity`` of ``obj`` (a ``model`` of the schema) that Go's decoder
    refuses, as ``UnmarshalJSON`` words it (``kube.quantity.json_error``), in document order;
    None when every quantity decodes. Only the fields that can hold a quantity are visited."""
    return _quantity_error(obj, model)


def drop_nulls(value: Any) -> Any:
    """A copy without ``null`` mapping values: decoding ``null`` into a Go field leaves it
    unset, so ``metadata: null`` or ``spec: null`` mean the field is absent."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def strict_message(problems: list[str]) -> str:
    """kube-apiserver's wording for the strict problems of one object."""
    return "strict decoding error: " + ", ".join(problems)


def validate_document(
    doc: Document, *, validation: Validation = "strict", drop_unknown: bool = False
) -> list[str]:
    """Check one document; raise ``ManifestError`` or return the warnings to show (``warn``).

    With ``fieldValidation=Strict`` (kubectl's default since 1.27, ``--validate=strict``) a
    field the struct does not have, or a key given twice, fails the request with ``strict
    decoding error: unknown field "spec.foo"``, and a value of the wrong JSON type fails it
    with Go's ``json: cannot unmarshal …`` message whatever the validation level. Problems are
    worded like kube-apiserver's and placed: file, document, object and field path (list
    indices included, which Go's messages omit).

    With ``drop_unknown``, unknown fields of an accepted document are removed from its
    manifest, as the API server does when decoding.
    """
    try:
        problems = check_object(doc.manifest, duplicates=doc.duplicates)
    except ManifestError as exc:
        raise doc.error(exc.detail) from None
    if problems.type_error is not None:
        raise doc.error(problems.type_error)
    if problems.strict and validation == "strict":
        raise doc.error(strict_message(problems.strict))
    if drop_unknown:
        problems.drop_unknown()
    if not problems.strict or validation == "ignore":
        return []
    prefix = str(doc.error(""))[:-2]
    return [f"{prefix}: {p}" for p in problems.strict]
