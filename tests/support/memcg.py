"""A cgroup v1 memory controller for the tests that need the kernel's own memory signals: whether
one is writable here, a node cgroup made and torn down, a process that allocates inside one."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MIB = 1 << 20
V1_MEMORY = Path("/sys/fs/cgroup/memory")

ALLOCATE = """
import signal, sys, time
held = []
for _ in range(int(sys.argv[1])):
    chunk = bytearray(8 << 20)
    chunk[::4096] = b"\\x01" * len(range(0, len(chunk), 4096))
    held.append(chunk)
    time.sleep(0.02)
print("ready", flush=True)
signal.pause()  # held until the test kills it
"""


def _v1_writable() -> str | None:
    if not (V1_MEMORY / "cgroup.event_control").exists():
        return "no cgroup v1 memory controller at /sys/fs/cgroup/memory (cgroup v2 host?)"
    if not os.access(V1_MEMORY, os.W_OK):
        return "the cgroup v1 memory controller is not writable (not root?)"
    return None


needs_v1 = pytest.mark.skipif(_v1_writable() is not None, reason=str(_v1_writable()))


@contextlib.contextmanager
def node_cgroup_v1() -> Iterator[Path]:
    """A node cgroup of 512 MiB under the v1 memory controller, its processes killed and the
    cgroups removed afterwards."""
    path = V1_MEMORY / f"evagent-memcg-{os.getpid()}"
    path.mkdir()
    (path / "memory.limit_in_bytes").write_text(str(512 * MIB))
    try:
        yield path
    finally:
        for sub in sorted(path.rglob("*"), key=lambda p: -len(p.parts)):
            if sub.is_dir():
                _drain_and_remove(sub)
        _drain_and_remove(path)


def _drain_and_remove(path: Path) -> None:
    for _ in range(100):
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), 9)
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.01)


def allocate_in(cgroup: Path, chunks: int) -> subprocess.Popen[str]:
    procs = cgroup / "cgroup.procs"

    def join() -> None:
        procs.write_text(str(os.getpid()))

    return subprocess.Popen(
        [sys.executable, "-c", ALLOCATE, str(chunks)],
        preexec_fn=join,  # noqa: PLW1509 - joins the cgroup before exec
        stdout=subprocess.PIPE,
        text=True,
    )
