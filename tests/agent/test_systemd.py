"""sd_notify against a real unix datagram socket, and the unit file checked by systemd itself."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.systemd import Notifier, watchdog_loop

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "eviction-agent.service"


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = tmp_path / "notify.sock"
    s.bind(str(path))
    s.settimeout(2)
    yield s, str(path)
    s.close()


def _recv(s: socket.socket) -> list[str]:
    return s.recv(4096).decode().split("\n")


def test_messages_reach_the_socket(listener: tuple[socket.socket, str]) -> None:
    s, path = listener
    n = Notifier({"NOTIFY_SOCKET": path})
    assert n.enabled
    assert n.ready(status="synced 3 pods")
    assert _recv(s) == ["READY=1", "STATUS=synced 3 pods"]
    assert n.watchdog()
    assert _recv(s) == ["WATCHDOG=1"]
    assert n.status("line one\nline two")
    assert _recv(s) == ["STATUS=line one line two"]
    assert n.stopping()
    assert _recv(s) == ["STOPPING=1"]


def test_abstract_socket_names() -> None:
    name = f"evagent-test-{uuid.uuid4().hex}"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind("\0" + name)
        s.settimeout(2)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert _recv(s) == ["READY=1"]
    finally:
        s.close()


def test_noop_without_notify_socket() -> None:
    n = Notifier({})
    assert not n.enabled
    assert n.ready() is False
    assert n.watchdog_interval() is None
    assert Notifier({"NOTIFY_SOCKET": "vsock:2:1234"}).enabled is False


def test_send_failure_is_reported_not_raised(tmp_path: Path) -> None:
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody-listens")})
    assert n.enabled
    assert n.ready() is False


def test_assignments_must_be_single_lines(listener: tuple[socket.socket, str]) -> None:
    n = Notifier({"NOTIFY_SOCKET": listener[1]})
    with pytest.raises(ValueError, match="must be one KEY=value line"):
        n.notify("READY")


def test_watchdog_interval_honours_watchdog_pid(listener: tuple[socket.socket, str]) -> None:
    path = listener[1]
    mine = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier(mine).watchdog_interval() == 15.0
    assert Notifier({**mine, "WATCHDOG_PID": "1"}).watchdog_interval() is None
    assert Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000"}).watchdog_interval() == 0.01
    assert Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "x"}).watchdog_interval() is None


async def test_watchdog_loop_pings_while_healthy(listener: tuple[socket.socket, str]) -> None:
    s, path = listener
    s.setblocking(False)
    healthy = True
    n = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000"})
    task = asyncio.create_task(watchdog_loop(n, lambda: healthy))
    await asyncio.sleep(0.1)
    pings = 0
    while True:
        try:
            assert s.recv(64) == b"WATCHDOG=1"
            pings += 1
        except BlockingIOError:
            break
    assert pings >= 3
    healthy = False
    await asyncio.sleep(0.05)
    while True:  # drain what was in flight when health flipped
        try:
            s.recv(64)
        except BlockingIOError:
            break
    await asyncio.sleep(0.1)
    with pytest.raises(BlockingIOError):
        s.recv(64)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_watchdog_loop_returns_when_not_requested() -> None:
    await asyncio.wait_for(watchdog_loop(Notifier({})), 1)


def _unit_settings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for raw in UNIT.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key, []).append(value)
    return out


def test_unit_declares_notify_watchdog_and_hardening() -> None:
    u = _unit_settings()
    assert u["Type"] == ["notify"]
    assert u["Restart"] == ["always"]
    assert u["OOMScoreAdjust"] == ["-900"]
    assert u["WatchdogSec"] == ["30s"]
    assert u["NotifyAccess"] == ["main"]
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelTunables": "yes",
        "ReadWritePaths": "/sys/fs/cgroup",
        "SystemCallArchitectures": "native",
        "MemoryMax": "256M",
        "TasksMax": "64",
    }.items():
        assert u[key] == [value], key
    assert set(u["CapabilityBoundingSet"][0].split()) == {
        "CAP_KILL",
        "CAP_SYS_RESOURCE",
        "CAP_DAC_READ_SEARCH",
    }
    # Would make the cgroup tree read-only and break per-cgroup PSI triggers.
    assert "ProtectControlGroups" not in u
    for lines in u.values():
        for value in lines:
            assert "#" not in value, "systemd has no trailing comments"


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    # verify also checks that ExecStart's binary exists; point it at one that does here.
    [exec_start] = _unit_settings()["ExecStart"]
    binary = exec_start.split()[0]
    local = tmp_path / "eviction-agent.service"
    local.write_text(UNIT.read_text().replace(binary, shutil.which("true") or "/bin/true"))
    res = subprocess.run(
        [exe, "verify", "--man=no", str(local)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == ""
    # The shipped unit differs only in the binary, which is all verify may complain about.
    res = subprocess.run(
        [exe, "verify", "--man=no", str(UNIT)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [
        ln for ln in res.stderr.splitlines() if ln.strip() and "is not executable" not in ln
    ]
    assert problems == []
