"""The ``evictor-pure`` contract in pyproject.toml (run by ``make lint``) catches an API module
reaching the drain planner or kubectl's pod filters.

``make lint`` shows the real tree keeps it; this shows it would notice if the tree did not. The
contract is copied as it stands into a small ``evictor`` whose modules import what the real
ones may — the helper and the client the API room, the planner the filters — which must pass;
then one wrong import is planted at a time: the API client at module level, the API room in a
function, under ``TYPE_CHECKING``, or through the drain helper.
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
[CONTRACT] = [c for c in CONFIG["contracts"] if c["id"] == "evictor-pure"]

# module -> what it imports, as the real tree allows
TREE = {
    "evictor/__init__.py": "",
    "evictor/api/__init__.py": "",
    "evictor/api/calls.py": "import aiohttp\nimport kubernetes_asyncio\n",
    "evictor/client.py": "import evictor.api.calls\n",
    "evictor/clusterread.py": "import evictor.api.calls\nimport evictor.plan.view\n",
    "evictor/drain/__init__.py": "",
    "evictor/drain/filters.py": "import kube.objects\n",
    "evictor/drain/order.py": "import kube.objects\n",
    "evictor/drain/helper.py": "import evictor.api.calls\nimport evictor.drain.filters\n",
    "evictor/plan/__init__.py": "",
    "evictor/plan/view.py": "import kube.objects\n",
    "evictor/plan/play.py": "import evictor.drain.filters\nimport evictor.drain.order\n",
    "kube/__init__.py": "",
    "kube/objects.py": "",
}


def _fixture(root: Path, planted: tuple[str, str] | None = None) -> Path:
    for name, text in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "X = 1\n", encoding="utf-8")
    if planted is not None:
        module, text = planted
        path = root / Path(*module.split(".")).with_suffix(".py")
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    lines = [
        "[tool.importlinter]",
        'root_packages = ["evictor", "kube"]',
        f"include_external_packages = {json.dumps(CONFIG['include_external_packages'])}",
        "",
        "[[tool.importlinter.contracts]]",
        *(f"{key} = {json.dumps(value)}" for key, value in CONTRACT.items()),
    ]
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


def test_the_contract_keeps_the_planner_and_the_filters_from_the_api() -> None:
    assert set(CONTRACT["source_modules"]) == {
        "evictor.plan",
        "evictor.drain.filters",
        "evictor.drain.order",
    }
    assert set(CONTRACT["forbidden_modules"]) >= {"evictor.api", "aiohttp", "kubernetes_asyncio"}
    assert not CONTRACT.get("allow_indirect_imports", False)


def test_the_allowed_imports_pass(tmp_path: Path) -> None:
    done = _lint(_fixture(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 1 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("importer", "text", "rule", "chain"),
    [
        # the API client in the planner, at module level
        ("evictor.plan.play", "import aiohttp\n", "evictor.plan -/> aiohttp", "aiohttp"),
        # the API room in the filter chain, inside a function
        (
            "evictor.drain.filters",
            "def planted():\n    import evictor.api.calls\n",
            "evictor.drain.filters -/> evictor.api",
            "evictor.api.calls",
        ),
        # the client library's models for the type checker only
        (
            "evictor.drain.order",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kubernetes_asyncio\n",
            "evictor.drain.order -/> kubernetes_asyncio",
            "kubernetes_asyncio",
        ),
        # the API room through the drain helper
        (
            "evictor.plan.view",
            "from evictor.drain import helper as planted\n",
            "evictor.plan -/> evictor.api",
            "evictor.drain.helper",
        ),
    ],
)
def test_an_api_module_reaching_a_pure_one_breaks_the_contract(
    tmp_path: Path, importer: str, text: str, rule: str, chain: str
) -> None:
    """``rule`` is ``source -/> forbidden``; ``chain`` the module the planted import names."""
    source, forbidden = rule.split(" -/> ")
    done = _lint(_fixture(tmp_path, (importer, text)))
    assert done.returncode == 1, done.stdout + done.stderr
    broken = done.stdout[done.stdout.index("Broken contracts") :]
    assert f"{source} is not allowed to import {forbidden}" in broken
    assert f"{importer} -> {chain}" in broken
