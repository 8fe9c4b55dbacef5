"""Kubeconfig files for tests that talk to a kubesim as a given user: one cluster, one context."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def write_kubeconfig(
    path: Path,
    server: str,
    users: Mapping[str, Mapping[str, Any]],
    *,
    current: str,
    certificate_authority: bytes | None = None,
) -> Path:
    """A kubeconfig at ``path`` for ``server`` with ``users`` (name → user entry) and a current
    context that uses the user ``current``. Credentials go only to an ``https`` server (as
    client-go sends them): give its ``certificate_authority`` (PEM) to trust it."""
    cluster: dict[str, Any] = {"server": server}
    if certificate_authority is not None:
        cluster["certificate-authority-data"] = base64.b64encode(certificate_authority).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "sim", "cluster": cluster}],
                "users": [{"name": name, "user": dict(user)} for name, user in users.items()],
                "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": current}}],
                "current-context": "sim",
            }
        )
    )
    return path
