"""The import contract in pyproject.toml (``[tool.importlinter]``, run by ``make lint``) catches a
wrong import between our packages.

``make lint`` shows the real tree keeps the contract; this shows the contract would notice if
it did not. Its package rules are copied into a small tree of five packages that import exactly
what the rule allows — which must pass — and then one wrong import is planted at a time, at
module level, inside a function or under ``TYPE_CHECKING``: import-linter must fail and name
the rule that was broken.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "importlinter"
]
# the contracts on which package may import which (kubesim's layers are checked on the real tree)
PACKAGE_CONTRACTS = [c for c in CONFIG["contracts"] if c["id"].startswith("packages-")]
ALLOWED = {
    "kube": [],
    "scheduler": ["kube"],
    "evictor": ["scheduler", "kube"],
    "agent": ["evictor", "kube"],
    "kubesim": ["scheduler", "kube"],
}


def _toml(value: object) -> str:
    return json.dumps(value)  # strings, booleans and lists of strings read the same in TOML


def _fixture(root: Path, planted: str = "") -> Path:
    """The five packages, each module ``m`` importing what ALLOWED lets it (and ``planted``)."""
    for package, allowed in ALLOWED.items():
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("", encoding="utf-8")
        lines = [f"import {other}.m" for other in allowed]
        (root / package / "m.py").write_text("\n".join([*lines, "X = 1", ""]), encoding="utf-8")
    if planted:
        module, text = planted.split(":", 1)
        path = root / Path(*module.split(".")).with_suffix(".py")
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    lines = ["[tool.importlinter]", f"root_packages = {_toml(list(ALLOWED))}", ""]
    for contract in PACKAGE_CONTRACTS:
        lines.append("[[tool.importlinter.contracts]]")
        lines += [f"{key} = {_toml(value)}" for key, value in contract.items()]
        lines.append("")
    (root / "pyproject.toml").write_text("\n".join(lines), encoding="utf-8")
    return root


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contract_covers_every_package() -> None:
    assert {c["id"] for c in PACKAGE_CONTRACTS} >= {
        f"packages-{p}" for p in ("kube", "scheduler", "evictor", "agent", "kubesim")
    }
    assert set(CONFIG["root_packages"]) == set(ALLOWED)


def test_what_the_rule_allows_passes(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(PACKAGE_CONTRACTS)} kept, 0 broken." in done.stdout


FORMS = {
    "top": "import {target}\n",
    "from": "from {package} import m as planted\n",
    "function": "def planted():\n    import {target}\n",
    "type_checking": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import {target}\n",
}


@pytest.mark.parametrize(
    ("importer", "imported", "form"),
    [
        ("kube", "scheduler", "top"),
        ("kube", "agent", "function"),
        ("scheduler", "evictor", "type_checking"),
        ("scheduler", "kubesim", "top"),
        ("evictor", "agent", "from"),
        ("evictor", "kubesim", "function"),
        ("agent", "scheduler", "top"),
        ("agent", "kubesim", "type_checking"),
        ("kubesim", "evictor", "from"),
        ("kubesim", "agent", "function"),
    ],
)
def test_a_wrong_import_breaks_its_rule(
    tmp_path: Path, importer: str, imported: str, form: str
) -> None:
    text = FORMS[form].format(target=f"{imported}.m", package=imported)
    done = _lint(_fixture(tmp_path, f"{importer}.m:{text}"))
    assert done.returncode == 1, done.stdout + done.stderr
    [contract] = [c for c in PACKAGE_CONTRACTS if c["id"] == f"packages-{importer}"]
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    section = broken[broken.index(contract["name"]) :]
    assert f"{importer} is not allowed to import {imported}" in section
    assert f"{importer}.m -> {imported}.m" in section
