"""The eviction client library and the kubectl-compatible ``evict`` CLI.

``from evictor import Evictor`` works, but the names are loaded on first use: the package must
stay light to import, because ``evict --help`` must not load kubernetes-asyncio.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DrainHelper",
    "DrainOptions",
    "EvictionListener",
    "EvictionResult",
    "Evictor",
    "Outcome",
    "PodDeleteOptions",
    "PodRef",
    "WaitOutcome",
    "get_pods_for_deletion",
]

_WHERE = {
    "DrainHelper": "evictor.drain.helper",
    "DrainOptions": "evictor.drain.filters",
    "get_pods_for_deletion": "evictor.drain.filters",
    "EvictionListener": "evictor.listener",
    "EvictionResult": "evictor.result",
    "Outcome": "evictor.result",
    "PodDeleteOptions": "evictor.deleteoptions",
    "Evictor": "evictor.client",
    "PodRef": "evictor.client",
    "WaitOutcome": "evictor.client",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evictor' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
