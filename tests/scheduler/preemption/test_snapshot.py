"""The Snapshot addition preemption relies on: per-snapshot caches held by weak reference."""

import gc
import weakref

from kube.objects import Node
from scheduler.snapshot import Snapshot


def test_snapshot_can_be_weakly_referenced_and_collected() -> None:
    snap = Snapshot.from_objects([Node("n1", allocatable={"cpu": 1000, "pods": 10})])
    cache: weakref.WeakKeyDictionary[Snapshot, int] = weakref.WeakKeyDictionary()
    cache[snap] = 1
    ref = weakref.ref(snap)
    assert cache[snap] == 1
    del snap
    gc.collect()
    assert ref() is None
    assert len(cache) == 0
