"""PSI parsing, trigger arming with fallbacks, and the POLLPRI → asyncio bridge."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.sources.psi import (
    MonitorMode,
    PressureEvent,
    PressureMonitor,
    Trigger,
    TriggerUnavailable,
    open_trigger,
    parse_pressure,
)

SAMPLE = (
    "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
    "full avg10=0.20 avg60=0.05 avg300=0.00 total=7890\n"
)


def _psi(total_some: int, total_full: int = 0) -> str:
    return (
        f"some avg10=0.00 avg60=0.00 avg300=0.00 total={total_some}\n"
        f"full avg10=0.00 avg60=0.00 avg300=0.00 total={total_full}\n"
    )


def test_parse_pressure() -> None:
    p = parse_pressure(SAMPLE)
    assert (p.some.avg10, p.some.avg60, p.some.avg300, p.some.total) == (1.5, 0.75, 0.1, 123456)
    assert p.full is not None
    assert p.full.total == 7890
    cpu_system = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n")
    assert cpu_system.full is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no 'some' line"),
        ("half avg10=0 avg60=0 avg300=0 total=0", "must start with 'some' or 'full'"),
        ("some avg10=0 avg60=0 total=0", "lacks avg300"),
        ("some avg10=x avg60=0 avg300=0 total=0", "non-numeric"),
        ("some avg10", "malformed PSI field"),
    ],
)
def test_parse_pressure_rejects_malformed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_pressure(text)


def test_real_proc_pressure_parses() -> None:
    path = Path("/proc/pressure/memory")
    if not path.exists():
        pytest.skip("this kernel has no /proc/pressure (CONFIG_PSI off or psi=0)")
    p = parse_pressure(path.read_text())
    assert p.full is not None
    assert p.some.total >= p.full.total


def test_trigger_validation_and_encoding() -> None:
    t = Trigger.parse("some 150000 1000000")
    assert t == Trigger("some", 150000, 1000000)
    assert t.encode() == b"some 150000 1000000\0"
    for bad, msg in [
        ("some 1 100", "window 100us: must be between 500000 and 10000000"),
        ("full 2000000 1000000", "stall 2000000us: must be > 0 and <= the window"),
        ("half 1 1000000", "kind 'half'"),
        ("some 1", "must be '<some|full> <stall us> <window us>'"),
    ]:
        with pytest.raises(ValueError, match=msg):
            Trigger.parse(bad)


def test_unprivileged_rounding() -> None:
    assert Trigger("some", 150000, 1000000).rounded_for_unprivileged() == Trigger(
        "some", 150000, 2000000
    )
    assert Trigger("some", 1, 2000000).rounded_for_unprivileged() is None
    assert Trigger("some", 1, 9_500_000).rounded_for_unprivileged() == Trigger(
        "some", 1, 10_000_000
    )


def _refusing(err: int) -> object:
    def opener(path: Path, trigger: Trigger) -> tuple[int, Trigger]:
        raise TriggerUnavailable(path, trigger, OSError(err, os.strerror(err)))

    return opener


async def _next(m: PressureMonitor, timeout: float) -> PressureEvent:
    return await asyncio.wait_for(m.wait(), timeout)


@pytest.mark.parametrize("err", [errno.EPERM, errno.EINVAL, errno.EROFS])
async def test_refused_trigger_falls_back_to_polling(tmp_path: Path, err: int) -> None:
    f = tmp_path / "memory.pressure"
    f.write_text(_psi(0))
    m = PressureMonitor(
        f,
        Trigger("some", 100_000, 1_000_000),
        poll_interval=0.01,
        opener=_refusing(err),  # type: ignore[arg-type]
    )
    async with m:
        assert m.mode is MonitorMode.POLL
        assert errno.errorcode[err] in m.reason
        assert "polling every 0.01s" in m.reason
        # 50 ms of stall is below the 100 ms budget: nothing fires.
        f.write_text(_psi(50_000))
        with pytest.raises(TimeoutError):
            await _next(m, 0.1)
        f.write_text(_psi(180_000))
        ev = await _next(m, 2)
        assert ev.reason == "threshold"
        assert ev.mode is MonitorMode.POLL
        assert ev.pressure is not None
        assert ev.pressure.some.total == 180_000
        # Rate-limited to one event per window, as the kernel does.
        f.write_text(_psi(400_000))
        with pytest.raises(TimeoutError):
            await _next(m, 0.3)


async def test_poll_mode_watches_full_line_when_asked(tmp_path: Path) -> None:
    f = tmp_path / "io.pressure"
    f.write_text(_psi(0, 0))
    async with PressureMonitor(
        f, Trigger("full", 10_000, 1_000_000), poll_interval=0.01, allow_triggers=False
    ) as m:
        assert m.mode is MonitorMode.POLL
        assert "disabled by configuration" in m.reason
        f.write_text(_psi(10_000_000, 0))
        with pytest.raises(TimeoutError):
            await _next(m, 0.1)
        f.write_text(_psi(10_000_000, 20_000))
        ev = await _next(m, 2)
        assert ev.reason == "threshold"


async def test_poll_mode_reports_gone_when_the_cgroup_disappears(tmp_path: Path) -> None:
    f = tmp_path / "memory.pressure"
    f.write_text(_psi(0))
    async with PressureMonitor(
        f, Trigger("some", 10_000, 1_000_000), poll_interval=0.01, allow_triggers=False
    ) as m:
        f.unlink()
        events = [ev async for ev in m]
        assert [e.reason for e in events] == ["gone"]


async def test_absent_file_is_unavailable(tmp_path: Path) -> None:
    async with PressureMonitor(tmp_path / "nope", Trigger("some", 1, 1_000_000)) as m:
        assert m.mode is MonitorMode.UNAVAILABLE
        assert "unreadable" in m.reason


def test_poll_interval_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="poll_interval 0: must be > 0"):
        PressureMonitor(tmp_path, Trigger("some", 1, 1_000_000), poll_interval=0)


def test_open_trigger_names_the_errno(tmp_path: Path) -> None:
    with pytest.raises(TriggerUnavailable, match="ENOENT") as info:
        open_trigger(tmp_path / "absent", Trigger("some", 1, 1_000_000))
    assert info.value.errno == errno.ENOENT


def _real_trigger_or_skip(path: Path, trigger: Trigger) -> Trigger:
    if not path.exists():
        pytest.skip(f"{path} absent: kernel without PSI")
    try:
        fd, armed = open_trigger(path, trigger)
    except TriggerUnavailable as exc:
        pytest.skip(f"PSI triggers not allowed here: {exc}")
    os.close(fd)
    return armed


async def test_real_trigger_fires_on_cpu_contention() -> None:
    """A real kernel trigger delivered through the poll thread into the event loop."""
    path = Path("/proc/pressure/cpu")
    armed = _real_trigger_or_skip(path, Trigger("some", 20_000, 1_000_000))
    burners = [
        subprocess.Popen(
            [sys.executable, "-c", "import time\nt=time.time()+8\nwhile time.time()<t: pass"]
        )
        for _ in range((os.cpu_count() or 1) + 2)
    ]
    try:
        async with PressureMonitor(path, Trigger("some", 20_000, 1_000_000)) as m:
            assert m.mode is MonitorMode.TRIGGER
            assert m.trigger == armed
            assert "armed" in m.reason
            ev = await asyncio.wait_for(m.wait(), 10)
            assert ev.reason == "trigger"
            assert ev.mode is MonitorMode.TRIGGER
            assert ev.pressure is not None
            assert ev.pressure.some.total > 0
    finally:
        for b in burners:
            b.kill()
            b.wait()


async def test_real_trigger_monitor_closes_promptly() -> None:
    path = Path("/proc/pressure/memory")
    _real_trigger_or_skip(path, Trigger("full", 500_000, 2_000_000))
    m = PressureMonitor(path, Trigger("full", 500_000, 2_000_000))
    await m.start()
    assert m.mode is MonitorMode.TRIGGER
    waiter = asyncio.create_task(m.wait())
    await asyncio.sleep(0.05)
    t0 = time.monotonic()
    waiter.cancel()
    await m.aclose()
    assert time.monotonic() - t0 < 2
    assert waiter.cancelled()
    assert m._thread is not None and not m._thread.is_alive()


def _writable_v2_cgroup() -> Path:
    for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (base / "cgroup.controllers").is_file():
            d = base / f"evagent-psi-{os.getpid()}-{time.monotonic_ns()}"
            try:
                d.mkdir()
            except OSError as exc:
                pytest.skip(f"cgroup v2 tree {base} not writable: {exc.strerror}")
            return d
    pytest.skip("no cgroup v2 tree (per-cgroup PSI needs cgroup v2)")


async def test_real_cgroup_trigger_reports_gone_when_the_cgroup_is_removed() -> None:
    d = _writable_v2_cgroup()
    try:
        if not (d / "memory.pressure").exists():
            pytest.skip(f"{d} has no memory.pressure (PSI disabled for cgroups)")
        _real_trigger_or_skip(d / "memory.pressure", Trigger("some", 150_000, 2_000_000))
        async with PressureMonitor(d / "memory.pressure", Trigger("some", 150_000, 2_000_000)) as m:
            assert m.mode is MonitorMode.TRIGGER
            d.rmdir()
            events = await asyncio.wait_for(_collect(m), 5)
            assert [e.reason for e in events] == ["gone"]
            assert events[0].pressure is None
    finally:
        if d.exists():
            d.rmdir()


async def _collect(m: PressureMonitor) -> list[PressureEvent]:
    return [ev async for ev in m]


_avg = st.floats(min_value=0, max_value=100, allow_nan=False).map(lambda f: round(f, 2))


@given(_avg, _avg, _avg, st.integers(min_value=0, max_value=1 << 62), st.booleans())
def test_parse_pressure_round_trips_kernel_format(
    a10: float, a60: float, a300: float, total: int, with_full: bool
) -> None:
    line = f"avg10={a10:.2f} avg60={a60:.2f} avg300={a300:.2f} total={total}"
    text = f"some {line}\n" + (f"full {line}\n" if with_full else "")
    p = parse_pressure(text)
    assert (p.some.avg10, p.some.avg60, p.some.avg300, p.some.total) == (a10, a60, a300, total)
    assert (p.full == p.some) if with_full else p.full is None


@given(st.integers(min_value=500_000, max_value=10_000_000), st.data())
def test_unprivileged_rounding_properties(window: int, data: st.DataObject) -> None:
    stall = data.draw(st.integers(min_value=1, max_value=window))
    t = Trigger("some", stall, window)
    r = t.rounded_for_unprivileged()
    if window % 2_000_000 == 0:
        assert r is None
    else:
        assert r is not None
        assert r.window_us % 2_000_000 == 0
        assert window < r.window_us < window + 2_000_000
        assert r.window_us <= 10_000_000
        assert (r.kind, r.stall_us) == (t.kind, t.stall_us)
