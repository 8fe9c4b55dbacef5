"""A fake clock: time that moves only when the test says so.

``now`` is the clock (``Evictor(clock=c.now, sleep=c.sleep)``, a scheduling queue's or the
eviction manager's ``now``); ``step`` (or ``advance``) moves it. ``sleep`` records what was asked
(``requested``) and returns once the clock has been moved past its end, so a test can hold a
retry on a 10 s ``Retry-After`` for as long as it likes, check that nothing went out meanwhile,
then let it go — without waiting 10 s.
"""

from __future__ import annotations

import asyncio

from tests.support.wait import until

__all__ = ["T0", "FakeClock"]

T0 = 1_700_000_000.0  # a whole second, so backoff windows are easy to reason about


class FakeClock:
    def __init__(self, t: float = T0) -> None:
        self.t = t
        self.requested: list[float] = []
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.t

    def step(self, seconds: float) -> None:
        """Move the clock on; the sleeps it has passed the end of return."""
        self.t += seconds
        for due, fut in self._sleepers:
            if due <= self.t and not fut.done():
                fut.set_result(None)

    advance = step

    async def sleep(self, seconds: float) -> None:
        self.requested.append(seconds)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self.t + seconds, fut)
        self._sleepers.append(entry)
        try:
            await (fut if seconds > 0 else asyncio.sleep(0))
        finally:
            self._sleepers.remove(entry)

    @property
    def sleeping(self) -> int:
        return len(self._sleepers)

    async def asleep(self, count: int = 1) -> None:
        """Until ``count`` sleeps are pending (the code under test is waiting on this clock)."""
        await until(lambda: len(self._sleepers) == count, timeout=30.0)
