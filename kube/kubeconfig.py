"""Kubeconfig files read as client-go reads them, and the context they resolve to.

The API room (``evictor.api.connect``: the agent and ``evict``) and kubesim (``kubesim wait``
reading the kubeconfig ``kubesim serve`` wrote) both need "which server, which user, which
namespace" from a kubeconfig; the rules live here once (``clientcmd``'s loading rules):

* several files (``$KUBECONFIG``) merge with the first file winning: the first one that sets
  ``current-context`` sets it, and the first entry of a name in ``clusters``, ``users`` or
  ``contexts`` is the one kept (``ClientConfigLoadingRules.Load``);
* file references — ``certificate-authority``, ``client-certificate``, ``client-key``,
  ``tokenFile``, and an exec plugin's ``command`` when it names a path — are relative to the
  file that holds them (``ResolveLocalPaths``);
* a context names a cluster and a user by name; a context, cluster or user a file does not
  define resolves to an empty entry, except the context itself, which must exist.

Which files to read (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config``, in-cluster) is the
caller's policy; so is what to do with the credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["Kubeconfig", "KubeconfigError", "ResolvedContext", "load_kubeconfig"]

_SECTIONS: Final = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# Keys holding file names, per section (clientcmd's GetClusterFileReferences and
# GetAuthInfoFileReferences).
_FILE_KEYS: Final = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
    "contexts": (),
}


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used; the message names the file or the context."""


@dataclass(frozen=True, slots=True)
class ResolvedContext:
    """One context with its cluster and user entries (empty mappings when not defined)."""

    name: str
    context: Mapping[str, Any]
    cluster: Mapping[str, Any]
    user: Mapping[str, Any]

    @property
    def server(self) -> str:
        return str(self.cluster.get("server") or "")

    @property
    def namespace(self) -> str:
        """The context's namespace, "" when it names none."""
        return str(self.context.get("namespace") or "")


@dataclass(frozen=True, slots=True)
class Kubeconfig:
    """Merged kubeconfig files, file references made absolute."""

    current_context: str = ""
    clusters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    users: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    contexts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def resolve(self, context: str | None = None) -> ResolvedContext:
        """``context`` (else ``current-context``) with its cluster and user."""
        name = context or self.current_context
        ctx = self.contexts.get(name)
        if ctx is None:
            raise KubeconfigError(f'context "{name}" does not exist')
        return ResolvedContext(
            name,
            ctx,
            self.clusters.get(str(ctx.get("cluster") or ""), {}),
            self.users.get(str(ctx.get("user") or ""), {}),
        )

    def as_dict(self) -> dict[str, Any]:
        """The merged configuration in the file's own shape (for a client library's loader)."""
        out: dict[str, Any] = {"current-context": self.current_context}
        for section, inner in _SECTIONS:
            entries: Mapping[str, Mapping[str, Any]] = getattr(self, section)
            out[section] = [{"name": n, inner: dict(body)} for n, body in entries.items()]
        return out


def _absolute(base: Path, value: object) -> object:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(base / value)
    return value


def load_kubeconfig(paths: Sequence[str | Path]) -> Kubeconfig:
    """Read and merge kubeconfig files. ``KubeconfigError`` for a file that is not a
    kubeconfig; ``OSError`` (unreadable, gone) is left to the caller."""
    import yaml

    current = ""
    merged: dict[str, dict[str, Mapping[str, Any]]] = {s: {} for s, _ in _SECTIONS}
    for path in paths:
        raw = Path(path).read_bytes()
        try:
            doc = yaml.safe_load(raw.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise KubeconfigError(f"{path}: not a kubeconfig: {exc}") from None
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise KubeconfigError(f"{path}: not a kubeconfig")
        base = Path(path).resolve().parent
        current = current or str(doc.get("current-context") or "")
        for section, inner in _SECTIONS:
            entries = doc.get(section) or []
            if not isinstance(entries, list):
                raise KubeconfigError(f"{path}: {section}: must be a list")
            for entry in entries:
                if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                    continue
                if entry["name"] in merged[section]:
                    continue
                body = entry.get(inner) or {}
                if not isinstance(body, Mapping):
                    raise KubeconfigError(f"{path}: {section} {entry['name']!r}: not an object")
                body = dict(body)
                for key in _FILE_KEYS[section]:
                    if key in body:
                        body[key] = _absolute(base, body[key])
                spec = body.get("exec")
                if section == "users" and isinstance(spec, Mapping):
                    command = spec.get("command")
                    if isinstance(command, str) and os.sep in command:
                        body["exec"] = {**spec, "command": _absolute(base, command)}
                merged[section][entry["name"]] = body
    return Kubeconfig(current, merged["clusters"], merged["users"], merged["contexts"])
