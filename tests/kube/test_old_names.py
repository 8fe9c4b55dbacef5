"""The old ``scheduler.*`` module names of the Kubernetes basics keep working (issue 21).

Users' code and the held-out suites import ``scheduler.objects``, ``scheduler.quantity`` and the
rest, and API.md names ``scheduler``'s public API: each old module must hand out the very
objects ``kube`` defines (the same class, so ``isinstance`` and ``except`` keep matching), and
every public name of the new module must be reachable under the old one.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MOVED = ("apierrors", "cliutil", "duration", "labels", "objects", "quantity", "schemagen", "strict")


def _public_top_level_names(module: str) -> set[str]:
    """Names a module defines at top level (not imports, not TypeVars), minus private ones."""
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            is_typevar = isinstance(node.value, ast.Call) and getattr(
                node.value.func, "id", ""
            ) in ("TypeVar", "ParamSpec")
            names.update(t.id for t in node.targets if isinstance(t, ast.Name) and not is_typevar)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("name", MOVED)
def test_old_module_hands_out_the_same_objects(name: str) -> None:
    new = importlib.import_module(f"kube.{name}")
    old = importlib.import_module(f"scheduler.{name}")
    expected = _public_top_level_names(f"kube.{name}") | set(new.__all__)
    missing = expected - set(old.__all__)
    assert not missing, f"scheduler.{name} does not re-export {sorted(missing)}"
    # the time helpers scheduler.objects held now live in kube.times
    homes = [new, importlib.import_module("kube.times")]
    for attr in old.__all__:
        home = next((m for m in homes if hasattr(m, attr)), None)
        assert home is not None, f"scheduler.{name}.{attr} is defined nowhere in kube"
        assert getattr(old, attr) is getattr(home, attr), f"scheduler.{name}.{attr}"


def test_critical_pod_helpers_keep_their_scheduler_priority_names() -> None:
    import kube.critical
    import scheduler.priority

    for attr in kube.critical.__all__:
        assert getattr(scheduler.priority, attr) is getattr(kube.critical, attr), attr
        assert attr in scheduler.priority.__all__, attr


def test_package_level_names_come_from_kube() -> None:
    import kube.apierrors
    import kube.labels
    import kube.objects
    import kube.quantity
    import scheduler

    assert scheduler.Pod is kube.objects.Pod
    assert scheduler.LabelSelector is kube.labels.LabelSelector
    assert scheduler.StatusError is kube.apierrors.StatusError
    assert scheduler.parse_quantity is kube.quantity.parse_quantity
