"""The brake: at most N evictions in any 60 s, so a wrong reading cannot empty the node. The loop
applies it (``--max-evictions-per-minute``); this module only counts.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import Final

from agent.eviction.types import Clock

__all__ = ["BRAKE_WINDOW_SECONDS", "DEFAULT_MAX_EVICTIONS_PER_MINUTE", "EvictionBrake", "Slot"]

BRAKE_WINDOW_SECONDS: Final = 60.0
# Above the kubelet's own pace (about 6 a minute), so the brake never makes the agent slower
# than the kubelet by default; a misreading costs at most 10 pods a minute (hard thresholds aside).
DEFAULT_MAX_EVICTIONS_PER_MINUTE: Final = 10


@dataclass(frozen=True, slots=True)
class Slot:
    """One eviction let through: when, and whether it was forced past a full window."""

    id: int
    at: float
    forced: bool = False


class EvictionBrake:
    """Counts the evictions let through in a sliding window; time from the injected clock, nothing
    here sleeps.

    The kubelet has an accidental brake — a 10 s loop and a 30 s wait for each evicted pod's cleanup
    hold it to about six evictions a minute. The agent syncs every second and reacts to PSI, so if
    its readings go wrong (a cgroup file misread, a capacity of 0, a kubelet summary that claims
    every emptyDir is over its limit) nothing but this bounds how fast it evicts.

    - a sliding window of ``window`` seconds (60) holds the times of the evictions let through;
      ``acquire`` takes a slot when fewer than ``limit`` are in the window, else refuses (the
      decision is held back: the caller skips it, and a later sync with fresh stats decides again);
    - ``acquire(force=True)`` always takes a slot: the loop forces it for hard thresholds, which
      still proceed at the core's pace of one pod per sync (each followed by the wait for that pod
      to be gone) — a node running out of memory is worse than one eviction too many. Forced slots
      count in the window, so soft and local-storage evictions stay held while hard ones run;
    - ``release`` gives a slot back when the action did not evict (failed, refused, blocked, dry
      run): the brake counts evictions, not attempts;
    - ``limit`` 0 means no brake.

    Invariant (property-tested): without forced slots, no 60 s window ever holds more than ``limit``
    slots.
    """

    def __init__(self, limit: int, clock: Clock, *, window: float = BRAKE_WINDOW_SECONDS) -> None:
        if limit < 0:
            raise ValueError(f"eviction brake limit must be >= 0, got {limit}")
        if not window > 0:
            raise ValueError(f"eviction brake window must be > 0, got {window}")
        self.limit = limit
        self.clock = clock
        self.window = window
        self._slots: deque[Slot] = deque()
        self._ids = itertools.count(1)

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def _expire(self, now: float) -> None:
        # a slot taken at t counts while now - t < window: [t, t + window)
        while self._slots and now - self._slots[0].at >= self.window:
            self._slots.popleft()

    def in_window(self) -> int:
        """Evictions counted in the window ending now."""
        self._expire(self.clock.now())
        return len(self._slots)

    def acquire(self, *, force: bool = False) -> Slot | None:
        """A slot for one eviction now; None when the window is full (and not forced)."""
        now = self.clock.now()
        if not self.enabled:
            return Slot(next(self._ids), now, forced=False)
        self._expire(now)
        full = len(self._slots) >= self.limit
        if full and not force:
            return None
        slot = Slot(next(self._ids), now, forced=full)
        if self._slots and now < self._slots[-1].at:  # a clock stepping back: keep order
            slot = Slot(slot.id, self._slots[-1].at, slot.forced)
        self._slots.append(slot)
        return slot

    def release(self, slot: Slot) -> None:
        """Give back a slot whose action evicted nothing."""
        for i, s in enumerate(self._slots):
            if s.id == slot.id:
                del self._slots[i]
                return

    def retry_after(self) -> float:
        """Seconds until a slot frees (0 when one is free now)."""
        now = self.clock.now()
        self._expire(now)
        if not self.enabled or len(self._slots) < self.limit:
            return 0.0
        return max(self._slots[len(self._slots) - self.limit].at + self.window - now, 0.0)
