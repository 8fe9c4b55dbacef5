"""``defer_system_cas``: the system CAs load for the first TLS connection, not at import.

aiohttp is already imported in the test process, so each check runs in a fresh interpreter.
What is compared is the trust a TLS connection gets (``cert_store_stats``), against a context
made the usual way in the same process — and then real handshakes with ``kubesim`` serving
TLS: the ``evict`` command and the agent's API client verify its certificate (kubeconfig CA,
or deferred system CAs), present the kubeconfig's client certificate, and refuse a server
signed by another CA.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubesim
from kubesim.controllers import FROZEN
from kubesim.plugins.authentication.pki import CertificateAuthority
from kubesim.sim import Simulator
from tests.support.evict import EVICT
from tests.support.manifests import node


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_aiohttp_defaults_get_the_system_cas_when_a_tls_connection_needs_them() -> None:
    out = _run(
        """
        import json, ssl
        from evictor.api.deferred import AIOHTTP_SSL_HOOK, defer_system_cas
        deferred = defer_system_cas()
        import aiohttp.connector as c

        class Req:  # what the connector reads of a request to an https URL
            def __init__(self, verify): self.ssl = verify
            def is_ssl(self): return True

        before = [c._SSL_CONTEXT_VERIFIED.cert_store_stats(),
                  c._SSL_CONTEXT_UNVERIFIED.cert_store_stats()]
        connector = c.TCPConnector.__new__(c.TCPConnector)
        connector._ssl = True
        get_context = getattr(connector, AIOHTTP_SSL_HOOK)
        verified = get_context(Req(True))
        unverified = get_context(Req(False))
        again = get_context(Req(True))
        print(json.dumps({
            "deferred": deferred,
            "before": before,
            "verified": verified.cert_store_stats(),
            "unverified": unverified.cert_store_stats(),
            "same": verified is c._SSL_CONTEXT_VERIFIED and again is verified,
            "mode": [verified.verify_mode == ssl.CERT_REQUIRED, verified.check_hostname,
                     unverified.verify_mode == ssl.CERT_NONE],
            "usual": ssl.create_default_context().cert_store_stats(),
            "second_call": defer_system_cas(),
        }))
        """
    )
    assert out["deferred"] is True
    assert out["before"] == [{"x509": 0, "crl": 0, "x509_ca": 0}] * 2  # nothing loaded at import
    assert out["verified"] == out["usual"]  # then exactly what a usual context trusts
    assert out["unverified"] == out["usual"]
    assert out["same"] is True
    assert out["mode"] == [True, True, True]
    assert out["second_call"] is False  # aiohttp already imported: nothing to defer


def test_api_client_for_http_defers_for_a_ca_file_loads_now(tmp_path: Path) -> None:
    ca = Path(ssl_default_cafile())
    single = tmp_path / "ca.crt"
    single.write_text(_first_pem(ca.read_text()))
    out = _run(
        f"""
        import asyncio, json, ssl
        from evictor.api.deferred import (
            defer_client_models, defer_system_cas, load_pending_cas, system_cas_on_first_use,
        )
        defer_client_models()
        defer_system_cas()
        from kubernetes_asyncio.client import ApiClient, Configuration

        def ctx(api):
            return api.rest_client.pool_manager.connector._ssl

        async def main():
            with system_cas_on_first_use():
                plain = ApiClient(configuration=Configuration(host="http://127.0.0.1:1"))
                system = ApiClient(configuration=Configuration(host="https://k:6443"))
            cfg = Configuration(host="https://k:6443")
            cfg.ssl_ca_cert = {str(single)!r}
            with system_cas_on_first_use():
                own_ca = ApiClient(configuration=cfg)
            after = ssl.create_default_context()  # outside the block: loads as usual
            stats = {{"plain": ctx(plain).cert_store_stats(),
                      "own_ca": ctx(own_ca).cert_store_stats(),
                      "after": after.cert_store_stats()}}
            load_pending_cas(ctx(system))
            stats["system_loaded"] = ctx(system).cert_store_stats()
            for api in (plain, system, own_ca):
                await api.close()
            return stats

        print(json.dumps(asyncio.run(main())))
        """
    )
    assert out["plain"]["x509_ca"] == 0  # an http:// server: never loaded unless TLS is used
    assert out["own_ca"]["x509_ca"] == 1  # the kubeconfig's CA, loaded at once, nothing else
    assert out["after"]["x509_ca"] > 1
    assert out["system_loaded"] == out["after"]


def ssl_default_cafile() -> str:
    import ssl

    path = ssl.get_default_verify_paths().cafile
    assert path, "no system CA bundle on this machine"
    return path


def _first_pem(bundle: str) -> str:
    begin = bundle.index("-----BEGIN CERTIFICATE-----")
    end = bundle.index("-----END CERTIFICATE-----", begin) + len("-----END CERTIFICATE-----")
    return bundle[begin:end] + "\n"


# --- real TLS handshakes against kubesim serve --tls ---------------------------------------
#
# The checks above compare trust stores; these make the connections: the ``evict`` command and
# the agent's API client reach a kubesim serving HTTPS with a CA of its own, verify its
# certificate through the kubeconfig's ``certificate-authority-data`` (or, with none, through
# the system CAs loaded only for the first TLS connection), present the client certificate
# kubesim's admin kubeconfig carries, and refuse a server their CA did not sign.

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.fixture
async def tls_sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=[node("node-1"), node("node-2")],
        time_scale=0.01,
        disabled_controllers=FROZEN,
        tls=True,
    ) as sim:
        yield sim


def _kubeconfig(sim: Simulator, path: Path, **cluster: Any) -> Path:
    """The admin kubeconfig with its cluster entry changed (a value of None removes a key)."""
    assert sim.kubeconfig_path is not None
    config = yaml.safe_load(sim.kubeconfig_path.read_text())
    entry = config["clusters"][0]["cluster"]
    for key, value in cluster.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    path.write_text(yaml.safe_dump(config))
    return path


def _other_ca() -> str:
    return base64.b64encode(CertificateAuthority().certificate_pem).decode()


async def _python(code: str, *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``code`` in a fresh interpreter (nothing imported yet), without blocking the server."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        textwrap.dedent(code),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


async def _evict(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["KUBECONFIG"] = str(kubeconfig)
    proc = await asyncio.create_subprocess_exec(
        EVICT,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_evict_verifies_kubesims_certificate_and_presents_its_client_certificate(
    tls_sim: Simulator, tmp_path: Path
) -> None:
    assert tls_sim.kubeconfig_path is not None
    code, out, err = await _evict(tls_sim.kubeconfig_path, "cordon", "node-1")
    assert code == 0, err
    assert out.strip() == "node/node-1 cordoned"
    assert (tls_sim.get("Node", "", "node-1") or {})["spec"]["unschedulable"] is True
    patches = [r for r in tls_sim.requests.filter(path="/api/v1/nodes/node-1") if r.verb == "patch"]
    assert [(r.user, r.groups, r.code) for r in patches] == [
        ("kubernetes-admin", ("system:masters", "system:authenticated"), 200)
    ]


async def test_evict_refuses_a_server_its_ca_did_not_sign(
    tls_sim: Simulator, tmp_path: Path
) -> None:
    wrong = _kubeconfig(tls_sim, tmp_path / "wrong", **{"certificate-authority-data": _other_ca()})
    code, out, err = await _evict(wrong, "cordon", "node-1")
    assert (code, out) == (1, "")
    assert "certificate verify failed" in err
    assert err.startswith("error: unable to connect to the server: ")
    assert len(err.strip().splitlines()) == 1
    assert not tls_sim.requests.filter(path="/api/v1/nodes/node-1")
    assert not (tls_sim.get("Node", "", "node-1") or {})["spec"].get("unschedulable")


AGENT_WHOAMI = """
    import asyncio, json, ssl
    from agent.cli import _api_client

    async def main():
        api = await _api_client({kubeconfig!r})
        session = api.rest_client.pool_manager
        context = session.connector._ssl
        before = context.cert_store_stats()
        try:
            async with session.post(api.configuration.host + {whoami!r}, json={{}}) as resp:
                user = (await resp.json())["status"]["userInfo"]
                out = {{"code": resp.status, "user": user}}
        except Exception as exc:
            out = {{"error": type(exc).__name__, "text": str(exc)}}
        out["before"] = before
        out["after"] = context.cert_store_stats()
        await api.close()
        return out

    print(json.dumps(asyncio.run(main())))
