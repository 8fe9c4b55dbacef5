"""Backoff between retries: tenacity's wait strategies, driven by a plain loop.

The evictor's retries and the agent's pod watch are loops a reader follows top to bottom:
they count their own attempts and decide themselves whether to go on. What they
do not write themselves is the delay: tenacity's ``wait_*`` strategies compute it from a
``RetryCallState``, tenacity's public record of an attempt, which ``delay`` fills with the
attempt number the loop kept.
"""

from __future__ import annotations

from typing import Final

import tenacity

__all__ = ["RETRY_BACKOFF", "WATCH_BACKOFF", "delay"]

# Transport errors and 5xx of an eviction or delete: 0.2 s doubling, at most 5 s, plus up to
# 0.2 s of jitter so that a drain's retries do not arrive together.
RETRY_BACKOFF: Final = tenacity.wait_exponential_jitter(multiplier=0.2, max=5.0, jitter=0.2)
# A failed list or watch: 0.2 s doubling, at most 10 s, jitter 0.5 s.
WATCH_BACKOFF: Final = tenacity.wait_exponential_jitter(multiplier=0.2, max=10.0, jitter=0.5)


def delay(wait: tenacity.wait.wait_base, attempt: int) -> float:
    """Seconds ``wait`` asks for after the ``attempt``-th failed attempt (1-based)."""
    state = tenacity.RetryCallState(
        retry_object=tenacity.AsyncRetrying(), fn=None, args=(), kwargs={}
    )
    state.attempt_number = max(attempt, 1)
    return float(wait(state))
