"""``kubesim``: exit 2 on bad files or flags, 1 on a busy port; readiness for scripts.

Load errors run in process (``main``); serving runs real subprocesses, since signals, the
kubeconfig on disk and the detached ``--background`` child are what is being tested.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from kubesim.cli import main
from kubesim.scheduling import SchedulerLoop
from tests.support.wait import until_sync

if TYPE_CHECKING:
    from kubesim.sim import Simulator

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["serve", *args])
    return code, capsys.readouterr().err


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_bad_state_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text(NODE + "---\nkind: [\n")
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert _one_line(err) == (
        f"Error: bad state file: {bad}: document 2: invalid YAML: line 6, column 1:"
        " expected the node content, but found '<stream end>'"
    )


def test_state_field_error_names_file_document_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text(
        NODE + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
        "spec: {minAvailable: 1, maxUnavailable: 1}\n"
    )
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    line = _one_line(err)
    assert line.startswith(f'Error: bad state file: {bad}: document 2: PodDisruptionBudget "p": ')
    assert "minAvailable and maxUnavailable cannot be both set" in line


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: c\n    resources: {requets: {cpu: 1}}\n",
            'Pod "p": strict decoding error: unknown field "spec.containers[0].resources.requets"',
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClasName: high\n"
            "  containers: [{name: c}]\n",
            'Pod "p": strict decoding error: unknown field "spec.priorityClasName"',
        ),
        (
            "apiVersion: v1\nkind: Nod\nmetadata: {name: n}\n",
            'Nod "n": kind: no matches for kind "Nod" in version "v1"',
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n, name: m}\n",
            'Node "m": strict decoding error: duplicate field "metadata.name"',
        ),
    ],
)
def test_state_typos_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: str, problem: str
) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text(manifest)
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert _one_line(err) == f"Error: bad state file: {bad}: document 1: {problem}"


def test_state_unknown_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text("apiVersion: v1\nkind: Endpoints\nmetadata: {name: c}\n")
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert f'{bad}: document 1: Endpoints "c": kind: no matches for kind "Endpoints"' in err


def test_missing_binary_and_non_utf8_state_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, "--state", str(tmp_path / "absent.yaml"))
    assert code == 2
    assert _one_line(err) == (
        f"Error: bad state file: {tmp_path / 'absent.yaml'}: cannot read: No such file or directory"
    )
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(bytes(range(256)))
    code, err = _run(capsys, "--state", str(binary))
    assert code == 2
    assert _one_line(err).endswith(f"{binary}: binary file (contains NUL bytes), not YAML or JSON")
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("metadata: {name: café}\n".encode("latin-1"))
    code, err = _run(capsys, "--state", str(latin))
    assert code == 2
    assert _one_line(err).endswith(f"{latin}: not UTF-8 text (byte 0xe9 at offset 20)")
    code, err = _run(capsys, "--state", str(tmp_path))
    assert code == 2
    assert _one_line(err).endswith(f"{tmp_path}: is a directory, not a file")


def test_bad_faults_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "faults.yaml"
    bad.write_text("faults:\n- match: {verb: get}\n  delay: -1\n")
    code, err = _run(capsys, "--faults", str(bad))
    assert code == 2
    assert _one_line(err) == (
        f"Error: bad faults file: {bad}: document 1: faults[0].delay: must not be negative, not -1"
    )
    bad.write_bytes(b"\x00\x01")
    code, err = _run(capsys, "--faults", str(bad))
    assert code == 2
    assert "binary file" in _one_line(err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "Invalid value for '--port': 70000 is not in the range"),
        (["--port", "-1"], "Invalid value for '--port'"),
        (["--time-scale", "-1"], "Invalid value for '--time-scale'"),
        (["--validate", "sometimes"], 'invalid - validate option "sometimes"'),
        (["--kubeconfig-out", "/nonexistent-dir/kc"], "directory /nonexistent-dir does not exist"),
        (["--bogus"], "No such option '--bogus'"),
        (["--stop-on-stdin-eof", "--background"], "--stop-on-stdin-eof: not with --background"),
    ],
)
def test_bad_flags_exit_2_on_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, err = _run(capsys, *args)
    assert code == 2
    assert message in _one_line(err)


def test_validate_false_and_warn_accept_typos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kubesim.cli

    served: list[str] = []

    async def fake_serve(sim: object, **_: object) -> None:
        served.append(type(sim).__name__)

    monkeypatch.setattr(kubesim.cli, "_serve", fake_serve)
    state = tmp_path / "state.yaml"
    state.write_text(NODE.replace("metadata:", "metdata: {}\nmetadata:"))
    assert _run(capsys, "--state", str(state), "--validate=false") == (0, "")
    code, err = _run(capsys, "--state", str(state), "--validate", "warn")
    assert code == 0
    assert _one_line(err) == (f'Warning: {state}: document 1: Node "n": unknown field "metdata"')
    assert served == ["Simulator", "Simulator"]


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    for option in (
        "--host",
        "--port",
        "--kubeconfig-out",
        "--time-scale",
        "--state",
        "--faults",
        "--validate",
        "--background",
        "Exit status",
    ):
        assert option in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("kubesim ")


# --- serving, as a process ------------------------------------------------------------------


def _kubesim(*args: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kubesim", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[call-overload]
    )


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[str, str]:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state.yaml"
    path.write_text(NODE)
    return path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_writes_kubeconfig_when_answering_and_removes_it_on_exit(
    tmp_path: Path, state: Path, sig: int
) -> None:
    kubeconfig = tmp_path / "kc"
    proc = _kubesim("serve", "--state", str(state), "--kubeconfig-out", str(kubeconfig))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kubesim: serving on http://127.0.0.1:")
        url = line.split()[-1]
        assert proc.stdout.readline() == f"kubesim: kubeconfig {kubeconfig}\n"
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        assert config["current-context"] == "kubesim"
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        with urllib.request.urlopen(url + "/api/v1/nodes/n", timeout=5) as resp:
            assert resp.status == 200
    finally:
        _, err = _stop(proc, sig)
    assert proc.returncode == 0
    assert "Traceback" not in err
    assert not kubeconfig.exists()
    assert not list(tmp_path.glob(".kc.*"))  # no temporary file left over


def test_stop_on_stdin_eof_stops_when_the_pipe_closes(tmp_path: Path, state: Path) -> None:
    """What a parent killed with SIGKILL leaves behind: its end of the pipe, closed."""
    kubeconfig = tmp_path / "kc"
    proc = _kubesim(
        "serve",
        "--state",
        str(state),
        "--kubeconfig-out",
        str(kubeconfig),
        "--stop-on-stdin-eof",
        stdin=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().startswith("kubesim: serving on ")
        proc.stdin.write("anything written is read and dropped\n")
        proc.stdin.flush()
        time.sleep(0.2)
        assert proc.poll() is None  # data is not the end
        proc.stdin.close()
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert not kubeconfig.exists()


def test_port_in_use_exits_1_on_one_line(state: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _kubesim("serve", "--state", str(state), "--port", str(port))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert _one_line(err) == f"Error: cannot listen on 127.0.0.1:{port}: address already in use"
    assert out == ""


def test_binary_state_file_as_a_process_has_no_traceback(tmp_path: Path) -> None:
    binary = tmp_path / "state.bin"
    binary.write_bytes(os.urandom(64) + b"\x00")
    proc = _kubesim("serve", "--state", str(binary))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "binary file" in _one_line(err)


@pytest.fixture
def background(tmp_path: Path, state: Path) -> Iterator[tuple[Path, Path, str]]:
    kubeconfig = tmp_path / "kc"
    pid_file = tmp_path / "kubesim.pid"
    log = tmp_path / "kubesim.log"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            "--state",
            str(state),
            "--kubeconfig-out",
            str(kubeconfig),
            "--pid-file",
            str(pid_file),
            "--log-file",
            str(log),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pid = int(pid_file.read_text())
    try:
        yield kubeconfig, log, done.stdout
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def test_background_returns_once_ready(background: tuple[Path, Path, str]) -> None:
    kubeconfig, log, out = background
    lines = out.splitlines()
    assert lines[0].startswith("kubesim: serving on http://127.0.0.1:")
    assert lines[1] == f"kubesim: kubeconfig {kubeconfig}"
    assert lines[2].startswith("kubesim: pid ")
    assert lines[3] == f"kubesim: log {log}"
    url = lines[0].split()[-1]
    # Ready when it returned: no retry needed.
    with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
        assert resp.status == 200
    assert main(["wait", str(kubeconfig), "--timeout", "5"]) == 0


def test_background_stops_cleanly_on_sigterm(tmp_path: Path, state: Path) -> None:
    kubeconfig = tmp_path / "kc"
    pid_file = tmp_path / "pid"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            "--state",
            str(state),
            "--kubeconfig-out",
            str(kubeconfig),
            "--pid-file",
            str(pid_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    os.kill(int(pid_file.read_text()), signal.SIGTERM)
    until_sync(
        lambda: not kubeconfig.exists() and not pid_file.exists(),
        timeout=10,
        what="kubeconfig and pid file removed",
    )


def test_background_reports_a_failing_server(tmp_path: Path) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text("apiVersion: v1\nkind: Nod\nmetadata: {name: n}\n")
    done = subprocess.run(
        [sys.executable, "-m", "kubesim", "serve", "--background", "--state", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert 'no matches for kind "Nod"' in _one_line(done.stderr)
    assert done.stdout == ""


def test_wait_times_out_with_exit_1_and_rejects_garbage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "kc"
    assert main(["wait", str(missing), "--timeout", "0.2"]) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"Error: {missing}: not ready after 0.2s: the file does not exist"
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stale = tmp_path / "stale"
    stale.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "k", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "contexts": [{"name": "k", "context": {"cluster": "k"}}],
                "current-context": "k",
            }
        )
    )
    assert main(["wait", str(stale), "--timeout", "0.2"]) == 1
    assert "Connection refused" in _one_line(capsys.readouterr().err)
    garbage = tmp_path / "garbage"
    garbage.write_text("- just\n- a list\n")
    assert main(["wait", str(garbage)]) == 2
    assert _one_line(capsys.readouterr().err) == f"Error: {garbage}: not a kubeconfig"


def test_simulator_state_validation_levels() -> None:
    from kubesim.sim import Simulator, StateError

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labelz": {"a": "b"}},
        "spec": {"unschedulable": True},
    }
    with pytest.raises(
        StateError, match=r'strict decoding error: unknown field "metadata\.labelz"'
    ):
        Simulator(state=node)
    sim = Simulator(state=node, validation="warn")
    assert sim.state_warnings == ['document 1: Node "n": unknown field "metadata.labelz"']
    stored = sim.get("Node", None, "n")
    assert stored is not None
    assert "labelz" not in stored["metadata"]  # dropped, as the API server drops it
    assert stored["spec"]["unschedulable"] is True
    assert node["metadata"]["labelz"] == {"a": "b"}  # the caller's manifest is untouched
    assert Simulator(state=node, validation="ignore").state_warnings == []


# --- the living cluster's flags ---------------------------------------------------------------


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Simulator]:
    """The Simulator ``serve`` would run, instead of serving it."""
    import kubesim.cli

    sims: list[Simulator] = []

    async def fake_serve(sim: Simulator, **_: object) -> None:
        sims.append(sim)

    monkeypatch.setattr(kubesim.cli, "_serve", fake_serve)
    return sims


def test_living_flags_reach_the_simulator(
    state: Path, captured: list[Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(
        capsys,
        "--state",
        str(state),
        "--ready-after",
        "2.5",
        "--reaction-delay",
        "0.2",
        "--job-duration",
        "7",
        "--disable-controller",
        "replicaset",
        "--disable-controller",
        "deployment",
        "--no-scheduler",
        "--no-eviction-subresource",
    )
    assert (code, err) == (0, "")
    (sim,) = captured
    assert (sim.settings.ready_after, sim.settings.reaction_delay) == (2.5, 0.2)
    assert sim.settings.job_duration == 7
    running = {c.name for c in sim.controllers}
    assert running.isdisjoint({"replicaset", "deployment", "scheduler"})
    assert {"kubelet", "disruption", "statefulset", "replicationcontroller"} <= running
    assert sim.eviction is None
    assert "eviction" not in {s.name for s in sim.scheme.for_storage("pods").subresources}


def test_disabled_admission_plugins_are_left_out_of_the_chain(
    state: Path, captured: list[Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "--state", str(state), "--disable-admission-plugins", "Priority") == (
        0,
        "",
    )
    (sim,) = captured
    assert sim.priority not in sim.registry.admission
    assert sim.policies in sim.registry.validating_admission


def test_living_defaults_run_every_controller_with_the_eviction_subresource(
    state: Path, captured: list[Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    from kubesim.controllers import CONTROLLER_NAMES, ControllerSettings

    assert _run(capsys, "--state", str(state)) == (0, "")
    (sim,) = captured
    assert [c.name for c in sim.controllers] == list(CONTROLLER_NAMES)
    assert sim.settings == ControllerSettings()
    assert sim.eviction is not None


def test_flags_override_the_state_settings_and_absent_flags_keep_them(
    tmp_path: Path, captured: list[Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.yaml"
    state.write_text(
        NODE + "---\napiVersion: kubesim.io/v1alpha1\nkind: ClusterSettings\n"
        "readyAfter: 4\njobDuration: 9\ndisabledControllers: [daemonset]\n"
    )
    assert _run(capsys, "--state", str(state), "--ready-after", "0") == (0, "")
    (sim,) = captured
    assert sim.settings.ready_after == 0  # the flag wins
    assert sim.settings.job_duration == 9  # the state's value stays
    assert "daemonset" not in {c.name for c in sim.controllers}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--disable-controller", "replicaset", "--disable-controller", "replicasets"],
            "Invalid value for '--disable-controller': unknown controller 'replicasets'; known:"
            " namespace, kubelet, disruption, replicaset,",
        ),
        (
            ["--disable-admission-plugins", "Priority,NamespaceLifecycle"],
            "Invalid value for '--disable-admission-plugins': admission plugin"
            " 'NamespaceLifecycle' cannot be disabled; kubesim can leave out: Priority,"
            " ValidatingAdmissionPolicy",
        ),
        (["--ready-after", "-1"], "Invalid value for '--ready-after': -1.0 is not in the range"),
        (["--job-duration", "soon"], "Invalid value for '--job-duration': 'soon' is not"),
        (["--reaction-delay"], "Option '--reaction-delay' requires an argument"),
        # kube's own messages (component-base featuregate)
        (
            ["--feature-gates", "SchedulerQueueingHints=true,SchedulerQueueingHintz=false"],
            "Invalid value for '--feature-gates': unrecognized feature gate:"
            " SchedulerQueueingHintz",
        ),
        (
            ["--feature-gates", "SchedulerQueueingHints=off"],
            "Invalid value for '--feature-gates': invalid value of SchedulerQueueingHints=off,"
            ' err: strconv.ParseBool: parsing "off": invalid syntax',
        ),
        (
            ["--feature-gates", "SchedulerQueueingHints"],
            "Invalid value for '--feature-gates': missing bool value for SchedulerQueueingHints",
        ),
        (
            ["--preemption-mode", "kube"],
            "Invalid value for '--preemption-mode': 'kube' is not one of 'sampled', 'exhaustive'",
        ),
    ],
)
def test_bad_living_flags_exit_2_naming_the_value(
    capsys: pytest.CaptureFixture[str], captured: list[Simulator], args: list[str], message: str
) -> None:
    code, err = _run(capsys, *args)
    assert code == 2
    assert message in _one_line(err)
    assert captured == []  # nothing ran


def _loop(sim: Simulator) -> SchedulerLoop:
    (loop,) = (c for c in sim.controllers if isinstance(c, SchedulerLoop))
    return loop


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ([], (True, "sampled")),  # kube-scheduler 1.32: hints on, DefaultPreemption's sampling
        (["--feature-gates", "SchedulerQueueingHints=false"], (False, "sampled")),
        # Go's spellings of a bool; the last setting of a gate wins
        (
            ["--feature-gates", "SchedulerQueueingHints=F, SchedulerQueueingHints=1"],
            (True, "sampled"),
        ),
        (
            [
                *("--feature-gates", "SchedulerQueueingHints=true", "--feature-gates", ","),
                *("--feature-gates", "SchedulerQueueingHints=FALSE"),
                *("--preemption-mode", "exhaustive"),
            ],
            (False, "exhaustive"),
        ),
    ],
)
def test_scheduler_flags_reach_the_loop(
    state: Path,
    captured: list[Simulator],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    want: tuple[bool, str],
) -> None:
    assert _run(capsys, "--state", str(state), *args) == (0, "")
    loop = _loop(captured[0])
    hints, mode = want
    assert (loop.queueing_hints, loop.queue.queueing_hints_enabled) == (hints, hints)
    assert loop.preemption_mode == mode


def test_scheduler_flags_apply_to_a_configured_scheduler(
    tmp_path: Path, state: Path, captured: list[Simulator], capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: a\n"
    )
    flags = ["--feature-gates", "SchedulerQueueingHints=false", "--preemption-mode", "exhaustive"]
    assert _run(capsys, "--state", str(state), "--scheduler-config", str(config), *flags) == (
        0,
        "",
    )
    loop = _loop(captured[0])
    assert loop.scheduler_name == "a"
    assert not loop.queue.queueing_hints_enabled
    assert loop.preemption_mode == "exhaustive"


def test_help_documents_the_living_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    for option in (
        "--ready-after SECONDS",
        "--reaction-delay SECONDS",
        "--job-duration SECONDS",
        "--disable-controller NAME",
        "--no-scheduler",
        "--no-eviction-subresource",
        "garbagecollector",  # the known names are listed
        "SchedulerQueueingHints=true|false",
        "--preemption-mode [sampled|exhaustive]",
    ):
        assert option in out


def _run_in_the_background_child(
    state: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
) -> None:
    """``serve --background`` with ``flags``, then the detached child's command line run here."""
    import kubesim.cli

    forwarded: list[list[str]] = []

    def fake_background(args: list[str], **_: object) -> int:
        forwarded.append(args)
        return 0

    monkeypatch.setattr(kubesim.cli, "_background", fake_background)
    assert _run(capsys, "--background", "--state", str(state), *flags) == (0, "")
    (args,) = forwarded
    # The detached child parses the same flags into the same Simulator.
    assert main(args) == 0


