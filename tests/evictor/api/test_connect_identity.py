"""Which identity ``evictor.api.connect`` uses, and where it sends it, as client-go decides.

``DirectClientConfig.ClientConfig`` reads a user's credentials only when the server is https
(``IsConfigTransportTLS``), so a plain-http server here records every request's headers and an
exec plugin leaves a marker file when it runs. The loading rules are checked with an in-cluster
environment laid out (service address, ServiceAccount token): falling back to it would succeed,
so a test that expects an error proves that a kubeconfig which fails is never traded for that
other identity. ``connect`` makes no request itself, so the in-cluster address need not answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from evictor.api.calls import request
from evictor.api.connect import InvalidConfiguration, NoSuchKubeconfig, connect
from tests.support.evict import EVICT, lines


@dataclass
class Recorder:
    """A plain-http API server that answers 404 to everything and keeps what it was sent."""

    url: str = ""
    headers: list[Mapping[str, str]] = field(default_factory=list)

    async def handle(self, req: web.Request) -> web.Response:
        self.headers.append(req.headers)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "message": 'nodes "node-1" not found',
            "code": 404,
        }
        return web.json_response(status, status=404)


@pytest.fixture
async def plain() -> AsyncIterator[Recorder]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    recorder.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield recorder
    finally:
        await runner.cleanup()


MARKER_PLUGIN = textwrap.dedent(
    """
    import json, sys
    open(sys.argv[1], "w").write("ran")
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": {"token": "exec-token"}}))
    """
)


def exec_user(tmp_path: Path) -> dict[str, Any]:
    """An exec plugin that writes ``tmp_path/ran`` when it runs."""
    (tmp_path / "plugin.py").write_text(MARKER_PLUGIN)
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(tmp_path / "plugin.py"), str(tmp_path / "ran")],
            "interactiveMode": "Never",
        }
    }


def write(path: Path, server: str, user: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": dict(user)}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


PEM = "-----BEGIN X-----\nAAAA\n-----END X-----\n"
USERS: dict[str, dict[str, Any]] = {
    "token": {"token": "secret"},
    "tokenFile": {"tokenFile": "token"},
    "basic auth": {"username": "admin", "password": "secret"},
    "client certificate": {
        "client-certificate-data": "LS0tLS1CRUdJTiBYLS0tLS0K",
        "client-key-data": "LS0tLS1CRUdJTiBYLS0tLS0K",
    },
    "auth provider": {"auth-provider": {"name": "oidc", "config": {"id-token": "a.b.c"}}},
}


@pytest.mark.parametrize("kind", [*USERS, "exec plugin"])
async def test_no_credential_goes_to_a_server_that_is_not_https(
    plain: Recorder, tmp_path: Path, kind: str
) -> None:
    (tmp_path / "token").write_text("from-file")
    user = exec_user(tmp_path) if kind == "exec plugin" else dict(USERS[kind])
    user["as"] = "bob"  # client-go sets impersonation before it asks about TLS: still sent
    warnings: list[str] = []
    conn = await connect(
        kubeconfig=str(write(tmp_path / "kc", plain.url, user)), prog="t", warn=warnings.append
    )
    try:
        resp = await request(conn.api_client, "GET", "/api/v1/nodes/node-1")
        resp.release()
    finally:
        await conn.api_client.close()
    [headers] = plain.headers
    assert "Authorization" not in headers
    assert headers["Impersonate-User"] == "bob"
    assert not (tmp_path / "ran").exists()  # the plugin never ran
    shown = "token" if kind == "tokenFile" else kind
    assert warnings == [
        f"credentials not sent ({shown}): the server {plain.url} is not https, and kubeconfig "
        "credentials go over TLS only"
    ]


async def test_a_user_without_credentials_gets_no_warning(plain: Recorder, tmp_path: Path) -> None:
    warnings: list[str] = []
    conn = await connect(
        kubeconfig=str(write(tmp_path / "kc", plain.url, {})), prog="t", warn=warnings.append
    )
    await conn.api_client.close()
    assert warnings == []


async def test_the_warning_goes_to_the_log_by_default(
    plain: Recorder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the agent's way: its JSON log line on stderr
    server = plain.url.replace("http://", "http://user:pw@")  # never echoed
    conn = await connect(kubeconfig=str(write(tmp_path / "kc", server, USERS["token"])), prog="t")
    await conn.api_client.close()
    [record] = [r for r in caplog.records if r.name == "evictor.api.connect"]
    assert record.levelname == "WARNING"
    assert record.getMessage().startswith(f"credentials not sent (token): the server {plain.url}")


async def evict(*args: str, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        EVICT,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("KUBE")} | dict(env or {}),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_evict_over_http_sends_no_token_and_runs_no_plugin(
    plain: Recorder, tmp_path: Path
) -> None:
    user = {"token": "secret", **exec_user(tmp_path)}
    config = write(tmp_path / "kc", plain.url, user)
    code, _, err = await evict("--kubeconfig", str(config), "cordon", "node-1")
    assert code == 1
    assert lines(err) == [
        f"W: credentials not sent (token, exec plugin): the server {plain.url} is not https, "
        "and kubeconfig credentials go over TLS only",
        'Error from server (NotFound): nodes "node-1" not found',
    ]
    # kubectl's --server and --token, no kubeconfig at all: the same
    home = {"HOME": str(tmp_path / "home")}
    code, _, err = await evict(
        f"--server={plain.url}", "--token=secret", "cordon", "node-1", env=home
    )
    assert code == 1 and lines(err)[0].startswith("W: credentials not sent (token): ")
    assert len(plain.headers) == 2
    assert all("Authorization" not in h for h in plain.headers)
    assert not (tmp_path / "ran").exists()


# --- which configuration ---------------------------------------------------------------------


@pytest.fixture
def in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A pod's environment: the service's address and a ServiceAccount volume; no kubeconfig
    anywhere (HOME without ~/.kube, no $KUBECONFIG). Answers the volume's directory."""
    volume = tmp_path / "serviceaccount"
    volume.mkdir()
    (volume / "token").write_text("sa-token")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return str(volume)


