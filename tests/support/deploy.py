"""The agent's install as deploy/ ships it: the manifests read, one object of a kind, the
DaemonSet's command line as the kubelet expands it, the agent's user, and the nodes the install
is proven on (``NODES``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def docs(*paths: Path) -> list[dict[str, Any]]:
    return [d for p in paths for d in yaml.safe_load_all(p.read_text()) if d is not None]


# kustomize's own files, not manifests
KUSTOMIZE_FILES = {"kustomization.yaml", "kustomizeconfig.yaml"}


def manifests() -> list[Path]:
    return sorted(p for p in DEPLOY.glob("*.yaml") if p.name not in KUSTOMIZE_FILES)


def base() -> list[dict[str, Any]]:
    return docs(*manifests())


def one(kind: str, docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    [obj] = [d for d in (docs if docs is not None else base()) if d["kind"] == kind]
    return obj


def container(spec: dict[str, Any]) -> dict[str, Any]:
    [c] = spec["containers"]
    return c  # type: ignore[no-any-return]


def daemonset_args(env: dict[str, str]) -> list[str]:
    """The agent's command line as the kubelet starts it: ``$(VAR)`` expanded from the
    container's environment (the downward API's values given here), ``run`` dropped."""
    c = container(one("DaemonSet")["spec"]["template"]["spec"])
    assert c["command"] == ["eviction-agent"] and c["args"][0] == "run"
    names = {e["name"] for e in c["env"]}
    assert set(env) <= names
    out = []
    for arg in c["args"][1:]:
        expanded = arg
        for name, value in env.items():
            expanded = expanded.replace(f"$({name})", value)
        assert "$(" not in expanded, expanded
        out.append(expanded)
    return out


AGENT = "system:serviceaccount:kube-system:eviction-agent"

NODES = """
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux}
status:
  capacity: {cpu: "4", memory: 1Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Node
metadata:
  name: node-2
  labels: {kubernetes.io/hostname: node-2, kubernetes.io/os: linux}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  nodeName: node-2
  containers: [{name: c, image: app}]
---
apiVersion: v1
kind: Secret
metadata: {name: db-password, namespace: default}
stringData: {password: hunter2}
"""


def optional(name: str) -> Path:
    return DEPLOY / "optional" / name
