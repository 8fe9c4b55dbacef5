"""``python bench/scheduler_perf --through kubesim`` stops its ``kubesim serve`` child however
it is stopped.

The child runs in a session of its own (a terminal's Ctrl-C reaches only the runner), so the
runner must stop it: SIGTERM (what ``timeout`` sends) and SIGINT arrive mid-workload, and
afterwards neither the runner nor the child is left, and the runner's exit code is 128 + the
signal's number. A SIGKILL leaves the runner no say: the child follows the pipe on its stdin
(``kubesim serve --stop-on-stdin-eof``) and stops when the kernel closes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.bench import BENCH_DIR

BENCH = BENCH_DIR / "scheduler_perf"
# Long enough that the signal lands mid-run: 5000 nodes and 10000 pods over HTTP.
WORKLOAD = "^SchedulingBasic/5000Nodes_10000Pods$"


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _sockets(pid: int) -> int:
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return 0
    n = 0
    for fd in fds:
        try:
            n += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return n


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name
)
def test_a_stopped_runner_leaves_no_kubesim_behind(sig: signal.Signals) -> None:
    runner = subprocess.Popen(
        [sys.executable, str(BENCH), "--through", "kubesim", "--workload", WORKLOAD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = None
    try:
        deadline = time.monotonic() + 120
        # Mid-run: kubesim serves, and the runner's watches and requests are connected to it
        # (the listening socket and at least two accepted connections).
        while time.monotonic() < deadline and runner.poll() is None:
            kids = _children(runner.pid)
            if kids and _sockets(kids[0]) >= 3:
                child = kids[0]
                break
            time.sleep(0.05)
        assert child is not None, "kubesim never started serving the runner"
        runner.send_signal(sig)
        _, err = runner.communicate(timeout=60)
        if sig == signal.SIGKILL:
            # Nothing of the runner runs: the child sees its stdin pipe close and stops.
            assert runner.returncode == -sig
            deadline = time.monotonic() + 30
            while _alive(child) and time.monotonic() < deadline:
                time.sleep(0.05)
        else:
            assert runner.returncode == 128 + sig, err
            assert f"stopped by {sig.name}" in err
        assert not _alive(child), f"kubesim serve (pid {child}) outlived the runner"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
