"""Incident timelines (``--timeline-dir``): what a node's signals and pods did around evictions, one
JSON Lines file per incident, which ``examples/plot_timeline.py`` draws (the agent itself never
plots: its image carries no plotting library).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from agent.eviction import Observation, Summary, Threshold, get_threshold_quantity

__all__ = [
    "FORMAT",
    "EvictionMark",
    "HeldMark",
    "Sample",
    "ThresholdLine",
    "Timeline",
    "TimelineError",
    "TimelineRecorder",
    "read_timeline",
    "timeline_files",
]

log = logging.getLogger(__name__)

FORMAT: Final = "eviction-agent-timeline/v1"
SUFFIX: Final = ".timeline.jsonl"
LEAD_IN_SECONDS: Final = 120.0
TAIL_SECONDS: Final = 60.0
MAX_FILE_BYTES: Final = 4 << 20
KEEP_FILES: Final = 16
MAX_PENDING_BYTES: Final = 4 << 20
MAX_LEAD_IN_SYNCS: Final = 600


# --- the records, as the reader gives them back ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThresholdLine:
    signal: str
    kind: str  # hard, soft
    value: int


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    signals: Mapping[str, tuple[int, int]]  # signal → (available, capacity)
    thresholds: tuple[ThresholdLine, ...]
    met: tuple[str, ...]
    pods: Mapping[str, int]  # namespace/name → memory working set bytes


@dataclass(frozen=True, slots=True)
class EvictionMark:
    time: float
    pod: str
    signal: str
    result: str
    reaction_seconds: float | None
    message: str


@dataclass(frozen=True, slots=True)
class HeldMark:
    time: float
    pod: str
    signal: str


@dataclass(slots=True)
class Timeline:
    node: str
    opened: float
    samples: list[Sample] = field(default_factory=list)
    evictions: list[EvictionMark] = field(default_factory=list)
    held: list[HeldMark] = field(default_factory=list)
    closed: float | None = None
    reason: str = ""
    truncated: bool = False


class TimelineError(ValueError):
    """A timeline file that cannot be read: the file, the line and why."""


# --- writing -----------------------------------------------------------------------------------


def thresholds_of(
    thresholds: Iterable[Threshold], observations: Mapping[str, Observation]
) -> list[ThresholdLine]:
    """Each threshold with an operator, resolved against its signal's last capacity."""
    lines = []
    for t in thresholds:
        if not t.operator:
            continue
        seen = observations.get(t.signal)
        value = get_threshold_quantity(t.value, seen.capacity if seen is not None else 0)
        lines.append(ThresholdLine(t.signal, "hard" if t.grace_period == 0 else "soft", value))
    return lines


@dataclass(slots=True)
class _Incident:
    path: Path
    opened: float
    last_active: float
    size: int = 0
    truncated: bool = False


