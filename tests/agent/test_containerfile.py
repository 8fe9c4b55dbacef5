"""The Containerfile builds the agent from the locked dependencies.

No container engine here, so the build stage's ``RUN`` steps are run as they are written, in a
temporary directory standing in for the image: a fresh virtual environment plays the base image's
system Python (``python``), ``${VENV}`` and ``/wheels`` become temporary paths, and the working
directory is the repository root (what ``COPY`` puts in ``/src``). Then the result is checked as
the final stage would run it: ``eviction-agent --help`` works and no pip is left in the venv.
The shape is checked too: multi-stage, locks with hashes only, non-root, the entry point.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kube.cliutil import VERSION

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "Containerfile"


def _instructions() -> list[tuple[str, str]]:
    """(instruction, arguments), continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in CONTAINERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for ins in _instructions():
        if ins[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def test_multi_stage_non_root_from_the_locks() -> None:
    build, final = _stages()
    assert build[0][1].endswith(" AS build")
    runs = [args for ins, args in build if ins == "RUN"]
    installs = [r for r in runs if " install " in r]
    # every third-party package comes from a lock, each file checked against its hash
    for r in installs:
        assert ("--require-hashes" in r and "-r requirements/" in r) or "--no-index" in r, r
    # the final stage has no build step: it copies the venv and removes pip
    final_runs = [args for ins, args in final if ins == "RUN"]
    assert all("uninstall" in r for r in final_runs)
    assert ("COPY", "--from=build ${VENV} ${VENV}") in final
    [user] = [args for ins, args in final if ins == "USER"]
    assert user == "65534:65534"
    [entry] = [args for ins, args in final if ins == "ENTRYPOINT"]
    assert entry == '["eviction-agent"]'
    for lock in ("runtime.lock", "build.lock"):
        text = (ROOT / "requirements" / lock).read_text()
        pins = re.findall(r"^([A-Za-z0-9_.-]+)==\S+ \\$", text, flags=re.M)
        assert pins, lock
        assert text.count("--hash=sha256:") >= len(pins)


def test_daemonset_runs_the_image_this_containerfile_builds() -> None:
    ds = yaml.safe_load((ROOT / "deploy" / "daemonset.yaml").read_text())
    [container] = ds["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"ghcr.io/node-pressure-evictor/eviction-agent:{VERSION}"
    assert container["command"] == ["eviction-agent"]
    header = CONTAINERFILE.read_text().splitlines()[0]
    assert "ghcr.io/node-pressure-evictor/eviction-agent" in header


@pytest.mark.image
def test_build_steps_install_a_working_agent(tmp_path: Path) -> None:
    [build, _] = _stages()
    base = tmp_path / "base"  # the base image's system Python, with its pip
    subprocess.run([sys.executable, "-m", "venv", str(base)], check=True, timeout=120)
    venv = tmp_path / "venv"
    wheels = tmp_path / "wheels"
    env = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
        "PATH": f"{base / 'bin'}:{os.environ['PATH']}",
    }
    env.pop("VIRTUAL_ENV", None)
    ran = []
    for ins, args in build:
        if ins != "RUN":
            continue
        command = (
            args.replace("${VENV}", str(venv))
            .replace("/wheels", str(wheels))
            .replace(" /src", f" {ROOT}")
        )
        argv = shlex.split(command)
        if argv[0] == "python":
            argv[0] = str(base / "bin" / "python")
        if any("*" in a for a in argv):  # the shell's glob
            argv = [str(p) for a in argv for p in (sorted(Path("/").glob(a[1:])) or [a])]
        res = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert res.returncode == 0, f"{args}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
        ran.append(args)
    assert any("runtime.lock" in r for r in ran)
    assert any("--no-index" in r for r in ran)

    # what the final stage runs: the entry point, with nothing but the venv
    clean = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    res = subprocess.run(
        [str(venv / "bin" / "eviction-agent"), "--help"],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert "run" in res.stdout and "check-config" in res.stdout
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import agent.daemon, agent, importlib.util as u; print(agent.__file__); "
            "print(u.find_spec('pip') is None)",
        ],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    where, no_pip = probe.stdout.split()
    assert where.startswith(str(venv))  # the installed wheel, not this checkout
    assert no_pip == "True"
    assert not (venv / "bin" / "pip").exists()


@pytest.mark.parametrize("lock", ["runtime.lock", "build.lock"])
def test_locks_pin_exact_versions(lock: str) -> None:
    for line in (ROOT / "requirements" / lock).read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            assert "==" in line, line


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_runtime_lock_covers_every_runtime_dependency() -> None:
    """A dependency added to pyproject.toml without `make lock` would be missing from the
    image (the Containerfile installs the lock with --no-deps)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        _normalized(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for d in project["dependencies"]
    }
    lock = (ROOT / "requirements" / "runtime.lock").read_text()
    pinned = {_normalized(m) for m in re.findall(r"^([A-Za-z0-9_.-]+)==", lock, flags=re.M)}
    assert wanted <= pinned, (
        f"not in requirements/runtime.lock (run `make lock`): {wanted - pinned}"
    )
