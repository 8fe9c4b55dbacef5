"""The kubeconfig kubesim writes for kubectl and client libraries, and the readiness around it.

Plain HTTP on loopback needs no credentials or CA: the cluster entry has only ``server``
(``http://127.0.0.1:PORT``), the user entry is empty, and the context's namespace is
``default`` — which kubectl, client-go and kubernetes-asyncio's ``load_kube_config`` accept.
A server that authorizes requests gives its admin kubeconfig the credentials of a
``system:masters`` user instead (``Simulator.admin_user``). An ``https`` server
(``kubesim serve --tls``) writes what a kubeadm cluster's ``admin.conf`` holds: the cluster CA
as ``certificate-authority-data`` and the admin's client certificate and key as
``client-certificate-data``/``client-key-data``; ``kubesim wait`` then checks the server's
certificate against that CA.

The file is the readiness signal for scripts: it is written only once the port answers, by
rename so a reader never sees half of it, and removed when the server stops (only if it still
names this server), so a kubeconfig on disk never sends kubectl to a closed port. ``kubesim
wait`` polls a kubeconfig until the server it names answers ``/readyz``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "KubeconfigError",
    "kubeconfig_dict",
    "probe_ready",
    "remove_kubeconfig",
    "server_of",
    "wait_answering",
    "write_kubeconfig",
]


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used: not YAML, or no server in its current context."""


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
    (``certificate-authority-data``)."""
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


def server_of(path: str | Path) -> str:
    """The server URL of a kubeconfig's current context."""
    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise KubeconfigError(f"{path}: not a kubeconfig: {exc}") from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig")
    current = config.get("current-context")
    cluster_name = None
    for ctx in config.get("contexts") or []:
        if isinstance(ctx, dict) and ctx.get("name") == current:
            cluster_name = (ctx.get("context") or {}).get("cluster")
    for cluster in config.get("clusters") or []:
        if isinstance(cluster, dict) and cluster.get("name") == cluster_name:
            server = (cluster.get("cluster") or {}).get("server")
            if isinstance(server, str) and server:
                return server
    raise KubeconfigError(f"{path}: no server for current context {current!r}")


def remove_kubeconfig(path: str | Path, url: str) -> bool:
    """Remove the kubeconfig if it still names ``url`` (another server may own it now)."""
    try:
        if server_of(path) != url:
            return False
        os.unlink(path)
    except (OSError, KubeconfigError):
        return False
    return True


def probe_ready(url: str, *, timeout: float = 1.0) -> str | None:
    """None when ``url``/readyz answers 200, else why not (for messages)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/readyz", timeout=timeout) as resp:
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