class TimelineRecorder:
    """Keeps the lead-in, opens and closes incidents, queues their lines.

    An operator explains an incident faster from a picture — available memory falling toward each
    threshold, the pods' working sets stacked beneath, each eviction marked with its pod and how
    fast the agent reacted — than from logs or 15-second Prometheus samples, which miss a ramp that
    lasts a second. So the recorder keeps exactly what the syncs saw.

    An incident opens at the first sync that finds a threshold met (or an eviction, or a decision
    held back by the brake) and closes once none has been met and nothing evicted for ``tail``
    seconds (60), or when the agent stops. Its file starts with the ``lead_in`` seconds (120) of
    syncs before it, so the climb that led to it is in the picture. With a timeline directory every
    sync reads every pod's figures, which the agent otherwise does only while a threshold is met.

    The file is ``<node>-<UTC start>.timeline.jsonl``, each line one record with ``type``:
    ``incident`` (first: ``format``, ``node``, ``opened``, ``agent``), ``sample`` (one sync:
    ``time``; ``signals`` — available and capacity per signal; ``thresholds`` — each threshold's
    signal, ``kind`` (hard, soft) and value resolved against the capacity; ``met`` — the signals
    whose thresholds were met; ``pods`` — each pod's memory working set by ``namespace/name``),
    ``eviction`` (``time`` of the request, ``pod``, ``signal``, ``result``, ``reaction_seconds``
    from the first sync that saw the threshold met, ``message``), ``held_back`` (``time``, ``pod``,
    ``signal``), ``truncated`` (samples stopped at the size bound; evictions still follow) and
    ``closed`` (``time``, ``reason``). Times are Unix seconds.

    Bounds, so a node under pressure for hours cannot fill its disk or the agent's memory: an
    incident file stops taking samples at 4 MiB, at most 16 files are kept (the oldest go first),
    the lead-in holds at most 600 syncs, and at most 4 MiB of records wait for a write. Writing
    happens off the sync path (``flush``, which the daemon runs in a thread every second); a failed
    write is logged and the records dropped — never an exception into the loop.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        node: str,
        agent_version: str = "",
        clock: Callable[[], float] = time.time,
        lead_in: float = LEAD_IN_SECONDS,
        tail: float = TAIL_SECONDS,
        max_file_bytes: int = MAX_FILE_BYTES,
        keep: int = KEEP_FILES,
    ) -> None:
        self.directory = Path(directory)
        self.node = node
        self.agent_version = agent_version
        self.clock = clock
        self.lead_in = lead_in
        self.tail = tail
        self.max_file_bytes = max_file_bytes
        self.keep = keep
        # the lead-in: (time, line)
        self._recent: deque[tuple[float, str]] = deque(maxlen=MAX_LEAD_IN_SYNCS)
        self._incident: _Incident | None = None
        self._pending: list[tuple[Path, str]] = []
        self._pending_bytes = 0
        self._dropped = 0
        self._lock = threading.Lock()  # flush runs in a thread
        self._writing = threading.Lock()  # one flush at a time: lines stay in order
        self._last_path: Path | None = None  # may not be written yet when the next one opens

    @property
    def incident(self) -> Path | None:
        return self._incident.path if self._incident is not None else None

    def record_sync(
        self,
        *,
        at: float,
        observations: Mapping[str, Observation],
        thresholds: Sequence[Threshold],
        met: Iterable[str],
        summary: Summary | None,
    ) -> None:
        met_signals = tuple(dict.fromkeys(met))
        sample = {
            "type": "sample",
            "time": round(at, 3),
            "signals": {
                s: {"available": o.available, "capacity": o.capacity}
                for s, o in sorted(observations.items())
            },
            "thresholds": [
                {"signal": t.signal, "kind": t.kind, "value": t.value}
                for t in thresholds_of(thresholds, observations)
            ],
            "met": list(met_signals),
            "pods": _working_sets(summary),
        }
        line = _dump(sample)
        if met_signals:
            self._activate(at)
        if self._incident is None:
            self._recent.append((at, line))
            while self._recent and self._recent[0][0] < at - self.lead_in:
                self._recent.popleft()
            return
        incident = self._incident
        if not incident.truncated and incident.size + len(line) > self.max_file_bytes:
            incident.truncated = True
            self._queue(_dump({"type": "truncated", "time": round(at, 3)}))
        if not incident.truncated:
            self._queue(line)
        if at - incident.last_active >= self.tail:
            self._close(at, f"no threshold met and nothing evicted for {self.tail:g}s")

    def record_eviction(
        self,
        *,
        at: float,
        pod: str,
        signal: str,
        result: str,
        reaction_seconds: float | None,
        message: str,
    ) -> None:
        self._activate(at)
        reaction = None if reaction_seconds is None else round(reaction_seconds, 4)
        self._queue(
            _dump(
                {
                    "type": "eviction",
                    "time": round(at, 3),
                    "pod": pod,
                    "signal": signal,
                    "result": result,
                    "reaction_seconds": reaction,
                    "message": message,
                }
            )
        )

    def record_held_back(self, *, at: float, pod: str, signal: str) -> None:
        self._activate(at)
        record = {"type": "held_back", "time": round(at, 3), "pod": pod, "signal": signal}
        self._queue(_dump(record))

    def close(self, reason: str = "agent stopped") -> None:
        """End the open incident (if any) and write everything."""
        if self._incident is not None:
            self._close(self.clock(), reason)
        self.flush()

    # --- internals -----------------------------------------------------------------------------

    def _activate(self, at: float) -> None:
        if self._incident is None:
            stamp = datetime.fromtimestamp(at, UTC).strftime("%Y%m%dT%H%M%S")
            path = self.directory / f"{self.node}-{stamp}Z{SUFFIX}"
            n = 1
            while path == self._last_path or path.exists():
                n += 1
                path = self.directory / f"{self.node}-{stamp}Z-{n}{SUFFIX}"
            self._incident = _Incident(path, opened=at, last_active=at)
            self._last_path = path
            head = {
                "type": "incident",
                "format": FORMAT,
                "node": self.node,
                "opened": round(at, 3),
                "agent": self.agent_version,
            }
            self._queue(_dump(head))
            for then, line in self._recent:
                if then >= at - self.lead_in:
                    self._queue(line)
            self._recent.clear()
        self._incident.last_active = at

    def _close(self, at: float, reason: str) -> None:
        self._queue(_dump({"type": "closed", "time": round(at, 3), "reason": reason}))
        self._incident = None

    def _queue(self, line: str) -> None:
        assert self._incident is not None
        self._incident.size += len(line)
        with self._lock:
            if self._pending_bytes + len(line) > MAX_PENDING_BYTES:
                self._dropped += 1
                return
            self._pending.append((self._incident.path, line))
            self._pending_bytes += len(line)

    def flush(self) -> None:
        """Append the queued lines to their files and keep the newest ``keep`` files."""
        with self._writing:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            dropped, self._dropped = self._dropped, 0
            self._pending_bytes = 0
        if dropped:
            log.warning("timeline: lines dropped, writes too slow", extra={"lines": dropped})
        by_file: dict[Path, list[str]] = {}
        for path, line in pending:
            by_file.setdefault(path, []).append(line)
        for path, lines in by_file.items():
            try:
                with open(path, "a", encoding="utf-8") as out:
                    out.write("".join(lines))
            except OSError as exc:
                log.warning(
                    "timeline: write failed, records dropped",
                    extra={"path": str(path), "err": str(exc), "lines": len(lines)},
                )
        self._prune()

    def _prune(self) -> None:
        try:
            files = sorted(
                (p for p in self.directory.glob(f"{self.node}-*{SUFFIX}") if p.is_file()),
                key=lambda p: p.stat().st_mtime,
            )
        except OSError:
            return
        current = self.incident
        for old in files[: max(len(files) - self.keep, 0)]:
            if old == current:
                continue
            try:
                old.unlink()
            except OSError as exc:
                log.warning("timeline: cannot remove", extra={"path": str(old), "err": str(exc)})


def _working_sets(summary: Summary | None) -> dict[str, int]:
    if summary is None:
        return {}
    out = {}
    for pod in summary.pods:
        ws = pod.memory.working_set_bytes if pod.memory is not None else None
        if ws is not None:
            out[f"{pod.pod_ref.namespace}/{pod.pod_ref.name}"] = ws
    return out


def _dump(record: Mapping[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


# --- reading -----------------------------------------------------------------------------------


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return float(value)


def _integer(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {value!r}")
    return value


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object, got {value!r}")
    return value


def _sample(r: Mapping[str, Any]) -> Sample:
    signals = {
        _text(s, "signal"): (
            _integer(_mapping(v, s).get("available"), f"{s}.available"),
            _integer(_mapping(v, s).get("capacity"), f"{s}.capacity"),
        )
        for s, v in _mapping(r.get("signals", {}), "signals").items()
    }
    thresholds = []
    for entry in r.get("thresholds") or []:
        t = _mapping(entry, "threshold")
        thresholds.append(
            ThresholdLine(
                _text(t.get("signal"), "threshold signal"),
                _text(t.get("kind"), "threshold kind"),
                _integer(t.get("value"), "threshold value"),
            )
        )
    pods = {
        _text(name, "pod"): _integer(ws, f"pods[{name}]")
        for name, ws in _mapping(r.get("pods", {}), "pods").items()
    }
    met = tuple(_text(s, "met") for s in r.get("met") or [])
    return Sample(_number(r.get("time"), "time"), signals, tuple(thresholds), met, pods)


def read_timeline(path: str | Path) -> Timeline:
    """Read one incident file; ``TimelineError`` names the file, the line and the problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TimelineError(f"{path}: cannot read: {exc}") from None
    timeline: Timeline | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = _mapping(json.loads(raw), "a record")
            kind = record.get("type")
            if timeline is None:
                if kind != "incident" or record.get("format") != FORMAT:
                    raise ValueError(f"not an incident timeline ({FORMAT}) header")
                timeline = Timeline(
                    _text(record.get("node"), "node"), _number(record.get("opened"), "opened")
                )
            elif kind == "sample":
                timeline.samples.append(_sample(record))
            elif kind == "eviction":
                reaction = record.get("reaction_seconds")
                timeline.evictions.append(
                    EvictionMark(
                        _number(record.get("time"), "time"),
                        _text(record.get("pod"), "pod"),
                        _text(record.get("signal"), "signal"),
                        _text(record.get("result"), "result"),
                        None if reaction is None else _number(reaction, "reaction_seconds"),
                        _text(record.get("message", ""), "message"),
                    )
                )
            elif kind == "held_back":
                timeline.held.append(
                    HeldMark(
                        _number(record.get("time"), "time"),
                        _text(record.get("pod"), "pod"),
                        _text(record.get("signal"), "signal"),
                    )
                )
            elif kind == "truncated":
                timeline.truncated = True
            elif kind == "closed":
                timeline.closed = _number(record.get("time"), "time")
                timeline.reason = _text(record.get("reason", ""), "reason")
            # other types: written by a later agent, skipped
        except (ValueError, RecursionError) as exc:
            raise TimelineError(f"{path}:{number}: {exc}") from None
    if timeline is None:
        raise TimelineError(f"{path}: empty, not an incident timeline")
    return timeline


def timeline_files(directory: str | Path) -> list[Path]:
    """The incident files of a timeline directory, oldest first."""
    return sorted(Path(directory).glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
