"""The kubeconfig kubesim writes for kubectl and client libraries, and the readiness around it.

The file is the readiness signal for scripts: it is written only once the port answers, by
rename so a reader never sees half of it, and removed when the server stops (only if it still
names this server), so a kubeconfig on disk never sends kubectl to a closed port. ``kubesim
wait`` polls a kubeconfig until the server it names answers ``/readyz``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kube.kubeconfig import KubeconfigError, ResolvedContext, load_kubeconfig

__all__ = [
    "IssuedCertificate",
    "KubeconfigError",
    "kubeconfig_dict",
    "probe_ready",
    "remove_kubeconfig",
    "request_certificate",
    "server_of",
    "tls_context_of",
    "wait_answering",
    "write_kubeconfig",
]


def kubeconfig_dict(
    url: str,
    *,
    name: str = "kubesim",
    namespace: str = "default",
    user: dict[str, Any] | None = None,
    certificate_authority: bytes | None = None,
) -> dict[str, Any]:
    """``user`` is the kubeconfig's user entry (``{"token": ...}``, client certificate data);
    ``certificate_authority`` the PEM CA an ``https`` server's certificate is checked against
    (``certificate-authority-data``).

    Plain HTTP on loopback needs no credentials or CA: the cluster entry has only ``server``
    (``http://127.0.0.1:PORT``), the user entry is empty, and the context's namespace is
    ``default``, which kubectl, client-go and kubernetes-asyncio's ``load_kube_config`` accept. A
    server that authorizes requests gives its admin kubeconfig the credentials of a
    ``system:masters`` user instead (``Simulator.admin_user``). An ``https`` server (``kubesim
    serve --tls``) writes what a kubeadm cluster's ``admin.conf`` holds: the cluster CA as
    ``certificate-authority-data`` and the admin's client certificate and key as
    ``client-certificate-data``/``client-key-data``; ``kubesim wait`` then checks the server's
    certificate against that CA.
    """
    cluster: dict[str, Any] = {"server": url}
    if certificate_authority:
        cluster["certificate-authority-data"] = base64.b64encode(certificate_authority).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": dict(user or {})}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
        ],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(
    path: str | Path,
    url: str,
    *,
    name: str = "kubesim",
    user: dict[str, Any] | None = None,
    certificate_authority: bytes | None = None,
) -> Path:
    """Write atomically (a private temporary file in the same directory, then rename).

    The file is created with mode 0600 (``mkstemp``): it may hold the admin's credentials."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            config = kubeconfig_dict(
                url, name=name, user=user, certificate_authority=certificate_authority
            )
            yaml.safe_dump(config, f, sort_keys=False)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def _current(path: str | Path) -> ResolvedContext:
    """The current context of a kubeconfig, which must name a server (``kube.kubeconfig``)."""
    config = load_kubeconfig([path])
    try:
        resolved = config.resolve()
    except KubeconfigError:
        resolved = None
    if resolved is None or not resolved.server:
        raise KubeconfigError(f"{path}: no server for current context {config.current_context!r}")
    return resolved


def server_of(path: str | Path) -> str:
    """The server URL of a kubeconfig's current context."""
    return _current(path).server


def _pem(entry: Mapping[str, Any], key: str, path: str | Path) -> bytes | None:
    """``<key>-data`` (base64) or the file ``<key>`` of a kubeconfig entry."""
    data = entry.get(f"{key}-data")
    if isinstance(data, str) and data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(f"{path}: {key}-data: not base64") from None
    name = entry.get(key)
    if isinstance(name, str) and name:
        try:
            return Path(name).read_bytes()  # made absolute by load_kubeconfig
        except OSError as exc:
            raise KubeconfigError(f"{path}: {key} {name}: {exc.strerror or exc}") from None
    return None


