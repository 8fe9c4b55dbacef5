"""Pressure Stall Information: parsing, kernel triggers bridged into asyncio, a polling fallback.

PSI triggers let the kernel wake the agent when tasks stall on memory, where the kubelet looks
every 10 s (``evictionMonitoringPeriod``, pkg/kubelet/kubelet.go) and has no memcg notifier on
cgroup v2 (kubernetes/kubernetes#106331).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import logging
import os
import select
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

log = logging.getLogger(__name__)

Kind = Literal["some", "full"]

# Kernel limits for trigger windows (psi.rst): 500 ms .. 10 s.
MIN_WINDOW_US = 500_000
MAX_WINDOW_US = 10_000_000
UNPRIVILEGED_WINDOW_STEP_US = 2_000_000


@dataclass(frozen=True)
class PressureLine:
    avg10: float
    avg60: float
    avg300: float
    # Cumulative stall time in microseconds.
    total: int


@dataclass(frozen=True)
class Pressure:
    some: PressureLine
    full: PressureLine | None


def parse_pressure(text: str) -> Pressure:
    """Parse a PSI file; ValueError naming the problem when it is not one."""
    lines: dict[str, PressureLine] = {}
    for raw in text.splitlines():
        parts = raw.split()
        if not parts:
            continue
        kind = parts[0]
        if kind not in ("some", "full"):
            raise ValueError(f"unexpected PSI line {raw!r}: must start with 'some' or 'full'")
        fields: dict[str, str] = {}
        for tok in parts[1:]:
            key, sep, value = tok.partition("=")
            if not sep:
                raise ValueError(f"malformed PSI field {tok!r} in line {raw!r}")
            fields[key] = value
        try:
            lines[kind] = PressureLine(
                avg10=float(fields["avg10"]),
                avg60=float(fields["avg60"]),
                avg300=float(fields["avg300"]),
                total=int(fields["total"]),
            )
        except KeyError as exc:
            raise ValueError(f"PSI line {raw!r} lacks {exc.args[0]}") from None
        except ValueError:
            raise ValueError(f"non-numeric value in PSI line {raw!r}") from None
    if "some" not in lines:
        raise ValueError("PSI text has no 'some' line")
    return Pressure(some=lines["some"], full=lines.get("full"))


def read_pressure(path: Path) -> Pressure:
    """Read and parse one PSI file (OSError if absent, ValueError if malformed)."""
    return parse_pressure(path.read_text())


@dataclass(frozen=True)
class Trigger:
    """A PSI trigger: fire when `kind` stall time exceeds `stall_us` within `window_us`."""

    kind: Kind
    stall_us: int
    window_us: int

    def __post_init__(self) -> None:
        if self.kind not in ("some", "full"):
            raise ValueError(f"PSI trigger kind {self.kind!r}: must be 'some' or 'full'")
        if not MIN_WINDOW_US <= self.window_us <= MAX_WINDOW_US:
            raise ValueError(
                f"PSI trigger window {self.window_us}us: must be between "
                f"{MIN_WINDOW_US} and {MAX_WINDOW_US} microseconds"
            )
        if not 0 < self.stall_us <= self.window_us:
            raise ValueError(
                f"PSI trigger stall {self.stall_us}us: must be > 0 and <= the window "
                f"({self.window_us}us)"
            )

    @classmethod
    def parse(cls, text: str) -> Trigger:
        """`"some 150000 1000000"` → Trigger; ValueError naming the rule otherwise."""
        parts = text.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
            raise ValueError(f"PSI trigger {text!r}: must be '<some|full> <stall us> <window us>'")
        kind = parts[0]
        if kind not in ("some", "full"):
            raise ValueError(f"PSI trigger kind {kind!r}: must be 'some' or 'full'")
        return cls(kind=kind, stall_us=int(parts[1]), window_us=int(parts[2]))  # type: ignore[arg-type]

    def encode(self) -> bytes:
        return f"{self.kind} {self.stall_us} {self.window_us}".encode() + b"\0"

    def rounded_for_unprivileged(self) -> Trigger | None:
        """Same budget with the window rounded up to a 2 s multiple; None if already one."""
        if self.window_us % UNPRIVILEGED_WINDOW_STEP_US == 0:
            return None
        step = UNPRIVILEGED_WINDOW_STEP_US
        # MAX_WINDOW_US is itself a multiple of 2 s, so rounding up stays within the limits.
        window = -(-self.window_us // step) * step
        return Trigger(kind=self.kind, stall_us=self.stall_us, window_us=window)

    def __str__(self) -> str:
        return f"{self.kind} {self.stall_us} {self.window_us}"


class TriggerUnavailable(Exception):
    """The kernel refused the trigger; `errno` tells why."""

    def __init__(self, path: Path, trigger: Trigger, err: OSError) -> None:
        self.path, self.trigger, self.errno = path, trigger, err.errno
        name = errno.errorcode.get(err.errno or 0, str(err.errno))
        super().__init__(f"PSI trigger {trigger} on {path} refused: {name} ({err.strerror})")


def _arm(path: Path, trigger: Trigger) -> int:
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.write(fd, trigger.encode())
    except OSError:
        os.close(fd)
        raise
    return fd


def open_trigger(path: Path, trigger: Trigger) -> tuple[int, Trigger]:
    """Arm a trigger; returns the fd and the trigger actually armed.

    On EINVAL with a window that is not a multiple of 2 s, retries once with the window rounded
    up (the rule for unprivileged monitors since Linux 6.5).
    """
    try:
        return _arm(path, trigger), trigger
    except OSError as err:
        retry = trigger.rounded_for_unprivileged() if err.errno == errno.EINVAL else None
        if retry is None:
            raise TriggerUnavailable(path, trigger, err) from err
    try:
        return _arm(path, retry), retry
    except OSError as err:
        raise TriggerUnavailable(path, retry, err) from err


class MonitorMode(enum.Enum):
    TRIGGER = "trigger"
    POLL = "poll"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class PressureEvent:
    path: Path
    mode: MonitorMode
    # "trigger": the kernel raised POLLPRI; "threshold": the polling fallback saw the budget
    # exceeded; "gone": the file's source disappeared (POLLERR, or it can no longer be read).
    reason: Literal["trigger", "threshold", "gone"]
    # Pressure read right after the event (None for "gone" or when the read failed).
    pressure: Pressure | None
    monotonic: float


Opener = Callable[[Path, Trigger], tuple[int, Trigger]]


class PressureMonitor:
    """Watch one PSI file with a trigger, or poll it when triggers are not allowed.

    Use as ``async with PressureMonitor(path, trigger) as m: async for ev in m: ...``.
    ``mode`` and ``reason`` tell which mode is active and why.

    The kernel interface (https://docs.kernel.org/accounting/psi.html): ``/proc/pressure/memory``
    and, on cgroup v2, ``<cgroup>/memory.pressure`` read as ``some avg10=.. avg60=.. avg300=..
    total=<µs>`` plus a ``full`` line. A trigger is armed by opening the file
    O_RDWR|O_NONBLOCK and writing ``"<some|full> <stall µs> <window µs>"``; the kernel then raises
    POLLPRI at most once per window while the stall exceeds the budget, and POLLERR when the
    source goes away (cgroup removed). Closing the fd disarms it.

    asyncio cannot wait for POLLPRI: ``add_reader`` registers for readability only, and a private
    epoll fd handed to ``add_reader`` is unreliable because the outer poll's readiness check calls
    the PSI file's poll method, which consumes the pending event first. So a daemon thread blocks
    in ``select.poll()`` on the trigger fd and the read end of a wake-up pipe; events go to the
    loop with ``call_soon_threadsafe``, and closing the monitor writes to the pipe so the thread
    leaves ``poll()`` at once.

    Triggers may be refused: EPERM/EACCES before Linux 6.5 without CAP_SYS_RESOURCE, EINVAL on
    6.5+ for unprivileged windows that are not a multiple of 2 s (retried once with the window
    rounded up to 2 s), ENOENT/EOPNOTSUPP where PSI or the file is absent, EROFS. The monitor then
    polls: it samples ``total`` every ``poll_interval`` and fires when the stall time grown within
    the trigger's window reaches the trigger's budget — the kernel's rule, at a coarser
    resolution.
    """

    def __init__(
        self,
        path: Path | str,
        trigger: Trigger,
        *,
        poll_interval: float = 1.0,
        allow_triggers: bool = True,
        opener: Opener = open_trigger,
        clock: Callable[[], float] = time.monotonic,
        queue: asyncio.Queue[PressureEvent] | None = None,
    ) -> None:
        if poll_interval <= 0:
            raise ValueError(f"poll_interval {poll_interval}: must be > 0 seconds")
        self.path = Path(path)
        self.trigger = trigger
        self.poll_interval = poll_interval
        self._allow_triggers = allow_triggers
        self._opener = opener
        self._clock = clock
        self.mode = MonitorMode.UNAVAILABLE
        self.reason = "not started"
        # Several monitors may share one queue so the loop waits on "any pressure" at once.
        self._queue: asyncio.Queue[PressureEvent] = queue if queue is not None else asyncio.Queue()
        self._fd: int | None = None
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> MonitorMode:
        self._loop = asyncio.get_running_loop()
        if self._allow_triggers:
            try:
                self._fd, armed = self._opener(self.path, self.trigger)
            except TriggerUnavailable as exc:
                self.reason = str(exc)
            except OSError as exc:
                self.reason = f"PSI trigger on {self.path} failed: {exc}"
            else:
                note = "" if armed == self.trigger else f" (window rounded from {self.trigger})"
                self.trigger = armed
                self.mode = MonitorMode.TRIGGER
                self.reason = f"kernel trigger '{armed}' armed{note}"
                self._start_thread()
                log.info("psi monitor on %s: %s", self.path, self.reason)
                return self.mode
        else:
            self.reason = "triggers disabled by configuration"
        try:
            # The baseline: stall time accrued from here on counts against the budget.
            baseline = (self._clock(), read_pressure(self.path))
        except (OSError, ValueError) as exc:
            self.mode = MonitorMode.UNAVAILABLE
            self.reason = f"{self.reason}; {self.path} unreadable: {exc}"
            log.warning("psi monitor on %s unavailable: %s", self.path, self.reason)
            return self.mode
        self.mode = MonitorMode.POLL
        self.reason = f"{self.reason}; polling every {self.poll_interval}s"
        self._task = asyncio.create_task(self._poll_loop(baseline), name=f"psi-poll {self.path}")
        log.info("psi monitor on %s: %s", self.path, self.reason)
        return self.mode

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._thread is not None:
            assert self._wake_w is not None
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        for fd in (self._fd, self._wake_r, self._wake_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._wake_r = self._wake_w = None

    async def __aenter__(self) -> PressureMonitor:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- consuming ---------------------------------------------------------------------

    async def wait(self) -> PressureEvent:
        """Next event; cancellable."""
        return await self._queue.get()

    @property
    def queue(self) -> asyncio.Queue[PressureEvent]:
        return self._queue

    def __aiter__(self) -> AsyncIterator[PressureEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[PressureEvent]:
        while True:
            ev = await self.wait()
            yield ev
            if ev.reason == "gone":
                return

    # --- trigger mode: the poll thread -------------------------------------------------

    def _start_thread(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(
            target=self._poll_thread, name=f"psi-trigger {self.path}", daemon=True
        )
        self._thread.start()

    def _poll_thread(self) -> None:
        assert self._fd is not None and self._wake_r is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLPRI)
        poller.register(self._wake_r, select.POLLIN)
        gone_mask = select.POLLERR | select.POLLHUP | select.POLLNVAL
        while True:
            try:
                ready = poller.poll()
            except InterruptedError:
                continue
            for fd, revents in ready:
                if fd == self._wake_r:
                    return
                if revents & gone_mask:
                    self._post("gone")
                    return
                if revents & select.POLLPRI:
                    self._post("trigger")

    def _post(self, reason: Literal["trigger", "gone"]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._deliver, reason, self._clock())

    def _deliver(self, reason: Literal["trigger", "threshold", "gone"], at: float) -> None:
        pressure: Pressure | None = None
        if reason != "gone":
            try:
                pressure = read_pressure(self.path)
            except (OSError, ValueError):
                pressure = None
        self._queue.put_nowait(
            PressureEvent(
                path=self.path, mode=self.mode, reason=reason, pressure=pressure, monotonic=at
            )
        )

    # --- poll mode ---------------------------------------------------------------------

    def _line(self, pressure: Pressure) -> PressureLine | None:
        return pressure.some if self.trigger.kind == "some" else pressure.full

    async def _poll_loop(self, baseline: tuple[float, Pressure]) -> None:
        window = self.trigger.window_us / 1e6
        samples: deque[tuple[float, int]] = deque()
        first = self._line(baseline[1])
        if first is not None:
            samples.append((baseline[0], first.total))
        last_fired = float("-inf")
        while True:
            await asyncio.sleep(self.poll_interval)
            now = self._clock()
            try:
                pressure: Pressure | None = read_pressure(self.path)
            except OSError:
                self._queue.put_nowait(PressureEvent(self.path, self.mode, "gone", None, now))
                return
            except ValueError as exc:
                log.warning("psi: skipping unparsable sample of %s: %s", self.path, exc)
                pressure = None
            line = self._line(pressure) if pressure is not None else None
            if line is not None:
                samples.append((now, line.total))
                while len(samples) > 1 and samples[1][0] <= now - window:
                    samples.popleft()
                grown = line.total - samples[0][1]
                if grown >= self.trigger.stall_us and now - last_fired >= window:
                    assert pressure is not None
                    last_fired = now
                    self._queue.put_nowait(
                        PressureEvent(self.path, self.mode, "threshold", pressure, now)
                    )
