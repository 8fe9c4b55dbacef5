"""The objects a workload creates: read from templates, named as the API server names them.

Templates are rendered (``gotemplate``) and decoded strictly into the object kube would store
(``kube.strict``, field names case-insensitive as Go's), once per distinct rendering. Names
come from ``generateName`` plus five characters of the API server's alphabet, seeded so a run
is repeatable. Pods get the ``signature`` label upstream's ``createPodsRapidly`` adds; without
a template, pods are ``makeBasePod`` (pause, 100m / 500Mi) and nodes ``makeBaseNode`` (4 CPU,
32Gi, 110 pods).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kube.strict import ManifestError, check_object, model_for, parse_yaml, read_text
from kubesim.core.names import generate_name

from .errors import ConfigError
from .gotemplate import render_template

__all__ = [
    "API_PATHS",
    "NewPod",
    "Templates",
    "base_node",
    "base_pod",
    "labels_match",
]

# Where each kind a workload may create lives in the API (namespaced or not).
API_PATHS: Final[dict[str, tuple[str, bool]]] = {
    "Pod": ("/api/v1/{ns}pods", True),
    "Node": ("/api/v1/nodes", False),
    "Namespace": ("/api/v1/namespaces", False),
    "Service": ("/api/v1/{ns}services", True),
    "ReplicationController": ("/api/v1/{ns}replicationcontrollers", True),
    "ReplicaSet": ("/apis/apps/v1/{ns}replicasets", True),
    "StatefulSet": ("/apis/apps/v1/{ns}statefulsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1/{ns}poddisruptionbudgets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", False),
}


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """An equality selector (``labelSelector`` of an op) matches ``labels``."""
    return all(labels.get(k) == v for k, v in selector.items())


def base_pod() -> dict[str, Any]:
    """``makeBasePod``: ``testutils.MakePodSpec`` (pause, 100m / 500Mi, port 80)."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": dict(resources), "requests": dict(resources)},
                }
            ]
        },
    }


def base_node(prefix: str) -> dict[str, Any]:
    """``makeBaseNode``: 4 CPU, 32Gi, 110 pods, Ready."""
    amounts = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {
            "capacity": dict(amounts),
            "allocatable": dict(amounts),
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@dataclass(frozen=True, slots=True)
class NewPod:
    """A pod to create: ``template`` is the decoded manifest (shared by the pods of one
    rendering); name, namespace and labels are this pod's."""

    template: Mapping[str, Any]
    name: str
    namespace: str
    labels: Mapping[str, str]
    uid: str

    def manifest(self) -> dict[str, Any]:
        meta = dict(self.template.get("metadata") or {})
        meta.pop("generateName", None)
        meta.update(name=self.name, namespace=self.namespace, labels=dict(self.labels))
        return {**self.template, "metadata": meta}


class Templates:
    """Reads, renders and strictly decodes template files; names objects as the API server
    does (``generateName`` + 5 characters, seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._text: dict[Path, str] = {}
        self._decoded: dict[tuple[Path, str, str], dict[str, Any]] = {}
        self._names: set[tuple[str, str, str]] = set()

    def has_actions(self, path: Path) -> bool:
        return "{{" in self.text(path)

    def text(self, path: Path) -> str:
        text = self._text.get(path)
        if text is None:
            try:
                text = read_text(path)
            except ManifestError as exc:
                raise ConfigError(str(exc)) from None
            self._text[path] = text
        return text

    def load(
        self, path: Path, env: Mapping[str, object], *, kind: str | None = None
    ) -> dict[str, Any]:
        """The template decoded into ``kind`` (as ``yaml.UnmarshalStrict`` into a typed
        object), or any kind the schema knows when None. Cached when it has no actions."""
        text = self.text(path)
        rendered = render_template(text, env, str(path))
        key = (path, kind or "", rendered)
        cached = self._decoded.get(key)
        if cached is not None:
            return cached
        try:
            docs, duplicates = parse_yaml(rendered, source=str(path))
        except ManifestError as exc:
            raise ConfigError(str(exc)) from None
        docs = [d for d in docs if d is not None]
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise ConfigError(f"{path}: expected one object")
        manifest: dict[str, Any] = docs[0]
        model = None if kind is None else model_for("v1", kind)
        try:
            problems = check_object(manifest, model=model, duplicates=duplicates, fold_case=True)
        except ManifestError as exc:
            raise ConfigError(f"{path}: {exc.detail}") from None
        if problems.type_error is not None:
            raise ConfigError(f"{path}: {problems.type_error}")
        if problems.strict:
            raise ConfigError(f"{path}: {', '.join(problems.strict)}")
        if kind is not None:
            manifest.setdefault("apiVersion", "v1")
            manifest.setdefault("kind", kind)
        self._decoded[key] = manifest
        return manifest

    def name(self, kind: str, namespace: str, meta: Mapping[str, Any]) -> str:
        """``metadata.name``, or ``generateName`` plus five random characters."""
        name = meta.get("name")
        if isinstance(name, str) and name:
            self._names.add((kind, namespace, name))
            return name
        prefix = meta.get("generateName")
        if not isinstance(prefix, str) or not prefix:
            raise ConfigError(f"{kind}: name or generateName is required")
        while True:
            name = generate_name(prefix[:58], self.rng)  # maxGeneratedNameLength
            if (kind, namespace, name) not in self._names:
                self._names.add((kind, namespace, name))
                return name

    def uid(self) -> str:
        bits = self.rng.getrandbits(128)
        h = f"{bits:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def pods(
        self,
        path: Path | None,
        count: int,
        namespace: str,
        params: Mapping[str, object],
        batch: int,
    ) -> list[NewPod]:
        """``createPodsRapidly``'s pods: the template per index, plus the ``signature`` label."""
        out: list[NewPod] = []
        static = base_pod() if path is None else None
        for index in range(count):
            if static is not None:
                manifest = static
            else:
                assert path is not None
                manifest = self.load(path, {**params, "Index": index, "Count": count}, kind="Pod")
            meta = manifest.get("metadata") or {}
            labels = dict(meta.get("labels") or {})
            labels["signature"] = f"signature-label-{index // batch}"
            out.append(
                NewPod(
                    manifest,
                    self.name("Pod", namespace, meta),
                    namespace,
                    labels,
                    self.uid(),
                )
            )
        return out
