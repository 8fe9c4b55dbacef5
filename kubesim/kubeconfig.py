"""The kubeconfig kubesim writes for kubectl and client libraries.

Plain HTTP on loopback needs no credentials or CA: the cluster entry has only ``server``
(``http://127.0.0.1:PORT``), the user entry is empty, and the context's namespace is
``default`` — which kubectl, client-go and kubernetes-asyncio's ``load_kube_config`` accept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig_dict", "write_kubeconfig"]


def kubeconfig_dict(
    url: str, *, name: str = "kubesim", namespace: str = "default"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
        ],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, url: str, *, name: str = "kubesim") -> Path:
    """Write atomically (tmp + rename) so a reader never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(
        yaml.safe_dump(kubeconfig_dict(url, name=name), sort_keys=False), encoding="utf-8"
    )
    os.chmod(tmp, 0o600)
    tmp.replace(target)
    return target
