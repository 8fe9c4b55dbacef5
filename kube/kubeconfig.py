"""Kubeconfig files read as client-go reads them, and the context they resolve to.

The API room (``evictor.api.connect``: the agent and ``evict``) and kubesim (``kubesim wait``
reading the kubeconfig ``kubesim serve`` wrote) both need "which server, which user, which
namespace" from a kubeconfig; clientcmd's rules for it live here once (``load_kubeconfig``,
``Kubeconfig.resolve``). Which files to read (``--kubeconfig``, ``$KUBECONFIG``,
``~/.kube/config``, in-cluster) is the caller's policy; so is what to do with the credentials
(``evictor.api.connect`` sends them only over TLS, as client-go does).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final, NoReturn

__all__ = [
    "Impersonation",
    "Kubeconfig",
    "KubeconfigError",
    "Overrides",
    "ResolvedContext",
    "load_kubeconfig",
    "transport_tls",
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
    ``as-user-extra`` (client-go's ``rest.ImpersonationConfig``, kubectl's ``--as``), sent as
    ``Impersonate-*`` headers. ``user`` is never empty: a uid, groups or extras without a user
    to act as are refused before any request, as clientcmd's ``validateAuthInfo`` refuses
    them, and so is a value an HTTP header cannot carry."""

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


# The user fields client-go reads only over TLS (getUserIdentificationPartialConfig), by kind.
_IDENTIFICATION: Final = (
    ("token", ("token", "tokenFile")),
    ("client certificate", ("client-certificate", "client-certificate-data")),
    ("basic auth", ("username", "password")),
    ("auth provider", ("auth-provider",)),
    ("exec plugin", ("exec",)),
)


def transport_tls(server: str) -> bool:
    """Whether a client may send a user's credentials to ``server``: client-go's
    ``IsConfigTransportTLS``, asked (in ``DirectClientConfig.ClientConfig``) before anything
    of the user but its impersonation is read — true only for an ``https`` URL with a host.
    A server given without a scheme is plain http to client-go, since no CA or client
    certificate has been read yet to make TLS its default."""
    url = urllib.parse.urlsplit(server)
    return url.scheme == "https" and bool(url.netloc)


_INTERACTIVE_MODES: Final = ("Never", "IfAvailable", "Always")


def _check_auth_info(user: Mapping[str, Any], name: str, where: str) -> None:
    """clientcmd's ``validateAuthInfo`` for the user a context uses: ``KubeconfigError``
    (prefixed by ``where``) for a credential that cannot work or is ambiguous."""
    named = f" for {name}" if name else ""

    def refuse(problem: str) -> NoReturn:
        raise KubeconfigError(f"{where}{problem}")

    methods = [
        method
        for method, keys in (("token", ("token",)), ("basicAuth", ("username", "password")))
        if any(user.get(k) for k in keys)
    ]
    if len(methods) > 1:
        refuse(f"more than one authentication method found{named}: {', '.join(methods)}")
    if user.get("client-certificate") or user.get("client-certificate-data"):
        for key in ("client-certificate", "client-key"):
            if user.get(key) and user.get(f"{key}-data"):
                refuse(f"{key} and {key}-data are both set{named}")
        if not user.get("client-key") and not user.get("client-key-data"):
            refuse(f"a client certificate{named} needs client-key or client-key-data")
    spec = user.get("exec")
    if isinstance(spec, Mapping):
        if user.get("auth-provider") is not None:
            refuse(f"an exec plugin and an auth-provider{named}: only one may be set")
        for key in ("command", "apiVersion"):
            if not spec.get(key):
                refuse(f"exec plugin{named}: {key} must be set")
        if any(not e.get("name") for e in spec.get("env") or []):
            refuse(f"exec plugin{named}: every env entry needs a name")
        mode = spec.get("interactiveMode")
        if mode and mode not in _INTERACTIVE_MODES:
            modes = ", ".join(_INTERACTIVE_MODES)
            refuse(
                f"exec plugin{named}: interactiveMode {json.dumps(mode)}: must be one of {modes}"
            )


