"""The scheduler's layers contract (``scheduler-layers`` in pyproject.toml, run by ``make lint``)
catches an import that goes up a layer, and a module without a layer.

``make lint`` shows the real tree keeps it; this shows it would notice if the tree did not. The
contract is copied as it stands into a small ``scheduler`` whose modules are the ones it names,
each importing the first module of the layer below (and the framework the default profile's
weights, the import the contract lets through) — which must pass — then one wrong import is
planted at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]
[CONTRACT] = [c for c in CONFIG["contracts"] if c["id"] == "scheduler-layers"]
LAYERS = [[name.strip() for name in layer.split(":")] for layer in CONTRACT["layers"]]


def _fixture(root: Path, planted: tuple[str, str] | None = None, extra: str = "") -> Path:
    package = root / "scheduler"
    (package / "plugins").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "plugins" / "defaults.py").write_text("X = 1\n", encoding="utf-8")
    for upper, lower in zip(LAYERS, [*LAYERS[1:], []], strict=True):
        for name in upper:
            text = f"import scheduler.{lower[0]}\n" if lower else ""
            if name == "framework":
                text += "import scheduler.plugins.defaults\n"
            plugins = package / "plugins" / "__init__.py"
            path = plugins if name == "plugins" else package / f"{name}.py"
            path.write_text(text + "X = 1\n", encoding="utf-8")
    if planted is not None:
        module, text = planted
        path = package / f"{module}.py"
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    if extra:
        (package / f"{extra}.py").write_text("X = 1\n", encoding="utf-8")
    lines = ["[tool.importlinter]", 'root_packages = ["scheduler"]', ""]
    lines.append("[[tool.importlinter.contracts]]")
    lines += [f"{key} = {json.dumps(value)}" for key, value in CONTRACT.items()]
    (root / "pyproject.toml").write_text("\n".join([*lines, ""]), encoding="utf-8")
    return root


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_layers_are_the_architectures() -> None:
    """The old names on top, the cycle, the configuration (profiles built from plugins), the
    queueing-hint table (the plugins' hints gathered for the queue) beside the feature gates
    modelled, the plugins and the
    queue, the framework, the snapshot, as ARCHITECTURE.md draws them; every
    module of the package has a layer."""
    assert CONTRACT["exhaustive"] is True
    assert "objects" in LAYERS[0] and "filters" in LAYERS[0] and "score" in LAYERS[0]
    assert LAYERS[3] == ["schedule", "preemption", "eventhandlers"]
    assert LAYERS[4] == ["config"]
    assert LAYERS[5] == ["hints", "features"]
    assert LAYERS[6] == ["plugins", "queue", "priority"]
    assert LAYERS[-2:] == [["framework"], ["snapshot"]]
    real = {p.stem for p in (ROOT / "scheduler").iterdir() if p.suffix == ".py" or p.is_dir()}
    named = {name for layer in LAYERS for name in layer}
    assert named == real - {"__init__", "__pycache__"}


def test_imports_down_the_layers_pass(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("importer", "text", "imported"),
    [
        # the queue reaching for the cycle, in a function
        ("queue", "def planted():\n    import scheduler.schedule\n", "schedule"),
        # the framework knowing the queue, for the type checker only
        (
            "framework",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import scheduler.queue\n",
            "queue",
        ),
        # our own code using an old name kept for users
        ("schedule", "from scheduler import filters as planted\n", "filters"),
    ],
)
def test_an_import_up_a_layer_breaks_the_contract(
    tmp_path: Path, importer: str, text: str, imported: str
) -> None:
    done = _lint(_fixture(tmp_path, (importer, text)))
    assert done.returncode == 1, done.stdout + done.stderr
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    assert f"scheduler.{importer} -> scheduler.{imported}" in broken


def test_a_module_without_a_layer_breaks_the_contract(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path, extra="stray"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "scheduler.stray" in done.stdout
