"""The demo workload: grow a resident working set at a steady rate, hold it, stop on SIGTERM.

Node-pressure eviction acts on working sets (usage − inactive_file) that climb; a program that
only reserves memory does not raise them, because untouched anonymous pages are never charged
to its cgroup. So every chunk is written page by page as it is allocated. The demo manifest runs
it as ``python -m kubesim.node.memory_grower`` (the process runtime resolves ``python`` to its
own interpreter).
"""

from __future__ import annotations

import mmap
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

import click

__all__ = ["MemoryGrower", "main", "target_bytes"]

MIB = 1 << 20
PAGE = mmap.PAGESIZE
_MAX_CHUNK = 64 * MIB


def target_bytes(elapsed_s: float, *, rate_bytes_per_s: float, max_bytes: int) -> int:
    """Bytes that should be held ``elapsed_s`` seconds after the start, page-aligned."""
    want = min(float(max_bytes), max(0.0, elapsed_s) * rate_bytes_per_s)
    return min(max_bytes, int(want) // PAGE * PAGE)


class MemoryGrower:
    """Holds touched chunks; ``grow_to`` allocates the difference to a target."""

    def __init__(self) -> None:
        self.chunks: list[bytearray] = []
        self.held = 0

    def grow_to(self, target: int) -> None:
        while self.held < target:
            size = min(target - self.held, _MAX_CHUNK)
            chunk = bytearray(size)  # calloc'd: untouched pages are not resident yet
            chunk[::PAGE] = b"\x01" * len(range(0, size, PAGE))
            self.chunks.append(chunk)
            self.held += size


class _Terminated(Exception):
    pass


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def run(
    *,
    rate_bytes_per_s: float,
    max_bytes: int,
    step_s: float,
    hold_s: float | None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    say: Callable[[str], None] = print,
    alloc: MemoryGrower | None = None,
) -> MemoryGrower:
    """Grow to ``max_bytes`` at the rate in steps, then hold (forever or ``hold_s``)."""
    alloc = alloc if alloc is not None else MemoryGrower()
    start = clock()
    full_since: float | None = None
    while True:
        now = clock()
        alloc.grow_to(
            target_bytes(now - start, rate_bytes_per_s=rate_bytes_per_s, max_bytes=max_bytes)
        )
        if alloc.held >= max_bytes and full_since is None:
            full_since = now
            say(f"holding {alloc.held / MIB:.1f} MiB after {now - start:.1f}s")
        if full_since is not None and hold_s is not None and now - full_since >= hold_s:
            return alloc
        sleep(step_s)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--rate-mib-per-s",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="How fast the working set grows, in MiB per second.",
)
@click.option(
    "--max-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=100.0,
    show_default=True,
    help="Working set to reach and then hold, in MiB.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Working set to reach in bytes, instead of --max-mib (agnhost stress's --mem-total, "
    "so a pod can pass its limit from the downward API: --max-bytes $(MEMORY_LIMIT)).",
)
@click.option(
    "--step-ms",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Interval between allocations, in milliseconds.",
)
@click.option(
    "--hold-seconds",
    type=click.FloatRange(min=0),
    default=None,
    help="Exit 0 this long after reaching --max-mib (default: hold until SIGTERM).",
)
def main(
    rate_mib_per_s: float,
    max_mib: float,
    max_bytes: int | None,
    step_ms: int,
    hold_seconds: float | None,
) -> None:
    """Allocate and touch memory at a steady rate up to a maximum, then hold it.

    SIGTERM or SIGINT ends it at once with exit code 0: SIGTERM is what the kubelet sends
    first when it stops a container, so a pod's graceful deletion never waits for the SIGKILL.
    """
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    wanted = max_bytes if max_bytes is not None else int(max_mib * MIB)
    max_bytes = wanted // PAGE * PAGE or PAGE
    print(
        f"allocating {max_bytes / MIB:.1f} MiB at {rate_mib_per_s:g} MiB/s",
        flush=True,
    )
    try:
        run(
            rate_bytes_per_s=rate_mib_per_s * MIB,
            max_bytes=max_bytes,
            step_s=step_ms / 1000,
            hold_s=hold_seconds,
            say=lambda msg: print(msg, flush=True),
        )
    except _Terminated:
        print("terminated, exiting", flush=True)
    except MemoryError:
        print("error: out of memory", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
