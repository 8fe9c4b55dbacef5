"""Every file, folder and module ARCHITECTURE.md names exists: the map leads nowhere else.

``names`` reads the names as a newcomer reads them, ``missing`` looks each one up; a planted
name of every form must be reported, so the check cannot pass by reading nothing.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("kube", "scheduler", "evictor", "agent", "kubesim")
# the first component of a path in kubernetes/kubernetes, kubectl or cluster-autoscaler
UPSTREAM_PREFIXES: Final = (
    "pkg/",
    "cmd/",
    "staging/",
    "test/",
    "plugin/",
    "apiserver/",
    "apimachinery/",
    "cluster-autoscaler/",
)
_EXTENSIONS: Final = r"py|json|jsonl|toml|md|yaml|yml|txt|png|cfg|ini"
_PATHLIKE: Final = re.compile(rf"^[\w.<>-]+(?:/[\w.<>-]+)*(?:/|\.(?:{_EXTENSIONS}))$")
_DOTTED: Final = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+$")
_DRAWN: Final = re.compile(
    rf"(?<![\w./-])([A-Za-z_][\w.-]*(?:/[\w.-]+)*(?:/|\.(?:{_EXTENSIONS})))(?![\w/<-])"
)
_FOLDER_LIST: Final = re.compile(r"(?<![\w./-])([\w-]+(?:/[\w-]+)*/)\s*\(")
_GUTTER: Final = re.compile(r"^[\s│▼▲├└─╌]*")
_MODULE_ITEM: Final = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class Name:
    text: str  # as written
    kind: str  # "path", "dotted", "item"
    base: str  # the package folder of its section ("" for none)
    line: int


def _section_base(heading: str) -> str | None:
    """The package folder a heading is about, or None when it names none."""
    for span in re.findall(r"`([^`]+)`", heading):
        if span.endswith("/") and (ROOT / span).is_dir():
            return str(span)
    for package in PACKAGES:
        if re.search(rf"\b{package}\b", heading):
            return f"{package}/"
    return None


def names(text: str) -> list[Name]:
    """Every name of a file, folder or module in ``text`` (ARCHITECTURE.md's Markdown).

    * in prose and tables, a backticked path (``kube/data/schema.json``, ``cli/``) or a dotted
      name of one of our packages (``kube.objects``,
      ``scheduler.framework.DEFAULT_PLUGIN_WEIGHTS``: the module, then the attribute);
    * in a drawing (a fence without a language), every word that ends in ``/`` or in a file
      extension, and the lower-case module names listed in parentheses after a folder
      (``scheduling/ (loop, informers, api_calls, metrics)``), the list carried over the
      drawing's next lines when it wraps.

    Upstream paths (``pkg/…``, ``*.go``, the other repositories' folders) are not ours and are
    skipped by their prefix.
    """
    found: list[Name] = []
    base = ""
    level_bases: dict[int, str] = {}
    fence: str | None = None
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence is None and (heading := re.match(r"^(#+)\s+(.*)", line)):
            level = len(heading.group(1))
            level_bases = {k: v for k, v in level_bases.items() if k < level}
            named = _section_base(heading.group(2))
            if named is not None:
                level_bases[level] = named
            base = level_bases[max(level_bases)] if level_bases else ""
            continue
        if fence is None:
            for span in re.findall(r"`([^`]+)`", line):
                if _PATHLIKE.match(span) and not span.startswith(UPSTREAM_PREFIXES):
                    found.append(Name(span, "path", base, number))
                elif _DOTTED.match(span):
                    found.append(Name(span, "dotted", base, number))
        elif fence == "":
            for match in _DRAWN.finditer(line):
                word = match.group(1)
                if not word.startswith(UPSTREAM_PREFIXES):
                    found.append(Name(word, "path", base, number))
            for match in _FOLDER_LIST.finditer(line):
                folder = match.group(1)
                listed = _parenthesised(line[match.end() :], lines[number:])
                for item in re.split(r"[,;]", listed):
                    module = item.split(":", 1)[0].strip()
                    if _MODULE_ITEM.match(module):
                        found.append(Name(f"{folder}{module}", "item", base, number))
    return found


def _parenthesised(rest: str, following: list[str]) -> str:
    """The text up to the closing parenthesis, carried over the drawing's next lines (their
    gutter of rules and arrows left out) when the list wraps."""
    text, depth = "", 1
    for line in [rest, *(_GUTTER.sub("", f) for f in following)]:
        for i, char in enumerate(line):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                return text + line[:i]
        if line.startswith("```"):
            break
        text += line + " "
    return text


def _path_exists(path: str, base: str, root: Path) -> bool:
    """``path`` from the repository's root, then inside ``base`` (the package the section is
    about: its heading names it, or a backticked folder in the heading), then anywhere below
    ``base`` by its last components: a drawing says ``fit.py`` under ``noderesources/``
    without the whole path."""
    is_dir = path.endswith("/")
    stripped = path.rstrip("/")

    def fits(candidate: Path) -> bool:
        return candidate.is_dir() if is_dir else candidate.is_file()

    if fits(root / stripped) or (base and fits(root / base / stripped)):
        return True
    if not base:
        return False
    tail = tuple(stripped.split("/"))
    return any(
        p.parts[-len(tail) :] == tail and fits(p)
        for p in (root / base).rglob(tail[-1])
        if "__pycache__" not in p.parts
    )


def _dotted_exists(dotted: str, root: Path) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        folder = root.joinpath(*parts[:cut])
        if folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file():
            module, attributes = ".".join(parts[:cut]), parts[cut:]
            break
    else:
        return False
    if not attributes:
        return True
    value: object = importlib.import_module(module)
    for attribute in attributes:
        if not hasattr(value, attribute):
            return False
        value = getattr(value, attribute)
    return True


def missing(text: str, root: Path = ROOT) -> list[str]:
    """The names in ``text`` that lead nowhere, each with its line."""
    out: list[str] = []
    for name in names(text):
        if name.kind == "dotted":
            ok = _dotted_exists(name.text, root)
        elif name.kind == "item":
            ok = _path_exists(f"{name.text}.py", name.base, root) or _path_exists(
                f"{name.text}/", name.base, root
            )
        else:
            ok = _path_exists(name.text, name.base, root)
        if not ok:
            where = f" (in {name.base})" if name.base else ""
            out.append(f"line {name.line}: {name.text}{where}")
    return out


def _architecture() -> str:
    return (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_every_name_on_the_map_exists() -> None:
    assert missing(_architecture()) == []


def test_the_map_is_read_for_names_in_every_form() -> None:
    found = names(_architecture())
    kinds = {n.kind for n in found}
    assert kinds == {"path", "dotted", "item"}
    assert len(found) > 150  # drawings and prose alike, not a handful
    texts = {n.text for n in found}
    # one of each form, where the map has them today
    assert {"kube/data/schema.json", "kube.objects", "scheduling/loop"} <= texts
    assert any(n.text == "fit.py" and n.base == "scheduler/" for n in found)


def test_a_planted_missing_name_fails_in_every_form() -> None:
    before = len(missing(_architecture()))
    planted = _architecture() + "\n".join(
        [
            "",
            "## The evictor's inside, again",
            "",
            "The `cli/nosuch.py` module, `kube.nosuchmodule`, `kube.objects.NoSuchName`,",
            "`tests/nosuch_test.py` and `nosuchdir/`.",
            "",
            "```",
            " drain/ghost.py       a file in a drawing",
            " api/ (calls, nosuchmodule)",
            " ▼ plan/ (search, play,",
            " │ lost: the last)",
            " plan/missingdir/     a folder in a drawing",
            "```",
            "",
        ]
    )
    reported = "\n".join(missing(planted))
    for name in (
        "cli/nosuch.py",
        "kube.nosuchmodule",
        "kube.objects.NoSuchName",
        "tests/nosuch_test.py",
        "nosuchdir/",
        "drain/ghost.py",
        "api/nosuchmodule",
        "plan/lost",
        "plan/missingdir/",
    ):
        assert name in reported, name
    assert "api/calls" not in reported and "plan/search" not in reported  # the real ones are found
    assert len(missing(planted)) == before + 9


def test_upstream_paths_are_not_ours() -> None:
    text = "\n".join(
        [
            "## The evictor's inside",
            "kubectl's `pkg/drain` (`filters.go`), cluster-autoscaler's",
            "`cluster-autoscaler/simulator/`, kube-apiserver's `apiserver/pkg/storage`.",
            "```",
            " (eventhandlers.go)  pods/eviction  events.k8s.io  /metrics",
            "```",
        ]
    )
    assert names(text) == []
