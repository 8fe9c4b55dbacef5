"""Loading a benchmark of ``bench/`` as a module, for the tests that run it small.

``bench/`` is not a package: each benchmark runs as ``python bench/<name>.py``, or, when it is
a folder with a ``__main__.py``, as ``python bench/<name>``. Tests load them by path. The
module is registered in ``sys.modules`` before it runs (dataclasses and pickling find a class's
module by name, and a folder's modules import each other relative to it) and loaded once per
process, under ``bench_<name>``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["BENCH_DIR", "load_bench"]

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def load_bench(script: str) -> ModuleType:
    """``bench/<script>.py`` as a module, or the package ``bench/<script>/`` (``script``
    without the ``.py``)."""
    name = f"bench_{script}"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    folder = BENCH_DIR / script
    if folder.is_dir():
        spec = importlib.util.spec_from_file_location(
            name, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
    else:
        spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{script}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