"""


async def test_the_agents_client_speaks_tls_with_the_kubeconfigs_ca_and_certificate(
    tls_sim: Simulator, tmp_path: Path
) -> None:
    out = await _python(AGENT_WHOAMI.format(kubeconfig=str(tls_sim.kubeconfig_path), whoami=WHOAMI))
    assert out["code"] == 201, out
    assert out["user"]["username"] == "kubernetes-admin"
    assert out["user"]["groups"] == ["system:masters", "system:authenticated"]
    assert out["before"]["x509_ca"] == 1  # the kubeconfig's CA, and no system CA
    assert out["after"]["x509_ca"] == 1


async def test_the_agents_client_refuses_a_server_its_ca_did_not_sign(
    tls_sim: Simulator, tmp_path: Path
) -> None:
    wrong = _kubeconfig(tls_sim, tmp_path / "wrong", **{"certificate-authority-data": _other_ca()})
    out = await _python(AGENT_WHOAMI.format(kubeconfig=str(wrong), whoami=WHOAMI))
    assert out["error"] == "ClientConnectorCertificateError", out
    assert "certificate verify failed" in out["text"]
    assert not tls_sim.requests.filter(path=WHOAMI)


async def test_deferred_system_cas_load_for_the_first_real_handshake(
    tls_sim: Simulator, tmp_path: Path
) -> None:
    # No CA in the kubeconfig: the system's trust decides. Made to hold kubesim's CA (through
    # OpenSSL's SSL_CERT_FILE), it is loaded only when the first TLS connection needs it.
    system = tmp_path / "system-cas.pem"
    system.write_bytes(tls_sim.certificate_authority_pem() or b"")
    bare = _kubeconfig(tls_sim, tmp_path / "bare", **{"certificate-authority-data": None})
    env = {"SSL_CERT_FILE": str(system), "SSL_CERT_DIR": str(tmp_path / "none")}
    out = await _python(AGENT_WHOAMI.format(kubeconfig=str(bare), whoami=WHOAMI), env=env)
    assert out["before"]["x509_ca"] == 0  # deferred: nothing loaded before the handshake
    assert out["code"] == 201, out
    assert out["user"]["username"] == "kubernetes-admin"
    assert out["after"]["x509_ca"] == 1  # the "system" CAs, loaded for that handshake
    # and the real system CAs do not trust kubesim's own CA
    out = await _python(AGENT_WHOAMI.format(kubeconfig=str(bare), whoami=WHOAMI))
    assert out["error"] == "ClientConnectorCertificateError", out
