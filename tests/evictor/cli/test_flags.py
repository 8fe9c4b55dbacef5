"""kubectl users' habits with ``evict``: global flags after the subcommand, ``--flag=true|false``.

Scripts written for ``kubectl drain`` put ``--kubeconfig`` wherever they like and spell
booleans as Go's flag parser takes them; ``evict`` must take both, and refuse
``--force=maybe`` as kubectl does (here with exit 2, the project's usage-error code).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import click
import pytest

import kubesim
from evictor.cliflags import BOOL, GoOption, bool_flag, go_args
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.evict import EVICT, lines
from tests.support.manifests import daemonset, node, pod, replicaset

AGENT = pod("agent-x", namespace="kube-system", owner=("apps/v1", "DaemonSet", "agent"))
STATE = [
    node("node-1"),
    node("node-2"),
    node("node-3"),
    replicaset("web"),
    daemonset("agent"),
    pod("web-0", app="web"),
    pod("scratch", app="web", empty_dir=True),
    pod("bare", owner=None, node_name="node-2"),
    AGENT,
]


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, disabled_controllers=FROZEN) as s:
        yield s


async def evict(
    sim: Simulator, *args: str, home: Path, timeout: float = 30
) -> tuple[int, str, str]:
    """``evict`` with no usable default kubeconfig: only a ``--kubeconfig`` flag finds the
    server (``$KUBECONFIG`` names a missing file, which alone is a usage error)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(home / "absent.kubeconfig"), HOME=str(home))
    proc = await asyncio.create_subprocess_exec(
        EVICT,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


# --- the command line as pflag reads it (pure) -------------------------------------------------


def _params() -> list[click.Parameter]:
    @click.command()
    @bool_flag("--force", help="f")
    @click.option("--dry-run", cls=GoOption, default="none", no_opt_default="client")
    @click.option("--pod-selector", default="")
    @click.option("-v", "--v", "v", type=int)
    @click.option("-n", "--namespace")
    @click.argument("nodes", nargs=-1)
    def cmd(**_: Any) -> None: ...

    return cmd.params


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # a bare bool flag gets its value after "=", so the next argument is never taken
        (["--force", "node-1"], ["--force=true", "node-1"]),
        (["--force", "false"], ["--force=true", "false"]),  # pflag: "false" is an argument
        (["--force=false"], ["--force=false"]),
        (["--dry-run", "node-1"], ["--dry-run=client", "node-1"]),
        # an option's value is passed as it is, whatever it looks like
        (["--pod-selector", "--force"], ["--pod-selector", "--force"]),
        (["-n", "--force", "--force"], ["-n", "--force", "--force=true"]),
        # shorthands with "=": -v=6 is -v 6
        (["-v=6", "-n=prod"], ["-v", "6", "-n", "prod"]),
        (["--v=6", "-ojson"], ["--v=6", "-ojson"]),
        # after "--", nothing is an option
        (["--", "--force"], ["--", "--force"]),
    ],
)
def test_arguments_are_read_as_pflag_reads_them(argv: list[str], expected: list[str]) -> None:
    assert go_args(_params(), argv, interspersed=True) == expected


def test_a_group_leaves_the_subcommands_arguments_to_it() -> None:
    got = go_args(_params(), ["--force", "drain", "--force", "-v=6"], interspersed=False)
    assert got == ["--force=true", "drain", "--force", "-v=6"]


@pytest.mark.parametrize(
    ("text", "value"),
    [(t, True) for t in ("1", "t", "T", "TRUE", "true", "True")]
    + [(f, False) for f in ("0", "f", "F", "FALSE", "false", "False")],
)
def test_booleans_are_spelled_as_strconv_parsebool_takes_them(text: str, value: bool) -> None:
    assert BOOL.convert(text, None, None) is value


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evictor", *argv], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("flag", ["--force", "--delete-emptydir-data", "--debug"])
def test_a_bad_boolean_is_a_usage_error_naming_the_flag_as_kubectl_does(flag: str) -> None:
    done = _run("drain", "node-1", f"{flag}=maybe")
    assert done.returncode == 2
    assert done.stderr.startswith(
        f'error: invalid argument "maybe" for "{flag}" flag: '
        'strconv.ParseBool: parsing "maybe": invalid syntax'
    )
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_bad_request_timeout_is_kubectls_usage_error() -> None:
    done = _run("cordon", "node-1", "--request-timeout=soon")
    assert done.returncode == 2
    assert done.stderr.startswith("error: Invalid timeout value. Timeout must be a single integer")


@pytest.mark.parametrize("command", ["drain", "cordon", "uncordon", "pod"])
def test_help_lists_every_option_once_with_its_help(command: str) -> None:
    done = _run(command, "--help")
    assert done.returncode == 0
    listed = re.findall(r"^  (?:-\w, )?(--[\w-]+)", done.stdout, re.MULTILINE)
    assert len(listed) == len(set(listed)), listed
    for flag in ("--kubeconfig", "--context", "--namespace", "--request-timeout", "--v"):
        assert flag in listed
    assert "Path to the kubeconfig file" in done.stdout


