"""``kubesim serve``: exit 2 on a bad state or fault file; otherwise serve until SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kubesim.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["serve", *args])
    return code, capsys.readouterr().err


def test_bad_state_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\nkind: [\n")
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert f"bad state file {bad}: document 2: invalid YAML" in err


def test_state_field_error_names_file_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\n"
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
        "spec: {minAvailable: 1, maxUnavailable: 1}\n"
    )
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert f"bad state file {bad}: document 2: spec: " in err
    assert "minAvailable and maxUnavailable cannot be both set" in err


def test_state_unknown_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "state.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, err = _run(capsys, "--state", str(bad))
    assert code == 2
    assert f'{bad}: document 1: kind: no matches for kind "ConfigMap" in version "v1"' in err


def test_missing_state_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, "--state", str(tmp_path / "absent.yaml"))
    assert code == 2
    assert "absent.yaml: document 0: cannot read" in err


def test_bad_faults_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "faults.yaml"
    bad.write_text("faults:\n- match: {verb: get}\n  delay: -1\n")
    code, err = _run(capsys, "--faults", str(bad))
    assert code == 2
    assert f"bad faults file {bad}: document 1: faults[0].delay: must not be negative" in err


def test_serve_prints_url_writes_kubeconfig_and_stops_on_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    state.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n")
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim.cli",
            "serve",
            "--state",
            str(state),
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kubesim: serving on http://127.0.0.1:")
        url = line.split()[-1]
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        assert config["current-context"] == "kubesim"
        import urllib.request

        with urllib.request.urlopen(url + "/api/v1/nodes/n", timeout=5) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert proc.returncode == 0
