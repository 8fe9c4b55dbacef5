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

A user entry may also ask to act as someone else (``as``, ``as-uid``, ``as-groups``,
``as-user-extra``: client-go's ``rest.ImpersonationConfig``, kubectl's ``--as``); what it asks is
read and checked here (``Impersonation``), as ``clientcmd``'s validation checks it: a uid, groups
or extras without a user to act as is refused before any request (``validateAuthInfo``), and a
value an HTTP header cannot carry is refused too.

Which files to read (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config``, in-cluster) is the
caller's policy; so is what to do with the credentials.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

__all__ = [
    "Impersonation",
    "Kubeconfig",
    "KubeconfigError",
    "Overrides",
    "ResolvedContext",
    "load_kubeconfig",
]

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
class Impersonation:
    """Whom every request acts as: a user entry's ``as``, ``as-uid``, ``as-groups`` and
    ``as-user-extra`` (client-go's ``rest.ImpersonationConfig``), sent as ``Impersonate-*``
    headers. ``user`` is never empty."""

    user: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key, values), in the file's order


def _unimpersonated(user_name: str) -> str:
    """clientcmd's ``validateAuthInfo`` sentence, naming the kubeconfig user (if any)."""
    named = f" for {user_name}" if user_name else ""
    return f"requesting uid, groups or user-extra{named} without impersonating a user"


def _header_safe(value: str, what: str) -> str:
    """``value``, unless an HTTP header cannot carry it (a control character other than a
    tab, as Go's ``httpguts.ValidHeaderFieldValue`` says): then ``KubeconfigError``."""
    if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in value):
        raise KubeconfigError(f"{what}: {json.dumps(value)} holds a control character")
    return value


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KubeconfigError(f"{what}: must be a list of strings")
    return tuple(_header_safe(v, what) for v in value)


def _impersonation_of(user: Mapping[str, Any], user_name: str) -> Impersonation | None:
    """What the user entry ``user_name`` asks to act as (None: itself). ``KubeconfigError`` for
    a uid, groups or extras without ``as`` (clientcmd's wording) or a malformed field."""
    where = f'user "{user_name}"' if user_name else "user"
    fields_: dict[str, Any] = {}
    for key, name in (("as", "user"), ("as-uid", "uid")):
        value = user.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise KubeconfigError(f"{where}: {key}: must be a string")
        fields_[name] = _header_safe(value, f"{where}: {key}")
    if user.get("as-groups") is not None:
        fields_["groups"] = _strings(user["as-groups"], f"{where}: as-groups")
    raw_extra = user.get("as-user-extra")
    if raw_extra is not None:
        if not isinstance(raw_extra, Mapping):
            raise KubeconfigError(f"{where}: as-user-extra: must be a map of lists of strings")
        fields_["extra"] = tuple(
            (str(k), _strings(v, f"{where}: as-user-extra: {k}")) for k, v in raw_extra.items()
        )
    if not fields_.get("user"):
        if fields_.get("uid") or fields_.get("groups") or fields_.get("extra"):
            raise KubeconfigError(_unimpersonated(user_name))
        return None
    return Impersonation(**fields_)


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

    def impersonation(self) -> Impersonation | None:
        """Whom the user asks to act as (see ``_impersonation_of``)."""
        return _impersonation_of(self.user, str(self.context.get("user") or ""))


@dataclass(frozen=True, slots=True)
class Overrides:
    """kubectl's global flags over the kubeconfig (client-go's ``ConfigOverrides``):
    ``--cluster``, ``--user``, ``--server``, ``--token``, ``--certificate-authority``,
    ``--insecure-skip-tls-verify``, ``--tls-server-name``, ``--client-certificate``,
    ``--client-key``, and the impersonation flags ``--as``, ``--as-uid`` and ``--as-group``
    (repeated: one group each). Empty values override nothing."""

    cluster: str = ""
    user: str = ""
    server: str = ""
    token: str = ""
    certificate_authority: str = ""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    client_certificate: str = ""
    client_key: str = ""
    impersonate: str = ""
    impersonate_uid: str = ""
    impersonate_groups: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