async def test_the_in_cluster_account_only_when_nothing_chooses_a_context(
    in_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def which() -> str:
        conn = await connect(prog="t", service_account_dir=in_cluster)
        await conn.api_client.close()
        return "in-cluster" if conn.in_cluster else str(conn.api_client.configuration.host)

    assert await which() == "in-cluster"  # no kubeconfig at all
    # $KUBECONFIG naming files that do not exist: skipped, and nothing is left
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'gone'}{os.pathsep}{tmp_path / 'gone2'}")
    assert await which() == "in-cluster"
    # a file that chooses no context (clientcmd's ErrEmptyConfig)
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n# nothing here yet\n")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'gone'}{os.pathsep}{empty}")
    assert await which() == "in-cluster"
    # a missing file beside one that chooses a context: that one
    config = write(tmp_path / "kc", "https://api.example.com:6443", {"token": "t"})
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'gone'}{os.pathsep}{config}")
    assert await which() == "https://api.example.com:6443"


MALFORMED = {
    "bad YAML": "clusters: [unclosed\n",
    "wrong type": "users: [{name: u, user: {token: 12345}}]\n",
    "key given twice": "current-context: a\ncurrent-context: b\n",
    "missing context": "current-context: gone\n",
    "missing user": (
        "current-context: x\nclusters: [{name: c, cluster: {server: 'https://a'}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: ghost}}]\n"
    ),
    "missing cluster": (
        "current-context: x\nusers: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: nowhere, user: u}}]\n"
    ),
    "binary": "\x00\x01",
}


@pytest.mark.parametrize("how", ["--kubeconfig", "$KUBECONFIG", "~/.kube/config"])
@pytest.mark.parametrize("what", MALFORMED)
async def test_a_kubeconfig_that_cannot_be_used_never_falls_back_to_the_cluster(
    in_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, how: str
) -> None:
    path = tmp_path / "home" / ".kube" / "config"
    path.parent.mkdir(parents=True)
    path.write_text(MALFORMED[what])
    if how == "$KUBECONFIG":
        monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'gone'}{os.pathsep}{path}")
    explicit = str(path) if how == "--kubeconfig" else None
    with pytest.raises(InvalidConfiguration) as caught:
        await connect(kubeconfig=explicit, prog="t", service_account_dir=in_cluster)
    assert str(caught.value).startswith(f"{path}: "), caught.value


async def test_a_file_that_cannot_be_read_is_named(
    in_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path))  # a directory
    with pytest.raises(InvalidConfiguration, match=f"^{tmp_path}: Is a directory$"):
        await connect(prog="t", service_account_dir=in_cluster)


async def test_missing_files(in_cluster: str, tmp_path: Path) -> None:
    # --kubeconfig naming a missing file is an error, in a cluster or not
    with pytest.raises(NoSuchKubeconfig):
        await connect(kubeconfig=str(tmp_path / "gone"), prog="t", service_account_dir=in_cluster)
    # an explicit file that chooses no context: the caller asked for it, not for the cluster
    (tmp_path / "empty").write_text("")
    with pytest.raises(InvalidConfiguration, match="empty: no context chosen"):
        await connect(kubeconfig=str(tmp_path / "empty"), prog="t", service_account_dir=in_cluster)


async def test_outside_a_cluster_missing_files_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "gone"))
    with pytest.raises(NoSuchKubeconfig) as caught:
        await connect(prog="t", service_account_dir=str(tmp_path))
    assert caught.value.from_env and caught.value.path == str(tmp_path / "gone")


async def test_evict_refuses_a_kubeconfig_it_cannot_read(tmp_path: Path) -> None:
    config = tmp_path / "kc"
    config.write_text(json.dumps({"users": [{"name": "u", "user": {"token": 5}}]}))
    # in a pod, with a ServiceAccount at hand: still refused, naming the file and the field
    env = {"KUBECONFIG": str(config), "KUBERNETES_SERVICE_HOST": "10.96.0.1"}
    env["KUBERNETES_SERVICE_PORT"] = "443"
    code, _, err = await evict("cordon", "node-1", env=env)
    assert code == 2
    assert lines(err) == [
        f"error: invalid configuration: {config}: users 'u': token: must be a string, not a "
        "number (see 'evict cordon --help')"
    ]
