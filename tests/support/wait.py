"""Waiting until a state is reached: the one polling loop of the tests.

The condition is polled every ``step`` seconds of the wall clock and the wait fails after
``timeout`` seconds; both are bounds on a wait, not what a test measures (kubesim's time scale
or a fake clock decides how soon a state comes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["until", "until_sync"]

T = TypeVar("T")


async def until(
    check: Callable[[], T],
    *,
    timeout: float = 10.0,
    step: float = 0.01,
    what: str = "condition",
) -> T:
    """Poll ``check`` until it returns something truthy and return that; fail with ``what``
    and the last value after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:g} s; last value: {value!r}")
        await asyncio.sleep(step)


def until_sync(
    check: Callable[[], T],
    *,
    timeout: float = 10.0,
    step: float = 0.05,
    what: str = "condition",
) -> T:
    """``until`` for a test that is not a coroutine (it blocks the thread between polls)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:g} s; last value: {value!r}")
        time.sleep(step)
