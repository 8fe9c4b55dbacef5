"""Packaging facts that keep ``pip install`` quiet and the installed package complete.

``project.license`` as a TOML table makes setuptools ≥ 77 print deprecation warnings on every
install; the SPDX string form needs setuptools ≥ 77 (PEP 639), so the build requirement must
ask for it. The strict decoder reads ``kube/data/schema.json`` at run time, so the file
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
    assert "data/*.json" in data["kube"]
    assert (ROOT / "kube" / "data" / "schema.json").is_file()


def test_console_scripts_and_module_aliases_exist() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert scripts == {
        "evict": "evictor.cli:run",
        "kubectl-evict": "evictor.cli:run",  # the kubectl plugin (kubectl evict ...)
        "eviction-agent": "agent.cli:main",
        "kubesim": "kubesim.cli:main",
    }
    for package in ("scheduler", "kubesim", "evictor", "agent"):
        assert (ROOT / package / "__main__.py").is_file()


def test_the_version_has_one_source() -> None:
    from importlib.metadata import version

    from kube.cliutil import PACKAGE, VERSION, user_agent

    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kube.cliutil.VERSION"}
    assert version(PACKAGE) == VERSION  # the installed metadata came from it
    assert user_agent("evict").startswith(f"evict/v{VERSION} (")


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


def _pinned(lock: str) -> dict[str, str]:
    text = (ROOT / "requirements" / lock).read_text(encoding="utf-8")
    return {
        re.sub(r"[-_.]+", "-", m[1]).lower(): m[2]
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.M)
    }


def test_runtime_dependencies_stop_below_the_next_major_version() -> None:
    """Each runtime dependency is bounded below the major version after the locked one (below
    1 for 0.x): a new major release is taken only after `make test-latest` and `make lock`."""
    locked = _pinned("dev.lock")
    extras = PYPROJECT["project"]["optional-dependencies"]
    for requirement in [*PYPROJECT["project"]["dependencies"], *extras["kubesim"]]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=[\d.]+,<(\d+)", requirement)
        assert match is not None, f"{requirement}: needs a lower bound and a major upper bound"
        major = int(locked[_name(match[1])].split(".")[0])
        assert int(match[2]) == max(major, 0) + 1, requirement


def test_dev_lock_pins_every_dependency_make_test_installs() -> None:
    """make test and CI install requirements/dev.lock with --require-hashes, then the project
    with --no-deps: a dependency missing from the lock would be missing from the run."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    wanted = {
        _name(r)
        for r in [*PYPROJECT["project"]["dependencies"], *extras["dev"], *extras["kubesim"]]
    }
    pinned = _pinned("dev.lock")
    assert wanted <= pinned.keys(), (
        f"not in requirements/dev.lock (run `make lock`): {wanted - pinned.keys()}"
    )
    # the image runs what the tests ran
    for name, version in _pinned("runtime.lock").items():
        assert pinned.get(name, version) == version, name


def test_the_agent_and_evict_need_none_of_the_servers_dependencies() -> None:
    """kubesim's tokens, certificates and CEL are an extra: the agent's image (runtime.lock)
    carries none of them, and `kubesim serve` without them says what to install."""
    from kubesim.cli import SERVER_EXTRA

    server_only = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["kubesim"]}
    assert server_only == {_name(d) for d in SERVER_EXTRA.values()}
    assert not server_only & {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert not server_only & _pinned("runtime.lock").keys()