# --- against a cluster -------------------------------------------------------------------------


async def test_global_flags_after_the_subcommand(sim: Simulator, tmp_path: Path) -> None:
    cfg = str(sim.kubeconfig_path)
    # kubectl's habit: the global flag after the command and its arguments
    code, out, err = await evict(
        sim, "drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--kubeconfig",
        cfg, home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert lines(out)[0] == "node/node-1 cordoned" and lines(out)[-1] == "node/node-1 drained"
    # and still before it
    code, out, err = await evict(sim, f"--kubeconfig={cfg}", "uncordon", "node-1", home=tmp_path)
    assert (code, lines(out)) == (0, ["node/node-1 uncordoned"]), err
    # -n after the pod's name, --context after everything
    code, out, err = await evict(
        sim, "pod", "bare", "-n", "default", "--kubeconfig", cfg, "--context", "kubesim",
        "--dry-run=server", home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert lines(out) == ["evicting pod default/bare (server dry run)"]
    code, _, err = await evict(
        sim, "cordon", "node-3", "--kubeconfig", cfg, "--context", "nope", home=tmp_path
    )
    assert code == 2 and "nope" in err, err
    # the later occurrence wins, as with pflag
    code, out, err = await evict(
        sim, "--namespace", "kube-system", "pod", "bare", "-n=default", "--kubeconfig", cfg,
        "--dry-run", home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert lines(out) == ["evicting pod default/bare (dry run)"]


async def test_booleans_take_true_and_false(sim: Simulator, tmp_path: Path) -> None:
    cfg = ("--kubeconfig", str(sim.kubeconfig_path))
    # node-2 holds a pod without a controller: --force decides
    code, _, err = await evict(sim, "drain", "node-2", "--force=false", *cfg, home=tmp_path)
    assert code == 1
    assert "cannot delete Pods that declare no controller (use --force to override)" in err
    # the last occurrence wins: --force then --force=false is not forced
    code, _, err = await evict(
        sim, "drain", "node-2", "--force", "--force=false", *cfg, home=tmp_path
    )
    assert code == 1 and "use --force to override" in err
    code, out, err = await evict(
        sim, "drain", "node-2", "--force", "--delete-emptydir-data=true", "--dry-run", *cfg,
        home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert "node/node-2 drained (dry run)" in lines(out)
    code, out, err = await evict(
        sim, "drain", "node-2", "--force=True", "--ignore-daemonsets=1", "--disable-eviction=F",
        *cfg, home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert "pod/bare evicted" in lines(out)  # evicted, not deleted: --disable-eviction=F
    assert sim.requests.filter(subresource="eviction", name="bare")


async def test_request_timeout_bounds_each_request(sim: Simulator, tmp_path: Path) -> None:
    sim.add_faults(
        {"faults": [{"match": {"verb": "get", "resource": "nodes", "name": "node-3"},
                     "delay": 0.4}]}
    )  # fmt: skip
    cfg = ("--kubeconfig", str(sim.kubeconfig_path))
    code, _, err = await evict(
        sim, "cordon", "node-3", *cfg, "--request-timeout=100ms", home=tmp_path
    )
    assert code == 1
    assert lines(err) == [
        "error: unable to connect to the server: "
        "the server did not answer within the request timeout (0.1s)"
    ]
    assert not (sim.get("Node", None, "node-3") or {}).get("spec", {}).get("unschedulable")
    code, out, err = await evict(
        sim, "cordon", "node-3", *cfg, "--request-timeout", "5", home=tmp_path
    )
    assert (code, lines(out)) == (0, ["node/node-3 cordoned"]), err


async def test_v6_logs_every_request(sim: Simulator, tmp_path: Path) -> None:
    cfg = ("--kubeconfig", str(sim.kubeconfig_path))
    code, out, err = await evict(sim, "cordon", "node-3", *cfg, "-v=6", home=tmp_path)
    assert code == 0, err
    assert lines(out) == ["node/node-3 cordoned"]
    assert re.search(r"GET https?://\S+/api/v1/nodes/node-3 200 OK in \d+ milliseconds", err), err
    assert re.search(r"PATCH \S+/api/v1/nodes/node-3 200 OK", err), err
    code, _, err = await evict(sim, "uncordon", "node-3", *cfg, "-v", "2", home=tmp_path)
    assert code == 0 and "GET " not in err


def test_request_lines_are_off_in_a_process_that_merely_logs_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The agent logs at DEBUG when asked; it must not get a line per API request with it."""
    import logging

    import evictor.api.calls  # noqa: F401 - sets the logger's own level

    caplog.set_level(logging.DEBUG)
    assert not logging.getLogger("evictor.requests").isEnabledFor(logging.DEBUG)