def test_background_forwards_the_living_flags(
    state: Path,
    captured: list[Simulator],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flags = [
        "--ready-after",
        "0.5",
        "--job-duration",
        "3",
        "--disable-controller",
        "job",
        "--no-scheduler",
        "--no-eviction-subresource",
    ]
    _run_in_the_background_child(state, capsys, monkeypatch, flags)
    (sim,) = captured
    assert (sim.settings.ready_after, sim.settings.job_duration) == (0.5, 3)
    assert sim.settings.reaction_delay == 0
    assert {c.name for c in sim.controllers}.isdisjoint({"job", "scheduler"})
    assert sim.eviction is None


def test_background_forwards_the_scheduler_flags(
    state: Path,
    captured: list[Simulator],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flags = ["--feature-gates", "SchedulerQueueingHints=0", "--preemption-mode", "exhaustive"]
    _run_in_the_background_child(state, capsys, monkeypatch, flags)
    loop = _loop(captured[0])
    assert (loop.queueing_hints, loop.preemption_mode) == (False, "exhaustive")


def test_no_eviction_subresource_hides_it_from_a_served_discovery(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    pid_file = tmp_path / "pid"
    state = tmp_path / "state.yaml"
    state.write_text(NODE)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            "--state",
            str(state),
            "--kubeconfig-out",
            str(kubeconfig),
            "--pid-file",
            str(pid_file),
            "--no-eviction-subresource",
            "--no-scheduler",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pid = int(pid_file.read_text())
    try:
        url = done.stdout.splitlines()[0].split()[-1]
        with urllib.request.urlopen(url + "/api/v1", timeout=5) as resp:
            names = {r["name"] for r in json.load(resp)["resources"]}
        assert "pods/binding" in names
        assert "pods/eviction" not in names
    finally:
        os.kill(pid, signal.SIGTERM)


def test_a_stopping_server_leaves_a_newer_servers_pid_file(tmp_path: Path, state: Path) -> None:
    # Two scripts in a row on the same --pid-file: the first server, still shutting down, must
    # not remove the file the next one wrote.
    pid_file = tmp_path / "kubesim.pid"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            "--state",
            str(state),
            "--pid-file",
            str(pid_file),
            "--no-scheduler",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pid = int(pid_file.read_text())
    pid_file.write_text("999999999\n")  # what a newer server would have written
    os.kill(pid, signal.SIGTERM)
    until_sync(lambda: not _alive(pid), timeout=15, what="kubesim stopped on SIGTERM")
    assert pid_file.read_text() == "999999999\n"


def test_serve_without_the_kubesim_extra_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jwt" else real(name, *a)
    )
    code, err = _run(capsys)
    assert code == 1
    assert _one_line(err) == (
        "Error: kubesim serve needs PyJWT: pip install 'node-pressure-evictor[kubesim]'"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