@dataclass(frozen=True, slots=True)
class ResolvedContext:
    """One context with its cluster and user entries (empty mappings when not defined)."""

    name: str
    context: Mapping[str, Any]
    cluster: Mapping[str, Any]
    user: Mapping[str, Any]
    source: str = ""  # the file that defined the context ("" for the command line's alone)

    @property
    def server(self) -> str:
        return str(self.cluster.get("server") or "")

    @property
    def cluster_name(self) -> str:
        return str(self.context.get("cluster") or "")

    @property
    def user_name(self) -> str:
        return str(self.context.get("user") or "")

    @property
    def namespace(self) -> str:
        """The context's namespace, "" when it names none."""
        return str(self.context.get("namespace") or "")

    def impersonation(self) -> Impersonation | None:
        """Whom the user asks to act as (see ``_impersonation_of``)."""
        return _impersonation_of(self.user, str(self.context.get("user") or ""))

    def identification(self) -> tuple[str, ...]:
        """The kinds of credential the user holds ("token", "client certificate", "basic
        auth", "auth provider", "exec plugin"): what client-go sends only over TLS."""
        return tuple(kind for kind, keys in _IDENTIFICATION if any(self.user.get(k) for k in keys))


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
    """Merged kubeconfig files, file references made absolute; ``files`` were read, and
    ``origins`` holds the file each ``(section, name)`` entry came from (for messages)."""

    current_context: str = ""
    clusters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    users: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    contexts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    origins: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def _in(self, section: str, name: str) -> str:
        """``"FILE: "`` for messages about an entry (all files read, for one that is not)."""
        where = self.origins.get((section, name)) or ", ".join(self.files)
        return f"{where}: " if where else ""

    def resolve(self, context: str | None = None) -> ResolvedContext:
        """``context`` (else ``current-context``) with its cluster and user, which must exist
        (a user checked as ``validateAuthInfo`` checks it). ``KubeconfigError`` names the file.

        Missing ones are an error in clientcmd's ``validateContext`` wording (``user "u" was
        not found for context "c"``). client-go's ``ClientConfig`` would carry on with an empty
        entry — no credentials, or, for a cluster, the in-cluster ServiceAccount — which is
        another identity than the one the file names. A user is checked as
        ``validateAuthInfo`` checks it: a client certificate needs a key, an exec plugin a
        command and an apiVersion, one method at a time."""
        name = context or self.current_context
        ctx = self.contexts.get(name)
        if ctx is None:
            if not name:
                raise KubeconfigError(f"{self._in('contexts', '')}no context chosen")
            raise KubeconfigError(f'{self._in("contexts", name)}context "{name}" does not exist')
        resolved = ResolvedContext(
            name,
            ctx,
            self.clusters.get(str(ctx.get("cluster") or ""), {}),
            self.users.get(str(ctx.get("user") or ""), {}),
            self.origins.get(("contexts", name), ""),
        )
        where = f"{resolved.source}: " if resolved.source else ""
        for section, what, entry in (
            ("clusters", "cluster", resolved.cluster_name),
            ("users", "user", resolved.user_name),
        ):
            if entry and entry not in getattr(self, section):
                raise KubeconfigError(f'{where}{what} "{entry}" was not found for context "{name}"')
        _check_auth_info(resolved.user, resolved.user_name, self._in("users", resolved.user_name))
        if not resolved.server:  # validateClusterInfo
            cluster = resolved.cluster_name
            where = self._in("clusters", cluster)
            if cluster:
                raise KubeconfigError(f'{where}no server found for cluster "{cluster}"')
            raise KubeconfigError(f'{where}context "{name}": no cluster, so no server')
        return resolved

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
        if name and name not in self.contexts:
            raise KubeconfigError(f'{self._in("contexts", name)}context "{name}" does not exist')
        for key, value, known, what in (
            ("cluster", o.cluster, self.clusters, "cluster"),
            ("user", o.user, self.users, "auth info"),
        ):
            if value:
                if value not in known:
                    raise KubeconfigError(f'{what} "{value}" does not exist')
                ctx[key] = value
            elif ctx.get(key) and ctx[key] not in known:
                where = self._in("contexts", name)
                raise KubeconfigError(
                    f'{where}{key} "{ctx[key]}" was not found for context "{name}"'
                )
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
        origin = self.origins.get(("contexts", name), "")
        return Kubeconfig(
            OVERRIDDEN,
            {**self.clusters, OVERRIDDEN: cluster},
            {**self.users, OVERRIDDEN: user},
            {**self.contexts, OVERRIDDEN: ctx},
            files=self.files,
            origins={**self.origins, **{(s, OVERRIDDEN): origin for s, _ in _SECTIONS}},
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


# The JSON type of each field clientcmd's v1 types decode (api/v1/types.go); others are ignored.
_STRING, _BOOL, _OBJECT = "a string", "true or false", "an object"
_DATA, _STRINGS = "base64 data", "a list of strings"
_ENTRY_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "clusters": {
        "server": _STRING,
        "tls-server-name": _STRING,
        "insecure-skip-tls-verify": _BOOL,
        "certificate-authority": _STRING,
        "certificate-authority-data": _DATA,
        "proxy-url": _STRING,
        "disable-compression": _BOOL,
    },
    "users": {
        "client-certificate": _STRING,
        "client-certificate-data": _DATA,
        "client-key": _STRING,
        "client-key-data": _DATA,
        "token": _STRING,
        "tokenFile": _STRING,
        "username": _STRING,
        "password": _STRING,
        "auth-provider": _OBJECT,
        "exec": _OBJECT,
        # as, as-uid, as-groups, as-user-extra: checked with the user's name when it is used
    },
    "contexts": {"cluster": _STRING, "user": _STRING, "namespace": _STRING},
}
_EXEC_FIELDS: Final = {
    "command": _STRING,
    "args": _STRINGS,
    "apiVersion": _STRING,
    "installHint": _STRING,
    "provideClusterInfo": _BOOL,
    "interactiveMode": _STRING,
}
_TOP_FIELDS: Final = {"apiVersion": _STRING, "kind": _STRING, "current-context": _STRING}
# Mappings and lists a file may expand to: YAML aliases can make a small file exponentially large.
_MAX_NODES: Final = 100_000
_MAX_BYTES: Final = 16 * 1024 * 1024


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _check_value(value: object, want: str, where: str) -> None:
    """``KubeconfigError`` unless ``value`` decodes as ``want`` (null always does, as in Go)."""
    if value is None:
        return
    if want == _STRING:
        ok = isinstance(value, str)
    elif want == _BOOL:
        ok = isinstance(value, bool)
    elif want == _STRINGS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise KubeconfigError(f"{where}: must be {_STRINGS}")
        return
    elif want == _OBJECT:
        ok = isinstance(value, Mapping)
    else:  # _DATA: Go's []byte is standard base64 (line breaks ignored)
        if not isinstance(value, str):
            raise KubeconfigError(f"{where}: must be {_DATA}, not {_json_kind(value)}")
        try:
            base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(f"{where}: not valid base64") from None
        return
    if not ok:
        raise KubeconfigError(f"{where}: must be {want}, not {_json_kind(value)}")


