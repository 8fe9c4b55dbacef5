"""The fault file: typed, validated at load time (``kubesim.faults.injection`` acts on it).

A bad file is reported with the file, the document and the field, so ``kubesim serve`` can
exit 2 before serving. ``FaultSet`` shows the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from kubesim.core.errors import Cause, StatusError

__all__ = [
    "CallRange",
    "Fault",
    "FaultError",
    "FaultMatch",
    "FaultSet",
    "PodFault",
    "RecreateAfterDelete",
    "TimelineStep",
    "load_faults",
    "parse_faults",
]

VERBS: Final = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)


class FaultError(ValueError):
    """A fault file that cannot be used; names the file, document and field."""

    def __init__(self, source: str, document: int, field_path: str, detail: str) -> None:
        self.source = source
        self.document = document
        self.field = field_path
        self.detail = detail
        super().__init__(f"{source}: document {document}: {field_path}: {detail}")


@dataclass(frozen=True, slots=True)
class CallRange:
    """1-based inclusive range of call numbers; ``last`` None = open-ended."""

    first: int = 1
    last: int | None = None

    def contains(self, n: int) -> bool:
        return n >= self.first and (self.last is None or n <= self.last)


@dataclass(frozen=True, slots=True)
class FaultMatch:
    verb: str | None = None
    resource: str | None = None
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None
    calls: CallRange = CallRange()


@dataclass(frozen=True, slots=True)
class Fault:
    match: FaultMatch
    respond: StatusError | None = None
    delay: float = 0.0
    drop: bool = False
    silent: bool = False


@dataclass(frozen=True, slots=True)
class RecreateAfterDelete:
    uid: str | None = None
    node: str | None = None
    after: float = 0.0


@dataclass(frozen=True, slots=True)
class TimelineStep:
    after: float
    set: Mapping[str, Any] = field(default_factory=dict)
    delete: bool = False


@dataclass(frozen=True, slots=True)
class PodFault:
    namespace: str
    name: str
    deletion_delay: float | None = None
    never_delete: bool = False
    recreate_after_delete: RecreateAfterDelete | None = None
    timeline: tuple[TimelineStep, ...] = ()


@dataclass(slots=True)
class FaultSet:
    """A fault file's content. Schema (YAML or the same mapping in process)::

        faults:
        - match: {verb, resource, subresource, namespace, name, calls: "1-3" | "2-" | "all" | 3}
          respond: {code, reason, message, causes: [{reason, message, field}], retryAfterSeconds}
          delay: 2.5          # seconds before the normal answer
          drop: true          # close the connection without an answer
          silent: true        # answer 200, then send nothing while holding the connection open
        pods:
        - ref: namespace/name
          deletionDelay: 2.0
          neverDelete: false
          recreateAfterDelete: {uid, node, after}
          timeline: [{after: 1.0, set: {status.phase: Failed}}, {after: 2.0, delete: true}]
        latency: 0.02         # added to every request

    ``calls`` counts the requests of that verb on that object, 1-based.
    """

    faults: list[Fault] = field(default_factory=list)
    pods: list[PodFault] = field(default_factory=list)
    latency: float = 0.0

    def extend(self, other: FaultSet) -> None:
        self.faults.extend(other.faults)
        self.pods.extend(other.pods)
        if other.latency:
            self.latency = other.latency


class _P:
    def __init__(self, source: str, document: int) -> None:
        self.source = source
        self.document = document

    def fail(self, path: str, detail: str) -> FaultError:
        return FaultError(self.source, self.document, path, detail)

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping, not {type(value).__name__}")
        return value

    def number(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(path, f"must be a number of seconds, not {value!r}")
        if value < 0:
            raise self.fail(path, f"must not be negative, not {value!r}")
        return float(value)

    def string(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"must be a string, not {value!r}")
        return value

    def known(self, data: Mapping[str, Any], allowed: set[str], path: str) -> None:
        for key in data:
            if key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                raise self.fail(where, f"unknown field; known: {', '.join(sorted(allowed))}")


def _calls(p: _P, value: Any, path: str) -> CallRange:
    if value is None or value == "all":
        return CallRange()
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise p.fail(path, f"call numbers start at 1, not {value}")
        return CallRange(value, value)
    if not isinstance(value, str):
        raise p.fail(path, f'must be "N", "N-M", "N-" or "all", not {value!r}')
    text = value.strip()
    try:
        if "-" in text:
            lo, hi = text.split("-", 1)
            first = int(lo)
            last = int(hi) if hi.strip() else None
        else:
            first = last = int(text)
    except ValueError:
        raise p.fail(path, f'must be "N", "N-M", "N-" or "all", not {value!r}') from None
    if first < 1 or (last is not None and last < first):
        raise p.fail(path, f"invalid call range {value!r}")
    return CallRange(first, last)


def _respond(p: _P, data: Mapping[str, Any], path: str) -> StatusError:
    p.known(data, {"code", "reason", "message", "causes", "retryAfterSeconds"}, path)
    code = data.get("code")
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        raise p.fail(f"{path}.code", f"must be an HTTP status code, not {code!r}")
    causes = []
    raw_causes = data.get("causes") or []
    if not isinstance(raw_causes, list):
        raise p.fail(f"{path}.causes", "must be a list")
    for i, c in enumerate(raw_causes):
        cm = p.mapping(c, f"{path}.causes[{i}]")
        p.known(cm, {"reason", "message", "field"}, f"{path}.causes[{i}]")
        causes.append(
            Cause(str(cm.get("reason", "")), str(cm.get("message", "")), str(cm.get("field", "")))
        )
    retry = data.get("retryAfterSeconds", 0)
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
        raise p.fail(f"{path}.retryAfterSeconds", f"must be a non-negative integer, not {retry!r}")
    from kubesim.core.errors import REASON_FOR_CODE

    return StatusError(
        code,
        str(data.get("reason", REASON_FOR_CODE.get(code, ""))),
        str(data.get("message", "")),
        causes=tuple(causes),
        retry_after_seconds=retry,
    )


def _fault(p: _P, data: Any, path: str) -> Fault:
    d = p.mapping(data, path)
    p.known(d, {"match", "respond", "delay", "drop", "silent"}, path)
    m = p.mapping(d.get("match"), f"{path}.match")
    p.known(m, {"verb", "resource", "subresource", "namespace", "name", "calls"}, f"{path}.match")
    verb = m.get("verb")
    if verb is not None and verb not in VERBS:
        raise p.fail(
            f"{path}.match.verb", f"unknown verb {verb!r}; known: {', '.join(sorted(VERBS))}"
        )
    strs = {}
    for key in ("resource", "subresource", "namespace", "name"):
        if m.get(key) is not None:
            strs[key] = p.string(m[key], f"{path}.match.{key}")
    match = FaultMatch(verb=verb, calls=_calls(p, m.get("calls"), f"{path}.match.calls"), **strs)
    respond = None
    if d.get("respond") is not None:
        respond = _respond(p, p.mapping(d["respond"], f"{path}.respond"), f"{path}.respond")
    delay = p.number(d["delay"], f"{path}.delay") if d.get("delay") is not None else 0.0
    drop = d.get("drop", False)
    if not isinstance(drop, bool):
        raise p.fail(f"{path}.drop", f"must be true or false, not {drop!r}")
    silent = d.get("silent", False)
    if not isinstance(silent, bool):
        raise p.fail(f"{path}.silent", f"must be true or false, not {silent!r}")
    if respond is None and not delay and not drop and not silent:
        raise p.fail(path, "a fault needs respond, delay, drop or silent")
    return Fault(match, respond, delay, drop, silent)


def _pod(p: _P, data: Any, path: str) -> PodFault:
    d = p.mapping(data, path)
    p.known(d, {"ref", "deletionDelay", "neverDelete", "recreateAfterDelete", "timeline"}, path)
    ref = p.string(d.get("ref"), f"{path}.ref")
    ns, _, name = ref.rpartition("/")
    if not name:
        raise p.fail(f"{path}.ref", f"must be namespace/name, not {ref!r}")
    delay = None
    if d.get("deletionDelay") is not None:
        delay = p.number(d["deletionDelay"], f"{path}.deletionDelay")
    never = d.get("neverDelete", False)
    if not isinstance(never, bool):
        raise p.fail(f"{path}.neverDelete", f"must be true or false, not {never!r}")
    recreate = None
    if d.get("recreateAfterDelete") is not None:
        rp = f"{path}.recreateAfterDelete"
        r = p.mapping(d["recreateAfterDelete"], rp)
        p.known(r, {"uid", "node", "after"}, rp)
        recreate = RecreateAfterDelete(
            uid=p.string(r["uid"], f"{rp}.uid") if r.get("uid") is not None else None,
            node=p.string(r["node"], f"{rp}.node") if r.get("node") is not None else None,
            after=p.number(r.get("after", 0.0), f"{rp}.after"),
        )
    steps = []
    raw = d.get("timeline") or []
    if not isinstance(raw, list):
        raise p.fail(f"{path}.timeline", "must be a list")
    for i, s in enumerate(raw):
        sp = f"{path}.timeline[{i}]"
        sm = p.mapping(s, sp)
        p.known(sm, {"after", "set", "delete"}, sp)
        if "after" not in sm:
            raise p.fail(f"{sp}.after", "Required value")
        delete = sm.get("delete", False)
        if not isinstance(delete, bool):
            raise p.fail(f"{sp}.delete", f"must be true or false, not {delete!r}")
        sets = p.mapping(sm.get("set"), f"{sp}.set")
        if not sets and not delete:
            raise p.fail(sp, "a timeline step needs set or delete")
        steps.append(TimelineStep(p.number(sm["after"], f"{sp}.after"), dict(sets), delete))
    return PodFault(ns or "default", name, delay, never, recreate, tuple(steps))


def parse_faults(data: Any, *, source: str = "<faults>", document: int = 1) -> FaultSet:
    p = _P(source, document)
    d = p.mapping(data, "")
    p.known(d, {"faults", "pods", "latency"}, "")
    out = FaultSet()
    for key in ("faults", "pods"):
        items = d.get(key) or []
        if not isinstance(items, list):
            raise p.fail(key, "must be a list")
        for i, item in enumerate(items):
            if key == "faults":
                out.faults.append(_fault(p, item, f"{key}[{i}]"))
            else:
                out.pods.append(_pod(p, item, f"{key}[{i}]"))
    if d.get("latency") is not None:
        out.latency = p.number(d["latency"], "latency")
    return out


def load_faults(path: str | Path) -> FaultSet:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FaultError(source, 0, "", f"cannot read: {exc.strerror}") from None
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise FaultError(source, 0, "", f"invalid YAML: {exc}") from None
    out = FaultSet()
    for n, doc in enumerate(docs, 1):
        if doc is None:
            continue
        out.extend(parse_faults(doc, source=source, document=n))
    return out
