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
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesim
from evictor.api.calls import request
from evictor.api.connect import CERT_CHECK, EXEC_SKEW, TOKEN_FILE_PERIOD, connect
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator

from .conftest import EVICT, node, pdb, pin, pod, replicaset, wait_until

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
        await wait_until(lambda: len(sim.requests.filter(subresource="eviction")) >= 2, timeout=20)
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

        await wait_until(lambda: watches() == [200])
        token_clock(sim).offset += 3600  # the watch in flight keeps its connection...
        token_file.write_text(issue(sim))
        sim.apply(pod("hog", owner=None))
        await wait_until(lambda: any(e.pod.name == "hog" for e in informer.pods.values()))
        # ...and the next one (after the server's 1 s timeout) is refused once, then served
        await wait_until(lambda: watches()[1:] == [401, 200])
        sim.apply(pod("later", owner=None))
        await wait_until(lambda: any(e.pod.name == "later" for e in informer.pods.values()))
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
