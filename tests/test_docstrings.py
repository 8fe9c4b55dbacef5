"""Module docstrings say why in a few lines; the detail lives on the class or function it
describes, or in ARCHITECTURE.md when it is about layout.

``too_long`` reads only each module's first statement (tokenized up to its end, not the whole
file parsed), so the walk over every module stays cheap; a planted tree shows that it names
each module over its limit and passes the ones at it.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
FOLDERS: Final = ("kube", "scheduler", "kubesim", "evictor", "agent", "bench", "examples", "deploy")
MODULE_LIMIT: Final = 8
PACKAGE_LIMIT: Final = 12  # an ``__init__.py`` may map its package's modules
_SKIPPED: Final = frozenset({
    tokenize.ENCODING,
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
})  # fmt: skip


def module_docstring(source: str) -> str | None:
    """The module docstring as ``ast.get_docstring`` gives it, from the first statement alone."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        if token.type in _SKIPPED:
            continue
        if token.type != tokenize.STRING and token.string != "(":
            return None  # only a string, bare or parenthesised, can open a docstring
        for end in tokens:
            if end.type in {tokenize.NEWLINE, tokenize.ENDMARKER}:
                head = "".join(source.splitlines(keepends=True)[: end.end[0]])
                return ast.get_docstring(ast.parse(head))
        return None
    return None


def too_long(root: Path = ROOT, folders: tuple[str, ...] = FOLDERS) -> list[str]:
    """Each module under ``folders`` whose docstring is longer than its limit, with its length."""
    out: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            doc = module_docstring(path.read_text(encoding="utf-8"))
            lines = len(doc.splitlines()) if doc else 0
            limit = PACKAGE_LIMIT if path.name == "__init__.py" else MODULE_LIMIT
            if lines > limit:
                out.append(f"{path.relative_to(root)}: {lines} lines (at most {limit})")
    return out


def test_every_module_docstring_is_short() -> None:
    assert too_long() == []


def test_the_walk_reads_every_package() -> None:
    """The walk finds the modules, and reads docstrings as ``ast`` does."""
    for folder in FOLDERS:
        assert any((ROOT / folder).rglob("*.py")), folder
    path = ROOT / "scheduler" / "plugins" / "registry.py"
    source = path.read_text(encoding="utf-8")
    assert module_docstring(source) == ast.get_docstring(ast.parse(source))
    assert module_docstring(source)


def _doc(lines: int) -> str:
    body = "\n".join(f"line {i}" for i in range(1, lines + 1))
    return f'"""{body}\n"""\n\nVALUE = 1\n'


def _joined(lines: int) -> str:
    return "(\n" + "".join(f' "line {i}\\n"\n' for i in range(1, lines + 1)) + ")\n"


def test_a_planted_long_docstring_is_named(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": _doc(13),  # over the package limit
        "pkg/ok/__init__.py": _doc(12),  # at it
        "pkg/long.py": "#!/usr/bin/env python3\n# a comment first\n\n" + _doc(9),
        "pkg/at_limit.py": _doc(8),
        "pkg/plain.py": "VALUE = 1\n",
        "pkg/joined.py": _joined(9),  # parenthesised, implicitly concatenated
        "pkg/not_a_docstring.py": '"""a string""".join([])\n' + "\n".join(["x = 1"] * 20),
        "pkg/__pycache__/cached.py": _doc(20),
        "other/long.py": _doc(30),  # not a folder asked for
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert too_long(tmp_path, ("pkg",)) == [
        "pkg/__init__.py: 13 lines (at most 12)",
        "pkg/joined.py: 9 lines (at most 8)",
        "pkg/long.py: 9 lines (at most 8)",
    ]
    for name, text in files.items():
        assert module_docstring(text) == ast.get_docstring(ast.parse(text)), name