def _check_fields(body: Mapping[str, Any], known: Mapping[str, str], where: str) -> None:
    for key, want in known.items():
        if key in body:
            _check_value(body[key], want, f"{where}: {key}")


def _check_user(user: Mapping[str, Any], where: str) -> None:
    """The nested objects of a user entry: ``exec`` and ``auth-provider``."""
    spec = user.get("exec")
    if isinstance(spec, Mapping):
        _check_fields(spec, _EXEC_FIELDS, f"{where}: exec")
        env = spec.get("env")
        if env is not None:
            if not isinstance(env, list):
                raise KubeconfigError(f"{where}: exec: env: must be a list of name and value")
            for i, var in enumerate(env):
                if not isinstance(var, Mapping):
                    raise KubeconfigError(f"{where}: exec: env[{i}]: must be an object")
                _check_fields(var, {"name": _STRING, "value": _STRING}, f"{where}: exec: env[{i}]")
    provider = user.get("auth-provider")
    if isinstance(provider, Mapping):
        _check_value(provider.get("name"), _STRING, f"{where}: auth-provider: name")
        config = provider.get("config")
        if config is not None and (
            not isinstance(config, Mapping) or not all(isinstance(v, str) for v in config.values())
        ):
            raise KubeconfigError(f"{where}: auth-provider: config: must be a map of strings")


