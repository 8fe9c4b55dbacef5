"""``evictor.api.connect`` against kubesim over TLS: credentials that rotate while a client runs.

kubesim authenticates ServiceAccount tokens on its own token clock (``sim.service_account_tokens
.clock``), so a test expires a token by moving that clock, and client certificates by the CA
that signed them; the client's own clock (``connect(clock=...)``) decides when it looks again at
a token file or a certificate, or re-runs an exec plugin before its credential expires. Nothing
waits on real time.
"""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesim
from evictor.api.calls import request
from evictor.api.connect import (
    CERT_CHECK,
    EXEC_SKEW,
    TOKEN_FILE_PERIOD,
    Credentials,
    InvalidConfiguration,
    connect,
)
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.evict import EVICT
from tests.support.living import pin
from tests.support.manifests import node, pdb, pod, replicaset
from tests.support.wait import until

AGENT_SA = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "agent", "namespace": "kube-system"},
}


class Clock:
    """The client's clock: moves only when the test says so."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class TokenClock:
    """kubesim's token clock, moved by the test to expire tokens."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=[node("node-1"), AGENT_SA], tls=True, disabled_controllers=FROZEN, time_scale=0.01
    ) as s:
        s.service_account_tokens.clock = TokenClock()
        yield s


def token_clock(sim: Simulator) -> TokenClock:
    clock = sim.service_account_tokens.clock
    assert isinstance(clock, TokenClock)
    return clock


def issue(sim: Simulator, seconds: int = 600) -> str:
    token, _ = sim.service_account_tokens.issue("kube-system", "agent", expiration_seconds=seconds)
    return token


def kubeconfig(sim: Simulator, path: Path, user: dict[str, Any]) -> Path:
    ca = sim.certificate_authority_pem()
    assert ca is not None
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "sim",
                        "cluster": {
                            "server": sim.url,
                            "certificate-authority-data": base64.b64encode(ca).decode(),
                        },
                    }
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "sim", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


async def get_node(api: Any) -> int:
    resp = await request(api, "GET", "/api/v1/nodes/node-1")
    try:
        await resp.read()
        return int(resp.status)
    finally:
        resp.release()


def codes(sim: Simulator) -> list[tuple[int, str]]:
    return [(r.code, r.user) for r in sim.requests.filter(resource="nodes", name="node-1")]


async def test_a_rotated_token_file_is_read_again_after_a_401(
    sim: Simulator, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(issue(sim))
    clock = Clock()
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", {"tokenFile": "token"})),
        prog="test",
        clock=clock,
    )
    api = conn.api_client
    try:
        assert await get_node(api) == 200
        # the kubelet rotates the projected token; the old one expires (token clock + 1 h)
        token_clock(sim).offset += 3600
        token_file.write_text(issue(sim))
        assert await get_node(api) == 200  # 401, file read again, sent again
        assert [c for c, _ in codes(sim)] == [200, 401, 200]
        assert api.credentials.refreshes == 1
        # without a 401 the file is read again once the copy is a minute old
        newer = issue(sim)
        token_file.write_text(newer)
        clock.now += TOKEN_FILE_PERIOD
        assert await get_node(api) == 200
        assert api.configuration.api_key["BearerToken"] == f"Bearer {newer}"
        assert [c for c, _ in codes(sim)] == [200, 401, 200, 200]
    finally:
        await api.close()


PLUGIN = textwrap.dedent(
    """
    import json, os, sys
    d = sys.argv[1]
    runs = int(open(os.path.join(d, "runs")).read() or 0) + 1
    open(os.path.join(d, "runs"), "w").write(str(runs))
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    status = {"token": open(os.path.join(d, "token")).read().strip()}
    expiry = open(os.path.join(d, "expiry")).read().strip()
    if expiry:
        status["expirationTimestamp"] = expiry
    print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                      "status": status}))
    """
)


def exec_user(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "runs").write_text("0")
    (tmp_path / "expiry").write_text("")
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
            "interactiveMode": "Never",
        }
    }


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


