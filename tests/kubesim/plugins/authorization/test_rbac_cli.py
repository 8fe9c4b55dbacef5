"""``kubesim serve --authorization``: the choices are the authorization modes; a served
``rbac`` kubesim answers anonymous requests as kube-apiserver does; in every mode the kubeconfig
it writes works with real kubectl (rbac serves TLS unless ``--no-tls``: kubectl sends no bearer
token over http), and ``--no-tls`` keeps the admin's token for clients that send it there."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from kubesim.cli import AUTHORIZATION_CHOICES, Living, _simulator, serves_tls
from kubesim.sim import AUTHORIZATION_MODES


def test_choices_are_the_registered_modes() -> None:
    assert set(AUTHORIZATION_CHOICES) == set(AUTHORIZATION_MODES)
    assert AUTHORIZATION_CHOICES[0] == "always-allow"  # the default stays what kubesim was


def test_simulator_gets_the_mode() -> None:
    sim = _simulator((), None, "127.0.0.1", 0, None, 1.0, "strict", Living(authorization="rbac"))
    assert sim.authorization == "rbac"
    assert sim.admin_kubeconfig_user() == {"token": sim.admin_token}


def test_tls_follows_the_mode_unless_given() -> None:
    assert serves_tls("rbac", None) is True
    assert serves_tls("always-allow", None) is False
    assert serves_tls("rbac", False) is False
    assert serves_tls("always-allow", True) is True


def _serve_background(tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], int]:
    kubeconfig, pid_file = tmp_path / "kc", tmp_path / "pid"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesim",
            "serve",
            "--background",
            *flags,
            "--kubeconfig-out",
            str(kubeconfig),
            "--pid-file",
            str(pid_file),
            "--log-file",
            str(tmp_path / "log"),
            "--no-scheduler",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done, int(pid_file.read_text())


def test_background_rbac_server_over_http(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    done, pid = _serve_background(tmp_path, "--authorization", "rbac", "--no-tls")
    try:
        assert "kubectl sends no bearer token over http" in (tmp_path / "log").read_text()
        url = done.stdout.splitlines()[0].split()[-1]
        assert url.startswith("http://")
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


@pytest.mark.kubectl
@pytest.mark.skipif(not shutil.which("kubectl"), reason="no kubectl binary installed")
@pytest.mark.parametrize(
    ("flags", "scheme"),
    [((), "http"), (("--authorization", "rbac"), "https"), (("--tls",), "https")],
    ids=["always-allow", "rbac", "always-allow-tls"],
)
def test_kubectl_uses_the_written_kubeconfig(
    tmp_path: Path, flags: tuple[str, ...], scheme: str
) -> None:
    """The kubeconfig ``serve`` writes is the admin's for kubectl in every mode: it lists
    secrets (allowed to system:masters alone under rbac) and says who it is."""
    done, pid = _serve_background(tmp_path, *flags)
    try:
        assert done.stdout.splitlines()[0].split()[-1].startswith(f"{scheme}://")
        env = {**os.environ, "KUBECONFIG": str(tmp_path / "kc")}

        def kubectl(*args: str) -> str:
            run = subprocess.run(
                [shutil.which("kubectl") or "kubectl", *args],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                check=False,
            )
            assert run.returncode == 0, run.stderr
            return run.stdout

        kubectl("get", "secrets", "-A", "-o", "name")  # 403 for anyone but the admin
        user = "kubernetes-admin" if scheme == "https" else "system:anonymous"
        assert user in kubectl("auth", "whoami")
        assert kubectl("auth", "can-i", "delete", "secrets", "-A").strip() == "yes"
    finally:
        os.kill(pid, signal.SIGTERM)
