"""Health tells the truth: an agent whose credential expired for good turns ``/readyz`` red with
the reason within its bound, stops the systemd watchdog pings (so systemd restarts it), counts
the refusals by code — while ``/healthz`` keeps meaning "the process loop runs"."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import time
import types
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

import kubesim
from agent.config import load_config
from agent.daemon import Agent
from agent.systemd import Notifier
from evictor.api.connect import connect
from evictor.api.health import ApiHealth, request_kind
from kubesim.sim import Simulator
from tests.support.fakenode import MI, NODES, FakeNode, pod
from tests.support.wait import until

SA = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: agent, namespace: kube-system}"
BOUND = 0.3  # seconds of refusals before the agent says it is not ready


class TokenClock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    state = "\n---\n".join([NODES, SA, pod("a", request="10Mi")])
    async with kubesim.serve(state=state, tls=True, time_scale=0.01, bookmark_interval=0.2) as s:
        s.service_account_tokens.clock = TokenClock()
        yield s


def kubeconfig(sim: Simulator, tmp_path: Path, token_file: Path) -> Path:
    ca = sim.certificate_authority_pem()
    assert ca is not None
    path = tmp_path / "kubeconfig"
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
                "users": [{"name": "agent", "user": {"tokenFile": str(token_file)}}],
                "contexts": [{"name": "c", "context": {"cluster": "sim", "user": "agent"}}],
                "current-context": "c",
            }
        )
    )
    return path


def drain(server: socket.socket, into: list[str]) -> None:
    try:
        while True:
            into.append(server.recv(4096).decode())
    except BlockingIOError:
        pass


async def scraped(base: str, name: str) -> float:
    """The value of an unlabelled sample in the agent's /metrics, as Prometheus reads it."""
    async with aiohttp.ClientSession() as session, session.get(base + "/metrics") as r:
        text = await r.text()
    [value] = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]
    return value


async def test_an_unrenewable_credential_turns_readyz_red_and_stops_the_watchdog(
    sim: Simulator, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(sim.service_account_tokens.issue("kube-system", "agent")[0])
    conn = await connect(kubeconfig=str(kubeconfig(sim, tmp_path, token_file)), prog="agent")
    sock_path = f"{tmp_path}/notify.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(sock_path)
    server.setblocking(False)
    notifier = Notifier(
        {"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": str(os.getpid())}
    )
    fake = FakeNode(sim, usage={"default/a": 10 * MI})
    cfg = load_config(
        {"housekeepingInterval": "50ms", "nodeName": "node-1", "listen": "127.0.0.1:0"}
    )
    agent = Agent(
        cfg,
        api_client=conn.api_client,
        stats=fake.get_summary,
        use_psi=False,
        notifier=notifier,
        watch_timeout=1,
        api_failure_bound=BOUND,
    )
    messages: list[str] = []

    async def pump() -> None:  # a unix datagram socket queues ~10 messages, then sends block
        while True:
            drain(server, messages)
            await asyncio.sleep(0.01)

    pumping = asyncio.create_task(pump())
    try:
        await agent.start()
        base = f"http://127.0.0.1:{agent.http_port}"
        await until(lambda: agent.ready()[0])
        await until(lambda: messages.count("WATCHDOG=1") >= 2)
        assert await scraped(base, "eviction_agent_ready") == 1.0
        # the token expires and nothing renews it: the file still holds the refused one
        sim.service_account_tokens.clock.offset += 7200  # type: ignore[attr-defined]
        await until(lambda: not agent.ready()[0], timeout=5)
        refused_at = conn.api_client.health.refused_since
        assert refused_at is not None
        assert time.monotonic() - refused_at < BOUND + 0.3  # red within the bound
        why = agent.ready()[1]
        assert "refuses the agent's requests" in why and "401" in why
        async with aiohttp.ClientSession() as session, session.get(base + "/readyz") as r:
            assert r.status == 503
            body = await r.text()
        # the kind of request and the counts, not its path (the node's name is in its query)
        assert "last: 401 to GET pods)" in body and "×401;" in body
        assert "node-1" not in body and "/api/" not in body
        async with aiohttp.ClientSession() as session:
            async with session.get(base + "/healthz") as r:
                assert r.status == 200  # the process loop still runs
            async with session.get(base + "/metrics") as r:
                metrics = await r.text()
        assert 'eviction_agent_api_errors_total{code="401"}' in metrics
        assert await scraped(base, "eviction_agent_ready") == 0.0  # what alerts see
        # the watchdog is no longer pinged (every 50 ms while healthy), the loop still syncs
        before, syncs = messages.count("WATCHDOG=1"), agent.loop.stats.syncs
        await asyncio.sleep(0.3)
        assert messages.count("WATCHDOG=1") == before
        assert agent.loop.stats.syncs > syncs
    finally:
        pumping.cancel()
        await agent.stop()
        await conn.api_client.close()
        server.close()


async def test_a_pod_watch_that_stays_down_turns_readyz_red_with_its_error() -> None:
    state = "\n---\n".join([NODES, pod("a", request="10Mi")])
    async with kubesim.serve(state=state, time_scale=0.01, bookmark_interval=0.2) as sim:
        fake = FakeNode(sim, usage={"default/a": 10 * MI})
        cfg = load_config({"housekeepingInterval": "50ms", "nodeName": "node-1"})
        api = sim.api_client()
        agent = Agent(
            cfg,
            api_client=api,
            stats=fake.get_summary,
            use_psi=False,
            serve_http=False,
            watch_timeout=1,
            api_failure_bound=BOUND,
        )
        try:
            await agent.start()
            await until(lambda: agent.ready()[0])
            sim.add_faults(
                {
                    "faults": [
                        {
                            "match": {"resource": "pods", "verb": verb},
                            "respond": {
                                "code": 500,
                                "reason": "InternalError",
                                "message": "webhook: team-secret/payroll-7f9 is busy",
                            },
                        }
                        for verb in ("list", "watch")
                    ]
                }
            )
            await until(lambda: not agent.ready()[0], timeout=5)
            assert agent.informer.state.down_since is not None
            why = agent.ready()[1]
            assert why.startswith("pod watch not live for") and "answered 500" in why
            assert "failed list" in why
            assert "payroll" not in why and "team-secret" not in why  # the server's text
            assert agent.health() == (True, "")  # /healthz: the loop runs
            sim.injector.active.clear()  # the API serves again: ready again, by itself
            await until(lambda: agent.ready()[0], timeout=5)
        finally:
            await agent.stop()
            await api.close()


TENANT_REQUESTS = [
    ("PATCH /api/v1/namespaces/team-secret/pods/payroll-7f9/status", "PATCH pods/status"),
    ("POST /api/v1/namespaces/team-secret/pods/payroll-7f9/eviction", "POST pods/eviction"),
    ("DELETE /api/v1/namespaces/team-secret/pods/payroll-7f9", "DELETE pods"),
    ("POST /apis/events.k8s.io/v1/namespaces/team-secret/events", "POST events.events.k8s.io"),
    ("GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&watch=true", "GET pods"),
    ("PATCH /api/v1/nodes/node-1/status", "PATCH nodes/status"),
    ("GET /api/v1/namespaces/team-secret", "GET namespaces"),
    ("PUT /api/v1/namespaces/team-secret/finalize", "PUT namespaces/finalize"),
    ("GET /apis/policy/v1/poddisruptionbudgets", "GET poddisruptionbudgets.policy"),
    ("GET /version", "GET /version"),
    ("GET /apis", "GET apis"),
]


@pytest.mark.parametrize(("what", "kind"), TENANT_REQUESTS)
def test_a_refusal_is_kept_as_the_kind_of_request(what: str, kind: str) -> None:
    assert request_kind(what) == kind


segment = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)


