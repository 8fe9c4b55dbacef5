"""A benchmark is run as a script (``python bench/X.py``), which puts bench/ first on the
import path: a file there named like a standard-library module would be imported in its
place by every library that needs it (bench/queue.py once stood in for ``queue``, which
urllib3 imports under kubernetes-asyncio)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_no_benchmark_is_named_like_a_standard_library_module() -> None:
    names = {p.stem for p in BENCH.glob("*.py")} | {p.name for p in BENCH.iterdir() if p.is_dir()}
    assert names, BENCH
    assert sorted(names & sys.stdlib_module_names) == []