def tls_context_of(path: str | Path, *, client: bool = False) -> ssl.SSLContext | None:
    """The TLS context to reach the current context's server: None for ``http://``; its
    ``certificate-authority(-data)`` trusted (the system CAs without one); with ``client``,
    the user's client certificate presented."""
    current = _current(path)
    cluster, user = current.cluster, current.user
    if not current.server.startswith("https://"):
        return None
    ca = _pem(cluster, "certificate-authority", path)
    try:
        context = ssl.create_default_context(cadata=ca.decode() if ca else None)
    except (ssl.SSLError, ValueError) as exc:
        raise KubeconfigError(f"{path}: certificate-authority: {exc}") from None
    if not client:
        return context
    cert = _pem(user, "client-certificate", path)
    key = _pem(user, "client-key", path)
    if cert is None or key is None:
        raise KubeconfigError(f"{path}: the current user has no client certificate and key")
    with tempfile.TemporaryDirectory(prefix="kubesim-") as tmp:  # ssl reads keys from files
        cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for name, data in ((cert_file, cert), (key_file, key)):
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as exc:
            raise KubeconfigError(f"{path}: client certificate: {exc}") from None
    return context


@dataclass(frozen=True, slots=True)
class IssuedCertificate:
    """What ``POST /_kubesim/certificates`` answered, ready for a kubeconfig."""

    server: str
    certificate_authority: bytes
    certificate_data: str
    key_data: str


def request_certificate(
    admin_kubeconfig: str | Path, user: str, groups: list[str], *, days: int = 365
) -> IssuedCertificate:
    """Ask the server ``admin_kubeconfig`` names for a client certificate of ``user``.

    KubeconfigError for a kubeconfig that cannot do it (no TLS, no client certificate, not
    ``system:masters``), OSError when the server cannot be reached."""
    path = Path(admin_kubeconfig)
    if not path.is_file():
        raise KubeconfigError(f"--kubeconfig {admin_kubeconfig}: no such file")
    server = server_of(path)
    if not server.startswith("https://"):
        raise KubeconfigError(
            f"--kubeconfig {admin_kubeconfig}: server {server} does not serve TLS;"
            " client certificates need kubesim serve --tls"
        )
    context = tls_context_of(path, client=True)
    body = json.dumps({"user": user, "groups": groups, "days": days}).encode()
    request = urllib.request.Request(
        server.rstrip("/") + "/_kubesim/certificates",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        detail = _error_text(exc)
        if exc.code in (401, 403):
            raise KubeconfigError(
                f"--kubeconfig {admin_kubeconfig}: the server refused ({exc.code}): {detail}"
            ) from None
        raise OSError(f"{server}: {exc.code}: {detail}") from None
    except urllib.error.URLError as exc:
        raise OSError(f"{server}: {exc.reason}") from None
    return IssuedCertificate(
        server=str(answer["server"]),
        certificate_authority=str(answer["certificateAuthority"]).encode(),
        certificate_data=base64.b64encode(str(answer["certificate"]).encode()).decode(),
        key_data=base64.b64encode(str(answer["key"]).encode()).decode(),
    )


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
    except (ValueError, OSError):
        return str(exc.reason)
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or exc.reason)
    return str(exc.reason)


def remove_kubeconfig(path: str | Path, url: str) -> bool:
    """Remove the kubeconfig if it still names ``url`` (another server may own it now)."""
    try:
        if server_of(path) != url:
            return False
        os.unlink(path)
    except (OSError, KubeconfigError):
        return False
    return True


def probe_ready(
    url: str, *, timeout: float = 1.0, context: ssl.SSLContext | None = None
) -> str | None:
    """None when ``url``/readyz answers 200, else why not (for messages); ``context`` checks
    an ``https`` server's certificate (``tls_context_of``)."""
    try:
        with urllib.request.urlopen(
            url.rstrip("/") + "/readyz", timeout=timeout, context=context
        ) as resp:
            if resp.status == 200:
                return None
            return f"/readyz answered {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"/readyz answered {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return str(reason)


async def wait_answering(host: str, port: int, *, timeout: float = 10.0) -> None:
    """Return once ``host:port`` accepts a connection (no request: it would show in logs)."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection(target, port)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return
        except OSError:
            pass
        if loop.time() > deadline:
            raise OSError(f"{target}:{port} does not answer")
        await asyncio.sleep(0.01)