OVERRIDDEN: Final = "(command line)"  # the name of the context the overrides make


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

    def overridden(self, context: str | None, o: Overrides) -> Kubeconfig:
        """This configuration with ``context`` (else ``current-context``) changed by the flags
        and made current, as client-go merges ``ConfigOverrides``: ``--cluster`` and
        ``--user`` pick other entries (which must exist); ``--server`` replaces the address
        (and the TLS server name, with ``--tls-server-name`` or none); a CA file or
        ``--insecure-skip-tls-verify`` replaces the CA settings; client certificate and key
        files replace their inline data. ``--token`` is the bearer token, instead of a token
        file or an exec plugin. ``--as``, ``--as-uid`` and ``--as-group`` replace the user's
        ``as``, ``as-uid`` and ``as-groups`` one by one (its ``as-user-extra`` stays), and the
        result is checked as clientcmd checks it: a uid or groups without anyone to act as is
        refused, naming the flags. Without a kubeconfig, ``--server`` alone makes one."""
        name = context or self.current_context
        ctx = dict(self.contexts.get(name) or {})
        if context and name not in self.contexts:
            raise KubeconfigError(f'context "{name}" does not exist')
        for key, value, known, what in (
            ("cluster", o.cluster, self.clusters, "cluster"),
            ("user", o.user, self.users, "auth info"),
        ):
            if value:
                if value not in known:
                    raise KubeconfigError(f'{what} "{value}" does not exist')
                ctx[key] = value
        cluster = dict(self.clusters.get(str(ctx.get("cluster") or ""), {}))
        if o.server:
            cluster["server"] = o.server
        if o.insecure_skip_tls_verify or o.certificate_authority:
            cluster.pop("certificate-authority-data", None)
            cluster["insecure-skip-tls-verify"] = o.insecure_skip_tls_verify
            if o.certificate_authority:
                cluster["certificate-authority"] = o.certificate_authority
            else:
                cluster.pop("certificate-authority", None)
        if o.tls_server_name or o.server:
            cluster.pop("tls-server-name", None)
            if o.tls_server_name:
                cluster["tls-server-name"] = o.tls_server_name
        user = dict(self.users.get(str(ctx.get("user") or ""), {}))
        if o.token:
            for key in ("tokenFile", "exec", "auth-provider"):
                user.pop(key, None)
            user["token"] = o.token
        for key, value in (
            ("client-certificate", o.client_certificate),
            ("client-key", o.client_key),
        ):
            if value:
                user.pop(f"{key}-data", None)
                user[key] = value
        _impersonate(user, str(ctx.get("user") or ""), o)
        ctx.update(cluster=OVERRIDDEN, user=OVERRIDDEN)
        return Kubeconfig(
            OVERRIDDEN,
            {**self.clusters, OVERRIDDEN: cluster},
            {**self.users, OVERRIDDEN: user},
            {**self.contexts, OVERRIDDEN: ctx},
        )

    def as_dict(self) -> dict[str, Any]:
        """The merged configuration in the file's own shape (for a client library's loader)."""
        out: dict[str, Any] = {"current-context": self.current_context}
        for section, inner in _SECTIONS:
            entries: Mapping[str, Mapping[str, Any]] = getattr(self, section)
            out[section] = [{"name": n, inner: dict(body)} for n, body in entries.items()]
        return out


def _impersonate(user: dict[str, Any], user_name: str, o: Overrides) -> None:
    """The impersonation flags over ``user`` (entry ``user_name``), in place; checked."""
    asked = []
    for flag, key, value in (
        ("--as", "as", o.impersonate),
        ("--as-uid", "as-uid", o.impersonate_uid),
        ("--as-group", "as-groups", o.impersonate_groups),
    ):
        if not value:
            continue
        for v in (value,) if isinstance(value, str) else value:
            _header_safe(v, flag)
        user[key] = value if isinstance(value, str) else list(value)
        asked.append(flag)
    if not user.get("as") and (o.impersonate_uid or o.impersonate_groups):
        verb = "need" if len(asked) > 1 else "needs"
        raise KubeconfigError(f"{' and '.join(asked)} {verb} --as: {_unimpersonated(user_name)}")
    _impersonation_of(user, user_name)  # the entry's own fields, as the flags left them


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