async def test_an_exec_plugin_is_run_again_before_its_credential_expires(
    sim: Simulator, tmp_path: Path
) -> None:
    clock = Clock()
    (tmp_path / "token").write_text(issue(sim))
    user = exec_user(tmp_path)
    (tmp_path / "expiry").write_text(rfc3339(clock.now + 300))
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test", clock=clock
    )
    api = conn.api_client
    try:
        assert await get_node(api) == 200
        assert (tmp_path / "runs").read_text() == "1"
        assert await get_node(api) == 200
        assert (tmp_path / "runs").read_text() == "1"  # still valid: not run again
        # shortly before the expiry it announced, the plugin runs again and its new token is sent
        fresh = issue(sim)
        (tmp_path / "token").write_text(fresh)
        clock.now += 300 - EXEC_SKEW
        assert await get_node(api) == 200
        assert (tmp_path / "runs").read_text() == "2"
        assert api.configuration.api_key["BearerToken"] == f"Bearer {fresh}"
        assert [c for c, _ in codes(sim)] == [200, 200, 200]  # never a 401
    finally:
        await api.close()


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ('{"status": ' + "[" * 5000 + "]" * 5000 + "}", "its output is not an ExecCredential"),
        ('{"status": "a token"}', "its output is not an ExecCredential"),
        ('[{"status": {}}]', "its output is not an ExecCredential"),
        (
            '{"status": {"token": "t", "expirationTimestamp": "tomorrow"}}',
            "expirationTimestamp: 'tomorrow' is not an RFC 3339 time",
        ),
    ],
    ids=["nested-5000-deep", "status-a-string", "a-list", "bad-expiry"],
)
async def test_an_exec_plugins_malformed_output_is_a_configuration_error(
    sim: Simulator, tmp_path: Path, output: str, message: str
) -> None:
    """Whatever a plugin prints, the answer is the one-line configuration error (exit 2 in
    ``evict``, logged by the agent), never a RecursionError or AttributeError."""
    (tmp_path / "out.json").write_text(output)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", f"print(open({str(tmp_path / 'out.json')!r}).read())"],
            "interactiveMode": "Never",
        }
    }
    with pytest.raises(InvalidConfiguration) as caught:
        conn = await connect(kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="t")
        try:
            await get_node(conn.api_client)
        finally:
            await conn.api_client.close()
    assert str(caught.value) == f"exec plugin {sys.executable}: {message}"


async def test_an_exec_token_the_server_refuses_is_renewed_once(
    sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(issue(sim, 600))
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", exec_user(tmp_path))), prog="test"
    )
    api = conn.api_client
    try:
        assert await get_node(api) == 200
        token_clock(sim).offset += 3600  # expired on the server's clock; no expiry announced
        (tmp_path / "token").write_text(issue(sim))
        assert await get_node(api) == 200
        assert [c for c, _ in codes(sim)] == [200, 401, 200]
        assert (tmp_path / "runs").read_text() == "2"
        # a credential the plugin cannot renew: it runs once more, hands out the same refused
        # token, and the request is not sent again with it: the 401 is the answer
        token_clock(sim).offset += 3600
        assert await get_node(api) == 401
        assert [c for c, _ in codes(sim)] == [200, 401, 200, 401]
        assert (tmp_path / "runs").read_text() == "3"
    finally:
        await api.close()


async def test_a_renewed_client_certificate_is_presented_on_new_connections(
    sim: Simulator, tmp_path: Path
) -> None:
    ca = sim.certificate_authority
    assert ca is not None

    def write(user: str) -> None:
        creds = ca.issue_client(user, ["system:masters"])
        (tmp_path / "tls.crt").write_bytes(creds.certificate)
        (tmp_path / "tls.key").write_bytes(creds.key)
        os.chmod(tmp_path / "tls.key", 0o600)

    write("agent-before")
    clock = Clock()
    user = {"client-certificate": "tls.crt", "client-key": "tls.key"}
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test", clock=clock
    )
    api = conn.api_client
    try:
        assert await get_node(api) == 200
        write("agent-after")
        assert await get_node(api) == 200  # not looked at again yet
        clock.now += CERT_CHECK
        assert await get_node(api) == 200
        assert [u for _, u in codes(sim)] == ["agent-before", "agent-before", "agent-after"]
    finally:
        await api.close()


