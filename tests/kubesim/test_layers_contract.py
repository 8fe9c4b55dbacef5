"""kubesim's layers contract (``kubesim-layers`` in pyproject.toml, run by ``make lint``) catches
an import that goes up a layer, or a module that has no layer.

``make lint`` shows the real tree keeps it; this shows it would notice if the tree did not. The
contract is copied as it stands into a small ``kubesim`` whose modules are exactly the ones the
contract names, each importing the module below it — which must pass — and then one wrong
import is planted at a time, at module level, inside a function or under ``TYPE_CHECKING``.
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
[CONTRACT] = [c for c in CONFIG["contracts"] if c["id"] == "kubesim-layers"]
# the modules of each layer, top first
LAYERS = [[name.strip() for name in layer.split(":")] for layer in CONTRACT["layers"]]

FORMS = {
    "top": "import kubesim.{target}\n",
    "from": "from kubesim import {target} as planted\n",
    "function": "def planted():\n    import kubesim.{target}\n",
    "type_checking": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kubesim.{target}\n"
    ),
}


def _fixture(root: Path, planted: tuple[str, str] | None = None, extra: str = "") -> Path:
    """The layers' modules; each imports the first module of the layer below it."""
    package = root / "kubesim"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    for upper, lower in zip(LAYERS, [*LAYERS[1:], []], strict=True):
        for name in upper:
            text = f"import kubesim.{lower[0]}\n" if lower else ""
            (package / f"{name}.py").write_text(text + "X = 1\n", encoding="utf-8")
    if planted is not None:
        module, text = planted
        path = package / f"{module}.py"
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    if extra:
        (package / f"{extra}.py").write_text("X = 1\n", encoding="utf-8")
    lines = ["[tool.importlinter]", 'root_packages = ["kubesim"]', ""]
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
    """Composition on top, core at the bottom, as ARCHITECTURE.md draws them."""
    assert CONTRACT["containers"] == ["kubesim"]
    assert CONTRACT["exhaustive"] is True
    assert LAYERS[0][0] == "sim"
    assert "cluster" in LAYERS[1] and "scheduling" in LAYERS[1]
    assert [layer[0] for layer in LAYERS[2:]] == ["endpoints", "plugins", "registry", "core"]
    real = {p.stem for p in (ROOT / "kubesim").iterdir() if p.suffix == ".py" or p.is_dir()}
    named = {name for layer in LAYERS for name in layer}
    assert named == real - {"__init__", "__pycache__"}


def test_imports_down_the_layers_pass(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("importer", "imported", "form"),
    [
        ("core", "registry", "top"),
        ("registry", "plugins", "function"),
        ("plugins", "endpoints", "type_checking"),
        ("endpoints", "controllers", "from"),
        ("cluster", "sim", "type_checking"),
        ("scheduling", "sim", "function"),
        ("core", "sim", "from"),
    ],
)
def test_an_import_up_a_layer_breaks_the_contract(
    tmp_path: Path, importer: str, imported: str, form: str
) -> None:
    text = FORMS[form].format(target=imported)
    done = _lint(_fixture(tmp_path, (importer, text)))
    assert done.returncode == 1, done.stdout + done.stderr
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    assert CONTRACT["name"] in broken
    assert f"kubesim.{importer} -> kubesim.{imported}" in broken


def test_a_module_without_a_layer_breaks_the_contract(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path, extra="stray"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "kubesim.stray" in done.stdout
