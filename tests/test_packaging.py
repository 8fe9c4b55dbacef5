"""Packaging facts that keep ``pip install`` quiet and the installed package complete.

``project.license`` as a TOML table makes setuptools ≥ 77 print deprecation warnings on every
install; the SPDX string form needs setuptools ≥ 77 (PEP 639), so the build requirement must
ask for it. The strict decoder reads ``scheduler/data/schema.json`` at run time, so the file
must be package data. (Building a wheel needs the network for the build requirements, so this
checks the declarations, not a build.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    [setuptools] = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    match = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert match is not None and int(match[1]) >= 77
    assert not any(
        c.startswith("License ::") for c in PYPROJECT["project"].get("classifiers", [])
    )  # PEP 639 forbids license classifiers next to an SPDX expression


def test_schema_data_is_shipped() -> None:
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert "data/*.json" in data["scheduler"]
    assert (ROOT / "scheduler" / "data" / "schema.json").is_file()


def test_console_scripts_and_module_aliases_exist() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert scripts == {
        "evict": "evictor.cli:run",
        "eviction-agent": "agent.cli:main",
        "kubesim": "kubesim.cli:main",
    }
    for package in ("scheduler", "kubesim", "evictor", "agent"):
        assert (ROOT / package / "__main__.py").is_file()


def test_the_version_has_one_source() -> None:
    from importlib.metadata import version

    from scheduler.cliutil import PACKAGE, VERSION, user_agent

    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "scheduler.cliutil.VERSION"
    }
    assert version(PACKAGE) == VERSION  # the installed metadata came from it
    assert user_agent("evict").startswith(f"evict/v{VERSION} (")