async def test_in_cluster_reads_the_service_account_volume(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = sim.certificate_authority_pem()
    assert ca is not None and sim.url is not None
    (tmp_path / "ca.crt").write_bytes(ca)
    (tmp_path / "token").write_text(issue(sim))
    host, _, port = sim.url.removeprefix("https://").rpartition(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    conn = await connect(prog="test", service_account_dir=str(tmp_path))
    api = conn.api_client
    try:
        assert conn.in_cluster
        assert await get_node(api) == 200
        token_clock(sim).offset += 3600
        (tmp_path / "token").write_text(issue(sim))
        assert await get_node(api) == 200
        assert [c for c, _ in codes(sim)] == [200, 401, 200]
        assert codes(sim)[-1][1] == "system:serviceaccount:kube-system:agent"
    finally:
        await api.close()


async def test_a_long_evict_drain_carries_on_across_a_token_rotation(
    sim: Simulator, tmp_path: Path
) -> None:
    sim.apply(replicaset("web"))
    for i in range(2):
        sim.apply(pod(f"web-{i}", app="web"))
    sim.apply(pdb("web", min_available=2))
    pin(sim, "web", 0)
    token_file = tmp_path / "token"
    token_file.write_text(issue(sim))
    kc = kubeconfig(sim, tmp_path / "kc", {"tokenFile": str(token_file)})
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    proc = await asyncio.create_subprocess_exec(
        EVICT, "drain", "node-1", "--kubeconfig", str(kc), "--timeout=30s",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        # the drain is held by the budget; meanwhile its token rotates and the old one expires
        await until(lambda: len(sim.requests.filter(subresource="eviction")) >= 2, timeout=20)
        token_clock(sim).offset += 3600
        token_file.write_text(issue(sim))
        pin(sim, "web", 2)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert "node/node-1 drained" in out.decode()
    log = sim.requests.filter()
    refused = [i for i, r in enumerate(log) if r.code == 401]
    assert refused, "the old token was never refused: the test proves nothing"
    for i in refused:  # each refused request was sent again with the new token and served
        r = log[i]
        again = [
            a for a in log[i + 1 :] if (a.verb, a.resource, a.name) == (r.verb, r.resource, r.name)
        ]
        assert again and again[0].code != 401, (r.verb, r.resource, r.name)
    granted = [r for r in sim.requests.filter(subresource="eviction") if r.code == 201]
    assert {r.name for r in granted} == {"web-0", "web-1"}


async def test_the_agents_pod_view_carries_on_across_a_token_rotation(
    sim: Simulator, tmp_path: Path
) -> None:
    from agent.informer import PodInformer

    token_file = tmp_path / "token"
    token_file.write_text(issue(sim))
    kc = kubeconfig(sim, tmp_path / "kc", {"tokenFile": str(token_file)})
    conn = await connect(kubeconfig=str(kc), prog="eviction-agent")
    informer = PodInformer(conn.api_client, "node-1", watch_timeout=1)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 5)

        def watches() -> list[int]:
            return [r.code for r in sim.requests.filter(verb="watch", resource="pods")]

        await until(lambda: watches() == [200], timeout=30.0)
        token_clock(sim).offset += 3600  # the watch in flight keeps its connection...
        token_file.write_text(issue(sim))
        sim.apply(pod("hog", owner=None))
        await until(lambda: any(e.pod.name == "hog" for e in informer.pods.values()), timeout=30.0)
        # ...and the next one (after the server's 1 s timeout) is refused once, then served
        await until(lambda: watches()[1:] == [401, 200], timeout=30.0)
        sim.apply(pod("later", owner=None))
        await until(
            lambda: any(e.pod.name == "later" for e in informer.pods.values()), timeout=30.0
        )
        assert informer.failures == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await conn.api_client.close()


async def test_a_plugin_that_fails_later_leaves_the_answer_to_the_server(
    sim: Simulator, tmp_path: Path
) -> None:
    clock = Clock()
    (tmp_path / "token").write_text(issue(sim))
    user = exec_user(tmp_path)
    (tmp_path / "expiry").write_text(rfc3339(clock.now + 60))
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test", clock=clock
    )
    api = conn.api_client
    try:
        (tmp_path / "plugin.py").write_text("import sys; sys.exit(3)")
        clock.now += 60  # due again, and the plugin now fails: the current token is sent
        assert await get_node(api) == 200
        token_clock(sim).offset += 3600
        assert await get_node(api) == 401  # refused, and nothing to refresh it with
    finally:
        await api.close()


async def test_a_broken_plugin_is_a_configuration_error_at_connect(
    sim: Simulator, tmp_path: Path
) -> None:
    from evictor.api.connect import ConfigError

    user = exec_user(tmp_path)
    (tmp_path / "plugin.py").write_text("import sys; print('nope', file=sys.stderr); sys.exit(3)")
    with pytest.raises(ConfigError, match="exit 3: nope"):
        await connect(kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test")


CERT_PLUGIN = textwrap.dedent(
    """
    import json, os, sys
    d = sys.argv[1]
    status = {"clientCertificateData": open(os.path.join(d, "exec.crt")).read(),
              "clientKeyData": open(os.path.join(d, "exec.key")).read()}
    expiry = open(os.path.join(d, "expiry")).read().strip()
    if expiry:
        status["expirationTimestamp"] = expiry
    print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                      "status": status}))
    """
)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's temporary directory (``tempfile.tempdir``), watched by the test."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def holding(directory: Path, secret: bytes) -> list[Path]:
    """The files under ``directory`` that hold ``secret``."""
    return [p for p in directory.rglob("*") if p.is_file() and secret in p.read_bytes()]


async def test_an_exec_plugins_client_key_is_on_disk_only_while_tls_loads_it(
    sim: Simulator, tmp_path: Path, private_tmp: Path
) -> None:
    ca = sim.certificate_authority
    assert ca is not None

    def renew(user: str) -> bytes:
        creds = ca.issue_client(user, ["system:masters"])
        (tmp_path / "exec.crt").write_bytes(creds.certificate)
        (tmp_path / "exec.key").write_bytes(creds.key)
        return creds.key

    keys = [renew("exec-before")]
    clock = Clock()
    (tmp_path / "plugin.py").write_text(CERT_PLUGIN)
    (tmp_path / "expiry").write_text(rfc3339(clock.now + 300))
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
            "interactiveMode": "Never",
        }
    }
    conn = await connect(
        kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test", clock=clock
    )
    api = conn.api_client
    try:
        assert holding(private_tmp, keys[0]) == []  # loaded, and gone already
        assert await get_node(api) == 200
        keys.append(renew("exec-after"))  # the plugin hands out a renewed pair when due
        clock.now += 300 - EXEC_SKEW
        assert await get_node(api) == 200
        assert [u for _, u in codes(sim)] == ["exec-before", "exec-after"]
    finally:
        await api.close()
    # the CA may be in a temporary file (it is public); no key is in any, nor a directory left
    assert [holding(private_tmp, key) for key in keys] == [[], []]
    assert not [p for p in private_tmp.iterdir() if p.is_dir()]