@given(
    namespace=segment,
    name=segment,
    resource=st.sampled_from(["pods", "events", "configmaps"]),
    sub=st.sampled_from(["", "/status", "/eviction"]),
    group=st.sampled_from(["", "events.k8s.io"]),
)
def test_request_kind_depends_on_no_namespace_and_no_name(
    namespace: str, name: str, resource: str, sub: str, group: str
) -> None:
    assume(namespace not in ("status", "finalize"))  # the namespace object's subresources
    prefix = f"/apis/{group}/v1" if group else "/api/v1"
    kind = request_kind(f"PATCH {prefix}/namespaces/{namespace}/{resource}/{name}{sub}")
    assert kind == f"PATCH {resource}{'.' + group if group else ''}{sub}"


async def test_readiness_says_what_is_refused_and_how_often_naming_no_pod() -> None:
    clock = [0.0]
    health = ApiHealth(clock=lambda: clock[0])
    client = types.SimpleNamespace(health=health)
    cfg = load_config({"nodeName": "node-1"})

    async def no_stats() -> dict[str, object]:
        raise AssertionError("the agent is not started")

    agent = Agent(
        cfg,
        api_client=client,
        stats=no_stats,
        serve_http=False,
        use_psi=False,
        api_failure_bound=60,
    )
    for _ in range(3):
        health.record(401, what="GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1")
    clock[0] = 61.0
    health.record(403, what="PATCH /api/v1/namespaces/team-secret/pods/payroll-7f9/status")
    why = agent.api_problem()
    assert why == (
        "the API server refuses the agent's requests for 61s (3×401, 1×403; last: 403 to PATCH"
        " pods/status), also after refreshing its credentials"
    )
    health.record(200)  # any other answer: ready again, and the next streak counts afresh
    assert agent.api_problem() == ""
    health.record(403, what="DELETE /api/v1/namespaces/team-secret/pods/payroll-7f9")
    assert health.refusals == {403: 1}
