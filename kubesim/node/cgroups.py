"""The process node's memory cgroups: one controller's tree (a cgroup v1 mount or the v2 unified
hierarchy) made, limited, read and removed as the kubelet's cgroup managers and runc do it.
The names of the cgroups are ``kube.cgroups``'.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal

from kube.cgroups import MEMORY_UNLIMITED, working_set

__all__ = ["REMOVE_TIMEOUT", "MemoryCgroups", "detect_memory_cgroups"]

log = logging.getLogger("kubesim.runtime")

# How long a removal (and the runtime's wait for a killed process) may take before giving up.
REMOVE_TIMEOUT: Final = 10.0


class MemoryCgroups:
    """The memory controller's tree at ``base`` (v1 mount or v2 unified root).

    It creates a cgroup with ``memory.use_hierarchy`` (v1) or the children's ``+memory +pids``
    enabled (v2, as the kubelet enables them down the kubepods tree), sets limits and
    ``memory.oom.group``, reads usage, the working set (``kube.cgroups``), the effective limit and
    OOM kills, and removes a tree leaf first, killing what is left and retrying while the kernel
    still counts tasks.
    """

    def __init__(self, base: Path, version: Literal[1, 2]) -> None:
        self.base = base
        self.version = version

    def _write(self, path: Path, name: str, value: str) -> None:
        (path / name).write_text(value)

    def _read(self, path: Path, name: str) -> str:
        return (path / name).read_text()

    def _keyed(self, path: Path, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in self._read(path, name).splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
        return out

    def create(self, path: Path, *, limit: int | None, parent_of_leaves: bool) -> None:
        path.mkdir(exist_ok=True)
        if self.version == 1:
            with contextlib.suppress(OSError):  # only settable while the cgroup has no children
                self._write(path, "memory.use_hierarchy", "1")
        elif parent_of_leaves:
            self.enable_controllers_in(path)
        if limit is not None:
            self.set_limit(path, limit)

    def enable_controllers_in(self, path: Path) -> None:
        """v2: ``+memory`` (required) and ``+pids`` (where the parent has it) for the children,
        as the kubelet enables them down the kubepods tree."""
        if self.version != 2:
            return
        try:
            available = self._read(path, "cgroup.controllers").split()
        except OSError:
            available = []
        self._write(
            path, "cgroup.subtree_control", "+memory +pids" if "pids" in available else "+memory"
        )

    def set_limit(self, path: Path, limit: int) -> None:
        name = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        self._write(path, name, str(limit))

    def set_oom_group(self, path: Path) -> None:
        if self.version == 2 and (path / "memory.oom.group").exists():
            self._write(path, "memory.oom.group", "1")

    def limit(self, path: Path) -> int | None:
        if self.version == 1:
            value = int(self._read(path, "memory.limit_in_bytes"))
            return None if value >= MEMORY_UNLIMITED else value
        text = self._read(path, "memory.max").strip()
        return None if text == "max" else int(text)

    def effective_limit(self, path: Path) -> int | None:
        """The tightest limit on ``path`` and its ancestors up to the mount."""
        if self.version == 1:
            value = self._keyed(path, "memory.stat").get("hierarchical_memory_limit")
            return None if value is None or value >= MEMORY_UNLIMITED else value
        limits: list[int] = []
        cur = path
        while cur != self.base and self.base in cur.parents:
            if (lim := self.limit(cur)) is not None:
                limits.append(lim)
            cur = cur.parent
        return min(limits) if limits else None

    def memory(self, path: Path) -> tuple[int, int]:
        """(usage, working set) where working set = usage − inactive_file, as cAdvisor."""
        if self.version == 1:
            usage = int(self._read(path, "memory.usage_in_bytes"))
            inactive = self._keyed(path, "memory.stat").get("total_inactive_file", 0)
        else:
            usage = int(self._read(path, "memory.current"))
            inactive = self._keyed(path, "memory.stat").get("inactive_file", 0)
        return usage, working_set(usage, inactive)

    def oom_kills(self, path: Path) -> int:
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            return self._keyed(path, name).get("oom_kill", 0)
        except OSError:
            return 0

    def procs(self, path: Path) -> list[int]:
        try:
            return [int(x) for x in self._read(path, "cgroup.procs").split()]
        except OSError:
            return []

    def walk(self, path: Path) -> Iterator[Path]:
        """``path`` and its descendants, leaves first."""
        try:
            children = [p for p in path.iterdir() if p.is_dir()]
        except OSError:
            children = []
        for child in children:
            yield from self.walk(child)
        yield path

    def tree_procs(self, path: Path) -> list[int]:
        return [pid for p in self.walk(path) for pid in self.procs(p)]

    def try_remove(self, path: Path) -> bool:
        """One leaf-first pass of rmdir over the tree; True when nothing is left."""
        for p in self.walk(path):
            try:
                p.rmdir()
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EBUSY, errno.ENOTEMPTY):
                    return False
                raise
        return not path.exists()

    async def remove(self, path: Path, *, timeout: float = REMOVE_TIMEOUT) -> None:
        """Kill what is left in the tree and rmdir it, retrying while the kernel counts tasks."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while not self.try_remove(path):
            for pid in self.tree_procs(path):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                log.warning("cgroup %s still busy after %.0fs; left in place", path, timeout)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)


def detect_memory_cgroups(cgroup_root: Path) -> tuple[MemoryCgroups | None, str]:
    """The memory controller's hierarchy under ``cgroup_root``, or None with the reason.

    A writable memory controller: v1 at ``memory/``, v2 at the root or at ``unified/`` with
    ``memory`` among its controllers.
    """
    if (cgroup_root / "cgroup.controllers").exists():
        candidates = [cgroup_root]
    else:
        v1 = cgroup_root / "memory"
        if (v1 / "memory.usage_in_bytes").exists():
            return MemoryCgroups(v1, 1), f"memory cgroup v1 at {v1}"
        candidates = [cgroup_root / "unified"]
    for base in candidates:
        try:
            controllers = (base / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if "memory" in controllers:
            return MemoryCgroups(base, 2), f"memory cgroup v2 at {base}"
        return None, f"no memory controller in {base}/cgroup.controllers"
    return None, f"no memory cgroup under {cgroup_root}"