async def test_an_inline_client_key_never_lands_in_a_temporary_file(
    sim: Simulator, tmp_path: Path, private_tmp: Path
) -> None:
    ca = sim.certificate_authority
    assert ca is not None
    creds = ca.issue_client("inline", ["system:masters"])
    user = {
        "client-certificate-data": base64.b64encode(creds.certificate).decode(),
        "client-key-data": base64.b64encode(creds.key).decode(),
    }
    conn = await connect(kubeconfig=str(kubeconfig(sim, tmp_path / "kc", user)), prog="test")
    try:
        assert await get_node(conn.api_client) == 200
        assert codes(sim)[-1][1] == "inline"
        # the CA may be in a temporary file (it is public); the key is in none
        assert holding(private_tmp, creds.key) == []
        assert not [p for p in private_tmp.iterdir() if p.is_dir()]
    finally:
        await conn.api_client.close()


def test_key_files_live_in_a_private_directory_for_one_step(private_tmp: Path) -> None:
    class Configuration:  # the two attributes kubernetes-asyncio's TLS context reads
        cert_file: str | None = "/etc/user.crt"
        key_file: str | None = "/etc/user.key"

    cfg = Configuration()
    creds = Credentials(key_pair=(b"CERT", b"KEY"))
    with creds.presented(cfg):
        assert cfg.cert_file is not None and cfg.key_file is not None
        directory = Path(cfg.key_file).parent
        assert directory.parent == private_tmp
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        assert stat.S_IMODE(Path(cfg.key_file).stat().st_mode) == 0o600
        assert Path(cfg.cert_file).read_bytes() == b"CERT"
        assert Path(cfg.key_file).read_bytes() == b"KEY"
    assert not directory.exists()
    assert (cfg.cert_file, cfg.key_file) == ("/etc/user.crt", "/etc/user.key")
    with pytest.raises(RuntimeError), creds.presented(cfg):  # a failed load cleans up too
        raise RuntimeError
    assert list(private_tmp.iterdir()) == []
    with Credentials().presented(cfg):  # nothing in memory: the configuration's own files
        assert cfg.key_file == "/etc/user.key"
