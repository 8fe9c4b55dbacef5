"""Import circles among our own modules, found from the source (the AST), not by importing.

Every import statement counts — at module level, under ``if TYPE_CHECKING:``, inside functions —
because a circle held by any of them is still a knot a reader must untie, and a function-level
import is usually a circle someone hid. An import names the module it reaches: ``import a.b.c``
and ``from a.b import c`` reach ``a.b.c`` when that is one of our modules, else the longest
prefix that is one (``from a.b import name`` reaches ``a.b``); relative imports are resolved
against the importing module's package. Importing ``a.b.c`` does not count as importing the
package ``a`` (Python runs ``a/__init__.py`` then, but a package that re-exports its modules
would otherwise always be in a circle with them).

``import_circles`` returns each strongly connected component of more than one module;
``describe`` names one path around it with the file and line of every import on the way.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Graph", "describe", "import_circles", "module_graph"]


@dataclass(frozen=True, slots=True)
class Graph:
    """``edges[a][b]``: the lines of ``a``'s file that import ``b``; ``files[a]``: its path."""

    files: Mapping[str, Path]
    edges: Mapping[str, Mapping[str, Sequence[int]]]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _reached(name: str, modules: Mapping[str, Path]) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterable[tuple[str, int]]:
    """(dotted name reached, line) for every import statement anywhere in the tree."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                parent = ".".join([*base, *([node.module] if node.module else [])])
            else:
                parent = node.module or ""
            for alias in node.names:
                yield f"{parent}.{alias.name}", node.lineno


def module_graph(root: Path, packages: Sequence[str]) -> Graph:
    files: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            files[_module_name(root, path)] = path
    edges: dict[str, dict[str, list[int]]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out: dict[str, list[int]] = {}
        for name, line in _imports(tree, module, path.name == "__init__.py"):
            target = _reached(name, files)
            if target is None or target == module:
                continue
            lines = out.setdefault(target, [])
            if line not in lines:
                lines.append(line)
        edges[module] = out
    return Graph(files, edges)


def import_circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph.edges):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.edges.get(nxt, {}))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def describe(graph: Graph, circle: Sequence[str], root: Path) -> str:
    """One way around ``circle``, each step with the importing file and line."""
    members = set(circle)
    start = circle[0]
    # breadth-first from start back to start, inside the component
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier and start not in previous:
        following = []
        for node in frontier:
            for target in sorted(graph.edges[node]):
                if target in members and target not in previous:
                    previous[target] = node
                    following.append(target)
        frontier = following
    path = [start]
    node = previous[start]
    while node != start:
        path.append(node)
        node = previous[node]
    path.append(start)
    path.reverse()
    steps = []
    for a, b in itertools.pairwise(path):
        lines = ", ".join(str(n) for n in graph.edges[a][b])
        steps.append(f"  {graph.files[a].relative_to(root)}:{lines} imports {b}")
    return f"circle of {len(circle)} modules ({', '.join(circle)}):\n" + "\n".join(steps)
