"""sd_notify against a real unix datagram socket, and the unit file checked by systemd itself."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
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
        "DynamicUser": "yes",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectClock": "yes",
        "ProtectKernelLogs": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectControlGroups": "yes",
        "RestrictNamespaces": "yes",
        "RestrictSUIDSGID": "yes",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
        "UMask": "0077",
        "SystemCallArchitectures": "native",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "MemoryMax": "256M",
        "TasksMax": "64",
    }.items():
        assert u[key] == [value], key
    assert "@system-service" in u["SystemCallFilter"]
    assert "User" not in u  # never root: the transient DynamicUser
    # no CAP_KILL: the agent sends no signals; no CAP_DAC_OVERRIDE: it would read every
    # root-only file it sees (ProtectSystem= blocks writes only). PSI triggers before 6.5 only.
    caps = set(u["CapabilityBoundingSet"][0].split())
    assert caps == {"CAP_SYS_RESOURCE"}
    assert set(u["AmbientCapabilities"][0].split()) == caps
    # nothing in cgroupfs is writable, so nothing is bound at start to paths the kubelet may
    # create later: the usage watch reads, and follows kubepods when it appears
    assert "ReadWritePaths" not in u
    # the credential is not read from a world-readable path by the service itself
    assert u["LoadCredential"] == ["kubeconfig:/etc/eviction-agent/kubeconfig"]
    assert "--kubeconfig %d/kubeconfig" in u["ExecStart"][0]
    for lines in u.values():
        for value in lines:
            assert "#" not in value, "systemd has no trailing comments"


def _systemd_analyze() -> str:
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    return exe


def test_systemd_analyze_security_exposure_at_most_2_5(tmp_path: Path) -> None:
    exe = _systemd_analyze()
    # --offline= (systemd 250+) scores the file without a running systemd; the unit must be
    # named *.service and is analysed from its own directory.
    local = tmp_path / UNIT.name
    local.write_text(UNIT.read_text())
    res = subprocess.run(
        [exe, "security", "--offline=yes", "--no-pager", local.name],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    out = res.stdout + res.stderr
    if "unrecognized option" in out or "Unknown option" in out:
        pytest.skip(f"this systemd-analyze has no --offline: {out.strip()[:200]}")
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", out)
    assert match, out
    assert float(match.group(1)) <= 2.5, out
    for option in ("CAP_KILL", "PrivateDevices=", "ProtectClock=", "SystemCallFilter=~@"):
        bad = [ln for ln in out.splitlines() if ln.startswith("✗") and option in ln]
        assert bad == [], bad


def test_agent_runs_without_writable_executable_memory() -> None:
    """MemoryDenyWriteExecute= holds for the agent: its imports, config check, HTTP server and
    inotify watch run under the kernel's PR_SET_MDWE, which refuses the same mappings (6.3+)."""
    script = textwrap.dedent(
        """
        import asyncio, ctypes, sys
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
            print("no PR_SET_MDWE", ctypes.get_errno()); sys.exit(3)
        import aiohttp
        import agent.daemon, agent.sources, psutil, yaml, prometheus_client
        from agent.cli import main
        from agent.http import make_app, start_http
        from agent.metrics import AgentMetrics
        assert psutil.virtual_memory().total > 0
        code = main(["check-config", "--node-name=n1", "--eviction-hard=memory.available<1Gi"])
        assert code == 0, code
        async def serve():
            app = make_app(AgentMetrics(), healthy=lambda: (True, ""), ready=lambda: (True, ""))
            srv, port = await start_http(app, "127.0.0.1", 0)
            async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics") as r:
                assert r.status == 200
            await srv.cleanup()
        asyncio.run(serve())
        import os, tempfile
        from pathlib import Path
        from agent.sources.memcg import _inotify_watch
        with tempfile.NamedTemporaryFile() as f:  # the v2 memory.events watch: plain libc calls
            os.close(_inotify_watch(Path(f.name)))
        from agent.sources.usagewatch import UsageWatch
        async def watch():  # the usage watch: a thread, a pipe and poll(2)
            with tempfile.NamedTemporaryFile("w") as f:
                f.write("1"); f.flush()
                fired = asyncio.Event()
                w = UsageWatch(Path(f.name), fired.set)
                assert w.start(); w.arm(1)
                await asyncio.wait_for(fired.wait(), 10); w.close()
        asyncio.run(watch())
        print("MDWE-OK")
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    if res.returncode == 3:
        pytest.skip(f"the kernel has no PR_SET_MDWE: {res.stdout.strip()}")
    assert res.returncode == 0, res.stderr
    assert "MDWE-OK" in res.stdout


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    exe = _systemd_analyze()
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
