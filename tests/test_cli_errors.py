"""What a careless user can do to the commands: one line on stderr, the right exit code.

Real subprocesses, because a traceback printed by the interpreter at exit, a signal, or a
decode error on a real file are exactly what in-process tests miss.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim.kubeconfig import write_kubeconfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "preemption.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def example_with(old: str, new: str, tmp_path: Path) -> Path:
    text = EXAMPLE.read_text()
    assert old in text
    path = tmp_path / "cluster.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("requests:", "requets:", 'unknown field "spec.containers[0].resources.requets"'),
        ("priorityClassName:", "priorityClasName:", 'unknown field "spec.priorityClasName"'),
        ("kind: Node", "kind: Nod", 'no matches for kind "Nod" in version "v1"'),
    ],
)
def test_simulate_rejects_the_typos_that_used_to_pass(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    path = example_with(old, new, tmp_path)
    done = run("scheduler", "simulate", str(path))
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert line.startswith(f"Error: {path}: document ")
    assert line.endswith(problem)
    assert line.count(str(path)) == 1  # the path is not repeated
    # The documented opt-out still simulates.
    assert run("scheduler", "simulate", str(path), "--validate=false").returncode == 0


def test_simulate_warns_with_validate_warn(tmp_path: Path) -> None:
    path = example_with("requests:", "requets:", tmp_path)
    done = run("scheduler", "simulate", str(path), "--validate=warn")
    assert done.returncode == 0
    assert "Warning: " in done.stderr and '"spec.containers[0].resources.requets"' in done.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01\x02binary", "binary file (contains NUL bytes), not YAML or JSON"),
        (b"kind: caf\xe9\n", "not UTF-8 text (byte 0xe9 at offset 9)"),
        (b"kind: [\n", "document 1: invalid YAML: line 2, column 1:"),
    ],
)
def test_simulate_unreadable_files_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(content)
    done = run("scheduler", "simulate", str(path))
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert line.startswith(f"Error: {path}: {message}")
    assert "<unicode string>" not in line


def test_simulate_missing_file_and_directory(tmp_path: Path) -> None:
    done = run("scheduler", "simulate", str(tmp_path / "nope.yaml"))
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"Error: {tmp_path / 'nope.yaml'}: cannot read: No such file or directory"
    )
    done = run("scheduler", "simulate", str(tmp_path))
    assert done.returncode == 2
    assert "is a directory" in one_line(done.stderr)


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes(b"\x00")
    done = run("scheduler", "--debug", "simulate", str(path))
    assert done.returncode == 2
    assert "Traceback" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith(f"Error: {path}: binary file")


def test_ctrl_c_exits_130_quietly(tmp_path: Path) -> None:
    # The signal goes out once the command is in its polling loop, which the test sees as the
    # /readyz probe arriving at a server that never answers (however long start-up takes).
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(60)
        port = server.getsockname()[1]
        kubeconfig = write_kubeconfig(tmp_path / "config", f"http://127.0.0.1:{port}")
        # A test run started as a background job (`make test &` from a script) ignores SIGINT,
        # and an ignored signal stays ignored across exec; a handled one comes back to its
        # default there, so the command meets Ctrl-C as from a terminal.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kubesim", "wait", str(kubeconfig), "--timeout", "60"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        finally:
            if previous is not None:  # None: not set from Python, left as it was
                signal.signal(signal.SIGINT, previous)
        try:
            probe, _ = server.accept()
            with probe:
                probe.settimeout(60)
                assert probe.recv(1024).startswith(b"GET /readyz ")
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err.strip() == "Interrupted."  # click starts a new line after the ^C
