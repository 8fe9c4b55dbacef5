"""Every module of ``kube`` is on the maps a reader starts from: ARCHITECTURE.md's table of the
packages and the package's own docstring. A module that is on neither is a helper nobody will
find before writing it again."""

from __future__ import annotations

import re
from pathlib import Path

import kube

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> set[str]:
    return {p.stem for p in (ROOT / "kube").glob("*.py") if p.stem != "__init__"}


def test_architecture_and_the_package_docstring_name_every_module() -> None:
    [row] = [
        line
        for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `kube/` |")
    ]
    in_table = set(re.findall(r"`kube\.(\w+)`", row))
    in_docstring = set(re.findall(r"``kube\.(\w+)``", kube.__doc__ or ""))
    modules = _modules()
    assert len(modules) > 10  # the glob found the package
    assert modules - in_table == set(), "missing from ARCHITECTURE.md's kube row"
    assert modules - in_docstring == set(), "missing from kube/__init__.py's docstring"
    assert in_table - modules == set() and in_docstring - modules == set(), "no such module"
