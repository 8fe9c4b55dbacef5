"""``kubesim serve --authorization``: the choices are the authorization modes, and a served
``rbac`` kubesim answers anonymous requests as kube-apiserver does while its kubeconfig
carries the admin's token."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from kubesim.auth import AUTHORIZATION_MODES
from kubesim.cli import AUTHORIZATION_CHOICES, Living, _simulator


def test_choices_are_the_registered_modes() -> None:
    assert set(AUTHORIZATION_CHOICES) == set(AUTHORIZATION_MODES)
    assert AUTHORIZATION_CHOICES[0] == "always-allow"  # the default stays what kubesim was


def test_simulator_gets_the_mode() -> None:
    sim = _simulator((), None, "127.0.0.1", 0, None, 1.0, "strict", Living(authorization="rbac"))
    assert sim.authorization == "rbac"
    assert sim.admin_kubeconfig_user() == {"token": sim.admin_token}


def test_background_rbac_server(tmp_path: Path) -> None:
    kubeconfig, pid_file = tmp_path / "kc", tmp_path / "pid"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            "--authorization",
            "rbac",
            "--kubeconfig-out",
            str(kubeconfig),
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
    try:
        url = done.stdout.splitlines()[0].split()[-1]
        with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
            assert resp.status == 200
        try:
            urllib.request.urlopen(url + "/api/v1/secrets", timeout=5)
            raise AssertionError("anonymous list of secrets was allowed")
        except urllib.error.HTTPError as err:
            assert err.code == 403
            assert json.load(err)["message"] == (
                'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in'
                ' API group "" at the cluster scope'
            )
        token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
        request = urllib.request.Request(
            url + "/api/v1/secrets", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert json.load(resp)["kind"] == "SecretList"
    finally:
        os.kill(pid, signal.SIGTERM)