def _read(path: str | Path) -> dict[str, Any] | None:
    """One kubeconfig file's document (None: empty). ``OSError`` when it cannot be opened;
    ``KubeconfigError`` naming the file for anything it holds that is not a kubeconfig.

    As ``LoadFromFile``, one bad file fails the whole load, naming the file and the field:
    YAML that does not parse, a key given twice, a known field of the wrong JSON type
    (``token: 5``, ``insecure-skip-tls-verify: "no"``, ``*-data`` that is not base64), an
    entry that is not an object, two entries of one name in one file (the v1 conversion).
    Fields it does not know are ignored, as client-go ignores them."""
    from kube.strict import DuplicateKey, ManifestError, TooManyValues, parse_yaml

    with open(path, "rb") as f:
        raw = f.read(_MAX_BYTES + 1)
    if len(raw) > _MAX_BYTES:
        raise KubeconfigError(f"{path}: not a kubeconfig: larger than {_MAX_BYTES >> 20} MiB")
    if b"\x00" in raw:
        raise KubeconfigError(f"{path}: not a kubeconfig: binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KubeconfigError(
            f"{path}: not a kubeconfig: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start})"
        ) from None
    try:  # a key given twice: which token was meant?
        docs, _ = parse_yaml(text, duplicates="refuse", max_values=_MAX_NODES)
    except DuplicateKey as exc:
        raise KubeconfigError(f"{path}: {exc.dotted}: given twice") from None
    except TooManyValues as exc:
        raise KubeconfigError(f"{path}: more than {exc.limit} values (YAML aliases?)") from None
    except ManifestError as exc:
        raise KubeconfigError(f"{path}: not a kubeconfig: {exc.detail}") from None
    docs = [d for d in docs if d is not None]
    if not docs:
        return None
    if len(docs) > 1 or not isinstance(docs[0], dict):
        raise KubeconfigError(f"{path}: not a kubeconfig")
    return docs[0]


def load_kubeconfig(paths: Sequence[str | Path]) -> Kubeconfig:
    """Read and merge kubeconfig files. ``KubeconfigError`` for a file that is not a
    kubeconfig; ``OSError`` (unreadable, gone) is left to the caller.

    As ``ClientConfigLoadingRules.Load``: the first file wins — the first one that sets
    ``current-context`` sets it, and the first entry of a name in ``clusters``, ``users`` or
    ``contexts`` is the one kept. File references (``certificate-authority``,
    ``client-certificate``, ``client-key``, ``tokenFile``, and an exec plugin's ``command``
    when it names a path) are relative to the file that holds them (``ResolveLocalPaths``)."""
    current = ""
    merged: dict[str, dict[str, Mapping[str, Any]]] = {s: {} for s, _ in _SECTIONS}
    origins: dict[tuple[str, str], str] = {}
    for path in paths:
        doc = _read(path)
        if doc is None:
            continue
        _check_fields(doc, _TOP_FIELDS, str(path))
        base = Path(path).resolve().parent
        current = current or str(doc.get("current-context") or "")
        for section, inner in _SECTIONS:
            entries = doc.get(section) or []
            if not isinstance(entries, list):
                raise KubeconfigError(f"{path}: {section}: must be a list")
            names: set[str] = set()
            for i, entry in enumerate(entries):
                if not isinstance(entry, Mapping):
                    raise KubeconfigError(f"{path}: {section}[{i}]: not an object")
                name = entry.get("name") or ""
                if not isinstance(name, str):
                    raise KubeconfigError(f"{path}: {section}[{i}]: name: must be a string")
                if name in names:
                    raise KubeconfigError(f"{path}: {section}: {name!r} is named twice")
                names.add(name)
                body = entry.get(inner) or {}
                if not isinstance(body, Mapping):
                    raise KubeconfigError(f"{path}: {section} {name!r}: not an object")
                where = f"{path}: {section} {name!r}"
                _check_fields(body, _ENTRY_FIELDS[section], where)
                if section == "users":
                    _check_user(body, where)
                if name in merged[section]:
                    continue
                body = dict(body)
                for key in _FILE_KEYS[section]:
                    if key in body:
                        body[key] = _absolute(base, body[key])
                spec = body.get("exec")
                if section == "users" and isinstance(spec, Mapping):
                    command = spec.get("command")
                    if isinstance(command, str) and os.sep in command:
                        body["exec"] = {**spec, "command": _absolute(base, command)}
                merged[section][name] = body
                origins[(section, name)] = str(path)
    return Kubeconfig(
        current,
        merged["clusters"],
        merged["users"],
        merged["contexts"],
        files=tuple(str(p) for p in paths),
        origins=origins,
    )
