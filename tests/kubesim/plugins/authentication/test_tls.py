"""``Simulator(tls=True)``: real TLS handshakes — the server's certificate checked against the
CA kubesim generated, client certificates as kube-apiserver's x509 authenticator reads them,
kubeadm's admin certificate in the kubeconfig, ``kubesim certificate`` and the refusal to
carry credentials in clear beyond loopback."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

import kubesim
from kubesim.cli import main
from kubesim.controllers import FROZEN
from kubesim.core.attributes import Attributes
from kubesim.plugins.authentication.pki import CertificateAuthority, Credentials
from kubesim.plugins.authorization import Decision
from kubesim.sim import AUTHORIZATION_MODES, InsecureServing, Simulator
from tests.support.api import STATE

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
CERTIFICATES = "/_kubesim/certificates"


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(
        state=STATE, time_scale=0.01, disabled_controllers=FROZEN, tls=True
    ) as s:
        yield s


def context(
    ca: bytes | None, creds: Credentials | None = None, *, where: Path | None = None
) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.decode() if ca else None)
    if creds is not None:
        assert where is not None
        (where / "c.crt").write_bytes(creds.certificate)
        (where / "c.key").write_bytes(creds.key)
        ctx.load_cert_chain(where / "c.crt", where / "c.key")
    return ctx


async def call(
    url: str,
    method: str,
    path: str,
    ctx: ssl.SSLContext,
    *,
    body: Any = None,
    token: str | None = None,
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url + path, json=body, ssl=ctx, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


def ca_of(sim: Simulator) -> bytes:
    pem = sim.certificate_authority_pem()
    assert pem is not None
    return pem


async def whoami(sim: Simulator, ctx: ssl.SSLContext, **kw: Any) -> dict[str, Any]:
    code, out = await call(sim.url, "POST", WHOAMI, ctx, body={}, **kw)
    assert code == 201, out
    info: dict[str, Any] = out["status"]["userInfo"]
    return info


async def test_the_kubeconfig_is_kubeadms_admin_conf(sim: Simulator) -> None:
    assert sim.url.startswith("https://127.0.0.1:")
    assert sim.kubeconfig_path is not None
    config = yaml.safe_load(sim.kubeconfig_path.read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == sim.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca_of(sim)
    user = config["users"][0]["user"]
    assert set(user) == {"client-certificate-data", "client-key-data"}  # no token
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:masters"
    ]
    assert sim.admin_kubeconfig_user() == user


async def test_the_api_client_is_the_admin_over_verified_tls(sim: Simulator) -> None:
    from kubernetes_asyncio import client

    async with sim.api_client() as api:
        assert api.configuration.verify_ssl
        names = {ns.metadata.name for ns in (await client.CoreV1Api(api).list_namespace()).items}
        assert {"default", "prod"} <= names
    [*_, record] = sim.requests.filter(path="/api/v1/namespaces")
    assert (record.user, record.groups) == (
        "kubernetes-admin",
        ("system:masters", "system:authenticated"),
    )


async def test_a_client_certificate_is_its_cn_and_os(sim: Simulator, tmp_path: Path) -> None:
    ca = sim.certificate_authority
    assert ca is not None
    alice = ca.issue_client("alice", ["devs", "ops"])
    info = await whoami(sim, context(ca_of(sim), alice, where=tmp_path))
    assert info["username"] == "alice"
    assert info["groups"] == ["devs", "ops", "system:authenticated"]
    [credential_id] = info["extra"]["authentication.kubernetes.io/credential-id"]
    assert credential_id.startswith("X509SHA256=") and len(credential_id) == 11 + 64
    # the certificate wins over a token, as in kube-apiserver (x509 before tokens)
    info = await whoami(sim, context(ca_of(sim), alice, where=tmp_path), token=sim.admin_token)
    assert info["username"] == "alice"
    # without a certificate: the token, or anonymous
    assert (await whoami(sim, context(ca_of(sim)), token=sim.admin_token))[
        "username"
    ] == "kubernetes-admin"
    assert (await whoami(sim, context(ca_of(sim))))["username"] == "system:anonymous"


async def test_a_certificate_from_another_ca_fails_the_handshake(
    sim: Simulator, tmp_path: Path
) -> None:
    mallory = CertificateAuthority().issue_client("kubernetes-admin", ["system:masters"])
    with pytest.raises(aiohttp.ClientError):
        await whoami(sim, context(ca_of(sim), mallory, where=tmp_path))
    assert not sim.requests.filter(path=WHOAMI)  # never served


async def test_a_client_trusting_another_ca_refuses_the_server(sim: Simulator) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await whoami(sim, context(CertificateAuthority().certificate_pem))
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await whoami(sim, ssl.create_default_context())  # the system CAs do not know it either


async def test_the_serving_certificate_names_localhost_too(sim: Simulator) -> None:
    url = sim.url.replace("127.0.0.1", "localhost")
    code, _ = await call(url, "GET", "/version", context(ca_of(sim)))
    assert code == 200


async def test_only_masters_may_mint_certificates_even_when_all_is_allowed(
    sim: Simulator, tmp_path: Path
) -> None:
    ca = sim.certificate_authority
    assert ca is not None
    bob = context(ca_of(sim), ca.issue_client("bob", ["devs"]), where=tmp_path)
    code, out = await call(sim.url, "POST", CERTIFICATES, bob, body={"user": "eve"})
    assert code == 403
    assert out["message"] == ('forbidden: User "bob" cannot create path "/_kubesim/certificates"')
    code, _ = await call(sim.url, "POST", CERTIFICATES, context(ca_of(sim)), body={"user": "e"})
    assert code == 403  # anonymous
    admin = sim.admin_credentials()
    as_admin = context(ca_of(sim), admin, where=tmp_path)
    code, out = await call(
        sim.url, "POST", CERTIFICATES, as_admin, body={"user": "carol", "groups": ["g"]}
    )
    assert code == 200
    assert out["server"] == sim.url
    assert out["certificateAuthority"].encode() == ca_of(sim)
    for bad in ({}, {"user": ""}, {"user": "x", "groups": "g"}, {"user": "x", "days": 0}, [1]):
        code, out = await call(sim.url, "POST", CERTIFICATES, as_admin, body=bad)
        assert code == 400, bad


async def test_no_certificates_from_a_server_without_tls() -> None:
    async with kubesim.serve(disabled_controllers=FROZEN) as plain:
        code, _ = await call(plain.url, "POST", CERTIFICATES, ssl.create_default_context())
        assert code == 403  # anonymous
        code, out = await call(
            plain.url,
            "POST",
            CERTIFICATES,
            ssl.create_default_context(),
            body={"user": "x"},
            token=plain.admin_token,
        )
        assert code == 400
        assert "does not serve TLS" in out["error"]


async def test_kubesim_certificate_writes_a_real_clusters_kubeconfig(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "alice.conf"
    args = ["certificate", "alice", "--group", "devs", "--group", "ops"]
    code = await asyncio.to_thread(
        main, [*args, "--kubeconfig", str(sim.kubeconfig_path), "-o", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    assert out.stat().st_mode & 0o077 == 0
    config = yaml.safe_load(out.read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == sim.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca_of(sim)
    user = config["users"][0]["user"]
    creds = Credentials(
        base64.b64decode(user["client-certificate-data"]),
        base64.b64decode(user["client-key-data"]),
    )
    info = await whoami(sim, context(ca_of(sim), creds, where=tmp_path))
    assert (info["username"], info["groups"]) == ("alice", ["devs", "ops", "system:authenticated"])
    # to stdout without -o
    code = await asyncio.to_thread(
        main, ["certificate", "dave", "--kubeconfig", str(sim.kubeconfig_path)]
    )
    assert code == 0
    assert yaml.safe_load(capsys.readouterr().out)["clusters"][0]["cluster"]["server"] == sim.url
    # a kubeconfig that is not system:masters: refused, one line, exit 2
    code = await asyncio.to_thread(main, ["certificate", "eve", "--kubeconfig", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f'Error: --kubeconfig {out}: the server refused (403): forbidden: User "alice" cannot'
        ' create path "/_kubesim/certificates"'
    ]


@pytest.mark.parametrize(
    "case",
    [
        (["--kubeconfig", "/nonexistent/kc"], 2, "--kubeconfig /nonexistent/kc: no such file"),
        ([], 2, "Missing option '--kubeconfig'"),
        (["--kubeconfig", "{http}"], 2, "does not serve TLS; client certificates need kubesim"),
        (["--kubeconfig", "{dead}"], 1, "Connection refused"),
        (["--kubeconfig", "{tls}", "--days", "0"], 2, "Invalid value for '--days'"),
        (["--kubeconfig", "{tls}", "-o", "/nonexistent/dir/x"], 2, "does not exist"),
    ],
)
async def test_kubesim_certificate_bad_input(
    sim: Simulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: tuple[list[str], int, str],
) -> None:
    from kubesim.kubeconfig import write_kubeconfig

    args, code, message = case
    http = write_kubeconfig(tmp_path / "http", "http://127.0.0.1:1")
    dead = write_kubeconfig(
        tmp_path / "dead",
        "https://127.0.0.1:1",
        user=sim.admin_kubeconfig_user(),
        certificate_authority=ca_of(sim),
    )
    files = {"{http}": str(http), "{dead}": str(dead), "{tls}": str(sim.kubeconfig_path)}
    argv = ["certificate", "alice", *[files.get(a, a) for a in args]]
    got = await asyncio.to_thread(main, argv)
    err = capsys.readouterr().err
    assert got == code, err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 or "Usage:" in err


async def test_kubesim_wait_checks_the_server_against_the_kubeconfigs_ca(
    sim: Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await asyncio.to_thread(main, ["wait", str(sim.kubeconfig_path)]) == 0
    assert f"{sim.url} is ready" in capsys.readouterr().out
    config = yaml.safe_load(Path(str(sim.kubeconfig_path)).read_text())
    other = CertificateAuthority().certificate_pem
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(
        other
    ).decode()
    wrong = tmp_path / "wrong-ca"
    wrong.write_text(yaml.safe_dump(config))
    code = await asyncio.to_thread(main, ["wait", str(wrong), "--timeout", "0"])
    assert code == 1
    assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err


class DenyAll:
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.DENY, ""


def test_no_clear_text_credentials_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(AUTHORIZATION_MODES, "deny-all", lambda sim: DenyAll())
    with pytest.raises(InsecureServing, match=r"--host 0.0.0.0 without --tls: with"):
        Simulator(host="0.0.0.0", authorization="deny-all")
    with pytest.raises(InsecureServing):
        Simulator(host="10.1.2.3", authorization="deny-all")
    # TLS, loopback, or nothing worth stealing (always-allow): served
    Simulator(host="0.0.0.0", authorization="deny-all", tls=True)
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.5"):
        Simulator(host=host, authorization="deny-all")
    Simulator(host="0.0.0.0")
