"""A heap keyed by pod (``backend/heap.Heap``) built on ``heapq`` with lazy deletion.

kube's heap keeps an index per item so ``Delete`` and ``AddOrUpdate`` are O(log n). Here an
entry is ``[sort_key, seq, item]``: deleting or re-adding a pod clears ``item`` of its old
entry (O(1)) and the dead entry is skipped when it reaches the top. ``seq`` is unique, so
entries never compare their items and equal keys come out first-in first-out. The heap is
rebuilt when dead entries outnumber live ones, which keeps memory and the amortised cost of a
pop at O(log n).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

__all__ = ["KeyedHeap"]

T = TypeVar("T")

_COMPACT_MIN = 64


class KeyedHeap(Generic[T]):
    """Items keyed by a string, popped in ascending ``sort_key`` order."""

    __slots__ = ("_counter", "_entries", "_heap")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> T | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[2]

    def add_or_update(self, key: str, sort_key: tuple[Any, ...], item: T) -> None:
        """Insert ``item`` under ``key``, replacing (and re-ordering) any previous one."""
        old = self._entries.get(key)
        if old is not None:
            old[2] = None
        entry = [sort_key, next(self._counter), item, key]
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)
        self._maybe_compact()

    def delete(self, key: str) -> T | None:
        """Remove and return the item under ``key`` (None if absent)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        item: T = entry[2]
        entry[2] = None
        self._maybe_compact()
        return item

    def _drop_dead_top(self) -> None:
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)

    def peek(self) -> T | None:
        self._drop_dead_top()
        return self._heap[0][2] if self._heap else None

    def peek_key(self) -> tuple[Any, ...] | None:
        """The sort key of the head."""
        self._drop_dead_top()
        return self._heap[0][0] if self._heap else None

    def pop(self) -> T | None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            item = entry[2]
            if item is not None:
                del self._entries[entry[3]]
                return item  # type: ignore[no-any-return]
        return None

    def items(self) -> Iterator[T]:
        """Live items in insertion order (not heap order), like ``Heap.List``."""
        for entry in self._entries.values():
            yield entry[2]

    def _maybe_compact(self) -> None:
        heap = self._heap
        live = len(self._entries)
        if len(heap) > _COMPACT_MIN and len(heap) > 2 * live:
            self._heap = [e for e in heap if e[2] is not None]
            heapq.heapify(self._heap)
