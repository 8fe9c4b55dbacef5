"""Progress hooks of an ``Evictor``: a base class whose methods do nothing.

Kept apart from ``evictor.client`` so that the drain helper and the CLI can subclass it without
importing kubernetes-asyncio (``evict --help`` must stay fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evictor.result import EvictionResult

__all__ = ["EvictionListener"]


class EvictionListener:
    """Hooks for progress output; override the ones you need."""

    def attempt(self, namespace: str, name: str, attempt: int) -> None:
        """Called before every eviction/delete request of one pod."""

    def retry(self, result: EvictionResult, wait: float) -> None:
        """A retryable answer; the next attempt comes after at most ``wait`` seconds."""

    def blocked(self, result: EvictionResult, wait: float) -> None:
        """Waiting for a PodDisruptionBudget to reopen, for at most ``wait`` seconds."""
