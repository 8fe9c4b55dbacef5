"""Every command's ``--help`` and ``--version`` work without importing the API client.

Importing kubernetes-asyncio costs about a second; a command that needs no API client must
not pay for it. Measured start-up times live in ``bench/startup.py``; this test checks the
cause (what gets imported), not the clock.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# (module whose ``main`` is the console script, argv, what the help must mention)
COMMANDS = [
    ("scheduler.cli", ["--help"], "simulate"),
    ("scheduler.cli", ["simulate", "--help"], "--validate"),
    ("kubesim.cli", ["--help"], "serve"),
    ("kubesim.cli", ["serve", "--help"], "--kubeconfig-out"),
    ("kubesim.cli", ["wait", "--help"], "KUBECONFIG"),
    ("evictor.cli", ["--help"], "drain"),
    ("evictor.cli", ["drain", "--help"], "--disable-eviction"),
    ("agent.cli", ["--help"], "check-config"),
    ("agent.cli", ["run", "--help"], "--eviction-hard"),
]

HEAVY = ("kubernetes_asyncio", "kubernetes", "aiohttp", "rich")


@pytest.mark.parametrize(("module", "argv", "mentions"), COMMANDS)
def test_help_exits_0_documents_exit_codes_and_imports_no_client(
    module: str, argv: list[str], mentions: str
) -> None:
    code = (
        "import sys\n"
        f"from {module} import main\n"
        f"rc = main({argv!r})\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY', heavy, 'RC', rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.rstrip().endswith("HEAVY [] RC 0"), done.stdout
    assert mentions in done.stdout
    assert "Exit status:" in done.stdout
    assert "2  usage error or bad input" in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize(
    ("alias", "prog"),
    [
        ("scheduler", "python -m scheduler"),
        ("kubesim", "kubesim"),
        ("evictor", "evict"),
        ("agent", "eviction-agent"),
    ],
)
def test_python_m_aliases_and_version(alias: str, prog: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", alias, "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{prog} ")


@pytest.mark.parametrize("alias", ["evictor"])
def test_a_missing_kubeconfig_is_one_line_and_exit_2(alias: str, tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "absent.kubeconfig"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", alias, "drain", "node-1"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "kube" in done.stderr.lower()


@pytest.mark.parametrize("alias", ["scheduler", "kubesim"])
def test_a_bare_group_prints_its_help_as_a_usage_error(alias: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", alias], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith("Usage: ")
    assert "Commands:" in done.stderr
    assert "Traceback" not in done.stderr


def test_simulate_and_the_simulator_need_no_api_client() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from scheduler.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['simulate', 'examples/preemption.yaml']) == 0\n"
        "from kubesim.sim import Simulator\n"
        "Simulator(state='examples/kubesim-state.yaml')\n"
        "print([m for m in ('kubernetes_asyncio', 'kubernetes') if m in sys.modules])\n"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert done.stdout.strip() == "[]"
