"""Every command's ``--help`` and ``--version`` work without importing the API client.

Importing kubernetes-asyncio costs about a second; a command that needs no API client must
not pay for it. Measured start-up times live in ``bench/startup.py``; this test checks the
cause (what gets imported), not the clock.
"""

from __future__ import annotations

import asyncio
import json
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


async def test_drain_evicts_without_the_client_models() -> None:
    """``evict drain`` on its whole hot path (node, cordon, list, evictions, a budget's 429 and
    its watch, the deletion watch) loads none of the ~770 model classes of kubernetes-asyncio
    and only the API classes it calls: importing them costs ~0.3 s before the first request."""
    from tests.support.living import living, settle
    from tests.support.manifests import node, pdb, pod, replicaset

    objs = [
        node("node-1"),
        node("node-2"),
        replicaset("web"),
        *(pod(f"web-{i}", app="web") for i in range(3)),
        pdb("web", min_available=2),
    ]
    code = (
        "import json, sys\n"
        "from evictor.cli import main\n"
        "try:\n"
        "    main(['drain', 'node-1', '--timeout=30s'])\n"
        "except SystemExit as exc:\n"
        "    rc = exc.code\n"
        "models = [m for m in sys.modules if m.startswith('kubernetes_asyncio.client.models.')]\n"
        "apis = sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "              if m.startswith('kubernetes_asyncio.client.api.'))\n"
        "print(json.dumps({'rc': rc, 'models': len(models), 'apis': apis}))\n"
    )
    async with living(objs) as sim:
        await settle(sim)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(sim.kubeconfig_path)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            code,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert "will retry after" in err.decode()  # the budget blocked someone: its watch ran
        assert sim.get("Node", None, "node-1")["spec"]["unschedulable"] is True
    got = out.decode().splitlines()
    assert got[0] == "node/node-1 cordoned" and got[-2] == "node/node-1 drained", out
    loaded = json.loads(got[-1])
    assert (loaded["rc"], loaded["models"]) == (0, 0), err.decode()
    # all of them would be there had ``kubernetes_asyncio.client``'s __init__ run
    assert set(loaded["apis"]) <= {"core_v1_api", "policy_v1_api", "apps_v1_api"}
