"""Kubeconfig files for tests that talk to a kubesim as a given user: one cluster, one context."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def write_kubeconfig(
    path: Path, server: str, users: Mapping[str, Mapping[str, Any]], *, current: str
) -> Path:
    """A kubeconfig at ``path`` for ``server`` with ``users`` (name → user entry) and a current
    context that uses the user ``current``."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "sim", "cluster": {"server": server}}],
                "users": [{"name": name, "user": dict(user)} for name, user in users.items()],
                "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": current}}],
                "current-context": "sim",
            }
        )
    )
    return path
