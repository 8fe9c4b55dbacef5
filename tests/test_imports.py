"""No import circle among our modules, counting every import.

The repository rule (ARCHITECTURE.md): a circle — through top-level, ``TYPE_CHECKING`` or
function-level imports alike — means no reader can take one module without the others. The
direction between packages is import-linter's job (``make lint``); circles inside a package are
this test's. ``PACKAGES`` is the one list of what is walked, kubesim included (its layers are a
contract of their own, ARCHITECTURE.md's "kubesim's layers").

The tests keep one rule of their own: no test module (``test_*.py``) and no ``conftest.py`` is
imported by another file of tests/. What tests share lives in tests/support; a test module
imported elsewhere would run its fixtures' and module-level code twice over, and a reader of
one test file could not tell what else depends on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.importgraph import Graph, describe, import_circles, module_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kube", "scheduler", "evictor", "agent", "kubesim")


def test_no_import_circle() -> None:
    graph = module_graph(ROOT, PACKAGES)
    assert len(graph.files) > 100  # the walk found the packages
    circles = import_circles(graph)
    assert not circles, "\n".join(describe(graph, c, ROOT) for c in circles)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_planted_circle_is_found_and_named(tmp_path: Path) -> None:
    """Three modules in a ring held by a function-level, a TYPE_CHECKING and a relative
    import: the report names each file and line on the way round."""
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/x.py": "def f():\n    import pkg.y\n",
            "pkg/y.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.z import Z\n"
            ),
            "pkg/z.py": "from . import x\nZ = 1\n",
            "pkg/leaf.py": "import pkg.x\n",  # reaches the ring, is not in it
        },
    )
    graph = module_graph(root, ["pkg"])
    assert import_circles(graph) == [["pkg.x", "pkg.y", "pkg.z"]]
    report = describe(graph, ["pkg.x", "pkg.y", "pkg.z"], root)
    assert report.splitlines() == [
        "circle of 3 modules (pkg.x, pkg.y, pkg.z):",
        "  pkg/x.py:2 imports pkg.y",
        "  pkg/y.py:3 imports pkg.z",
        "  pkg/z.py:1 imports pkg.x",
    ]


@pytest.mark.parametrize(
    ("files", "circles"),
    [
        # a package re-exporting its modules is not in a circle with them
        (
            {
                "p/__init__.py": "from p.a import A\n",
                "p/a.py": "from p.b import B\nA = 1\n",
                "p/b.py": "B = 1\n",
            },
            [],
        ),
        # from a package import a name: reaches the package's __init__
        (
            {"p/__init__.py": "from p.a import A\n", "p/a.py": "from p import B\nA = 1\n"},
            [["p", "p.a"]],
        ),
        # a relative import two levels up
        (
            {
                "p/__init__.py": "",
                "p/q/__init__.py": "",
                "p/q/a.py": "from ..b import f\n",
                "p/b.py": "def f():\n    from p.q import a\n",
            },
            [["p.b", "p.q.a"]],
        ),
        # a module importing itself is no circle
        ({"p/__init__.py": "", "p/a.py": "import p.a\n"}, []),
    ],
)
def test_what_counts_as_an_import(
    tmp_path: Path, files: dict[str, str], circles: list[list[str]]
) -> None:
    assert import_circles(module_graph(_tree(tmp_path, files), ["p"])) == circles


def imported_test_modules(graph: Graph, root: Path) -> list[str]:
    """``file:line imports module`` for every import of a test module or a conftest."""
    found = []
    for module, targets in graph.edges.items():
        for target, lines in targets.items():
            name = graph.files[target].name
            if name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")):
                where = graph.files[module].relative_to(root)
                found += [f"{where}:{line} imports {target}" for line in lines]
    return sorted(found)


def test_no_test_module_or_conftest_is_imported_by_another() -> None:
    graph = module_graph(ROOT, ["tests"])
    assert len(graph.files) > 200  # the walk found the tests
    assert imported_test_modules(graph, ROOT) == [], "move what they share to tests/support"


def test_an_imported_test_module_or_conftest_is_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/conftest.py": "",
            "tests/support/__init__.py": "",
            "tests/support/wait.py": "def until(): ...\n",
            "tests/a/__init__.py": "",
            "tests/a/conftest.py": "from tests.support.wait import until\n",
            "tests/a/test_x.py": "from tests.support import wait\nfrom .conftest import X\n",
            "tests/b/__init__.py": "",
            "tests/b/test_y.py": "def f():\n    from tests.a.test_x import g\n",
            "tests/b/test_z.py": "import tests.conftest\nfrom tests.a import test_x\n",
        },
    )
    assert imported_test_modules(module_graph(root, ["tests"]), root) == [
        "tests/a/test_x.py:2 imports tests.a.conftest",
        "tests/b/test_y.py:2 imports tests.a.test_x",
        "tests/b/test_z.py:1 imports tests.conftest",
        "tests/b/test_z.py:2 imports tests.a.test_x",
    ]
