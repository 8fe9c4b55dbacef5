"""One factory for the API client of ``evict`` and the agent: kubeconfig or in-cluster, with
credentials that refresh as client-go's do.

kubernetes-asyncio reads credentials once, when it loads: a process that runs for days (the
agent) or hours (``evict drain`` behind budgets) would go on sending a token that rotated or
expired, and every request would fail with 401. ``Credentials`` refreshes them as client-go
does; ``connect`` chooses the configuration and identity as clientcmd does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import ssl
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from evictor.api.health import ApiHealth
from kube.boundedjson import loads
from kube.kubeconfig import (
    Impersonation,
    Kubeconfig,
    KubeconfigError,
    Overrides,
    ResolvedContext,
    load_kubeconfig,
    transport_tls,
)
from kube.net import is_loopback
from kube.times import parse_rfc3339

__all__ = [
    "CERT_CHECK",
    "EXEC_SKEW",
    "SERVICE_ACCOUNT_DIR",
    "TOKEN_FILE_PERIOD",
    "ConfigError",
    "Connection",
    "Credentials",
    "InvalidConfiguration",
    "NoSuchKubeconfig",
    "NotInCluster",
    "connect",
    "resolve_proxy_once",
]

log = logging.getLogger("evictor.api.connect")

SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_FILE_PERIOD: Final = 60.0  # client-go's cached file token source: at most a minute old
EXEC_SKEW: Final = 10.0  # seconds before an exec credential's expiry that it is renewed
CERT_CHECK: Final = 10.0  # seconds between looks at the client certificate files


class ConfigError(Exception):
    """No usable configuration; the message says why (the CLIs word it their way)."""


class NoSuchKubeconfig(ConfigError):
    def __init__(self, path: str, *, from_env: bool = False) -> None:
        super().__init__(f"{path}: no such file or directory")
        self.path = path
        self.from_env = from_env


class InvalidConfiguration(ConfigError):
    pass


class NotInCluster(ConfigError):
    pass


# --- credential sources ------------------------------------------------------------------------


@dataclass(slots=True)
class _TokenFile:
    path: str
    period: float
    token: str = ""
    read_at: float = -1.0

    def get(self, now: float, *, force: bool) -> str:
        if force or self.read_at < 0 or now - self.read_at >= self.period:
            with open(self.path, encoding="utf-8") as f:
                self.token = f.read().strip()
            self.read_at = now
        return self.token


@dataclass(slots=True)
class _CertFiles:
    cert: str
    key: str
    checked_at: float = -1.0
    seen: tuple[Any, ...] = ()

    def _stamp(self) -> tuple[Any, ...]:
        out: list[Any] = []
        for path in (self.cert, self.key):
            try:
                st = os.stat(path)
            except OSError:
                out.append(None)
            else:
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(out)

    def changed(self, now: float, *, force: bool) -> bool:
        if not force and self.checked_at >= 0 and now - self.checked_at < CERT_CHECK:
            return False
        self.checked_at = now
        stamp = self._stamp()
        if not self.seen:
            self.seen = stamp
            return False
        if stamp == self.seen or None in stamp:
            return False  # a half-written pair is taken on a later look
        self.seen = stamp
        return True


@dataclass(slots=True)
class _Exec:
    """client-go's exec credential plugin (``client.authentication.k8s.io``)."""

    command: str
    args: Sequence[str]
    env: Mapping[str, str]
    api_version: str
    token: str = ""
    cert: bytes = b""
    key: bytes = b""
    expiry: float | None = None  # seconds since the epoch; None: until a 401
    ran: bool = False

    def due(self, now: float) -> bool:
        return not self.ran or (self.expiry is not None and now >= self.expiry - EXEC_SKEW)

    async def run(self) -> None:
        info = {
            "apiVersion": self.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        proc = await asyncio.create_subprocess_exec(
            self.command,
            *self.args,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise InvalidConfiguration(
                f"exec plugin {self.command}: exit {proc.returncode}: "
                f"{err.decode(errors='replace').strip()[:300]}"
            )
        try:
            # bounded: a plugin's output is read like any JSON someone else wrote
            status = loads(out)["status"]
        except (ValueError, KeyError, TypeError):
            status = None
        if not isinstance(status, Mapping):
            raise InvalidConfiguration(
                f"exec plugin {self.command}: its output is not an ExecCredential"
            )
        expiry = status.get("expirationTimestamp")
        try:
            expires = parse_rfc3339(str(expiry)) if expiry else None
        except ValueError as exc:
            raise InvalidConfiguration(
                f"exec plugin {self.command}: expirationTimestamp: {exc}"
            ) from None
        self.ran = True
        self.token = str(status.get("token") or "")
        self.cert = str(status.get("clientCertificateData") or "").encode()
        self.key = str(status.get("clientKeyData") or "").encode()
        self.expiry = expires
        if not self.token and not (self.cert and self.key):
            raise InvalidConfiguration(
                f"exec plugin {self.command}: no token and no client certificate in its output"
            )


@dataclass(slots=True)
class Credentials:
    """The refreshable credentials of one user, refreshed as client-go refreshes them:

    * ``tokenFile`` (kubeconfig) and the in-cluster ServiceAccount token are re-read when the
      copy in memory is older than a minute (``transport.NewCachedFileTokenSource``), and at
      once after a 401 (``tokenSourceTransport`` resets the cached token on 401);
    * an exec plugin is run again when its ``expirationTimestamp`` is near (here ``EXEC_SKEW``
      before it; client-go waits for the instant itself) and after a 401 answered to the
      credentials it produced (``exec.Authenticator.maybeRefreshCreds``);
    * client certificate files are re-read when they change (client-go's ``dynamicClientCert``
      polls them; here a ``stat`` at most every ``CERT_CHECK`` seconds and after a 401): new
      connections present the new certificate, and connections made with the old one are
      closed once their requests end.

    A client key that exists only in memory (``client-key-data``, an exec plugin's
    ``clientKeyData``) reaches the TLS context through files, since Python's ``ssl`` loads keys
    from files only (``presented``).
    """

    token: str = ""  # a static token ("" if none)
    token_file: _TokenFile | None = None
    exec: _Exec | None = None
    cert_files: _CertFiles | None = None
    key_pair: tuple[bytes, bytes] | None = None  # a client certificate and key held in memory
    clock: Callable[[], float] = time.time
    refreshes: int = 0  # refreshes forced by a 401
    tls_generation: int = 0  # client certificate changes so far
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def apply(
        self, configuration: Any, *, force: bool = False, refused: object = None
    ) -> tuple[bool, bool]:
        """Bring ``configuration`` up to date; ``force`` after a 401 to the credential
        ``refused`` (``generation``'s answer when the request went out): when another request
        has refreshed since, nothing is run again. Answers (the credentials differ from the
        refused ones, the client certificate changed)."""
        async with self._lock:
            if force and refused is not None and refused != self.generation(configuration):
                return True, False  # refreshed meanwhile by another request's 401
            now = self.clock()
            before = configuration.api_key.get("BearerToken")
            tls_changed = False
            token = self.token
            if self.token_file is not None:
                token = self.token_file.get(now, force=force)
            if self.exec is not None and (force or self.exec.due(now)):
                old = (self.exec.cert, self.exec.key)
                await self.exec.run()
                token = self.exec.token
                if self.exec.cert and (self.exec.cert, self.exec.key) != old:
                    self.key_pair = (self.exec.cert, self.exec.key)
                    tls_changed = True
            elif self.exec is not None:
                token = self.exec.token
            if self.cert_files is not None and self.cert_files.changed(now, force=force):
                tls_changed = True
            if token:
                configuration.api_key["BearerToken"] = f"Bearer {token}"
                configuration.api_key_prefix.pop("BearerToken", None)
            if tls_changed:
                self.tls_generation += 1
            changed = tls_changed or configuration.api_key.get("BearerToken") != before
            if force:
                self.refreshes += 1
            return changed, tls_changed

    def generation(self, configuration: Any) -> object:
        """What a request is sent with: the bearer token and the certificate's generation."""
        return (configuration.api_key.get("BearerToken"), self.tls_generation)

    @contextlib.contextmanager
    def presented(self, configuration: Any) -> Iterator[None]:
        """While active, ``configuration`` names files holding ``key_pair`` (if any), for the
        TLS context built inside: in a new private directory (``mkdtemp``: 0700, files 0600),
        removed with them on the way out, and the configuration's own files put back. Keep
        the block synchronous, so the files exist only while the context loads them and no
        key file outlives that step."""
        if self.key_pair is None:
            yield
            return
        saved = (configuration.cert_file, configuration.key_file)
        directory = tempfile.mkdtemp(prefix="evictor-tls-")
        try:
            paths = (os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key"))
            for path, data in zip(paths, self.key_pair, strict=True):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            configuration.cert_file, configuration.key_file = paths
            yield
        finally:
            configuration.cert_file, configuration.key_file = saved
            shutil.rmtree(directory, ignore_errors=True)


# --- the client -----------------------------------------------------------------------------


def _status_of(result: Any) -> int:
    status = getattr(result, "status", None)
    return status if isinstance(status, int) else 0


@dataclass(slots=True)
class Connection:
    """What ``connect`` found: the client, the kubeconfig context's namespace, the proxy."""

    api_client: Any
    namespace: str | None = None
    proxy: str | None = None
    in_cluster: bool = False


def _client_class() -> Any:
    from kubernetes_asyncio.client.api_client import ApiClient
    from kubernetes_asyncio.client.exceptions import ApiException

    from evictor.api.deferred import system_cas_on_first_use
    from evictor.api.impersonation import header_lines, with_lines

    class RefreshingApiClient(ApiClient):  # type: ignore[misc,unused-ignore]
        """An ``ApiClient`` whose every call brings the credentials up to date first
        (``Credentials``), and whose every request carries the ``Impersonate-*`` lines of
        ``impersonation`` (``request``).

        A 401 makes the credentials refresh once, and the request is sent again when the
        refresh changed anything (a request is never repeated with the credentials that were
        just refused); a second 401 is the caller's answer."""

        def __init__(
            self,
            configuration: Any,
            credentials: Credentials,
            impersonation: Impersonation | None = None,
        ) -> None:
            with system_cas_on_first_use(), credentials.presented(configuration):
                super().__init__(configuration=configuration)
            self.credentials = credentials
            self._impersonation_lines = header_lines(impersonation) if impersonation else ()
            self.health = ApiHealth()  # final answers, for the agent's readiness and metrics
            self.retired: list[Any] = []  # clients of an old certificate, closed at close()
            self.on_new_rest_client: Callable[[Any], None] | None = None

        def request(  # noqa: PLR0917 - the library's own signature, called by call_api
            self,
            method: str,
            url: str,
            query_params: Any = None,
            headers: Any = None,
            post_params: Any = None,
            body: Any = None,
            _preload_content: bool = True,
            _request_timeout: Any = None,
        ) -> Any:
            if self._impersonation_lines:
                headers = with_lines(headers, self._impersonation_lines)
            return super().request(
                method,
                url,
                query_params=query_params,
                headers=headers,
                post_params=post_params,
                body=body,
                _preload_content=_preload_content,
                _request_timeout=_request_timeout,
            )

        def call_api(self, *args: Any, **kwargs: Any) -> Any:
            return self._call(args, kwargs)

        async def _call(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
            path = args[0] if args else kwargs.get("resource_path", "")
            method = args[1] if len(args) > 1 else kwargs.get("method", "")
            what = f"{method} {path}"
            try:
                result = await self._send(args, kwargs)
            except ApiException as exc:
                self.health.record(int(exc.status or 0), what=what)
                raise
            except (OSError, TimeoutError) as exc:  # aiohttp's client errors are OSErrors
                self.health.record(0, what=what)
                raise exc
            self.health.record(_status_of(result), what=what)
            return result

        async def _send(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
            await self.refresh(force=False)
            used = self.credentials.generation(self.configuration)
            try:
                result = await super().call_api(*args, **kwargs)
            except ApiException as exc:
                if exc.status != 401 or not await self.refresh(force=True, refused=used):
                    raise
                return await super().call_api(*args, **kwargs)
            if _status_of(result) != 401 or not await self.refresh(force=True, refused=used):
                return result
            with contextlib.suppress(Exception):
                result.release()
            log.info("401 answered: credentials refreshed, request sent again")
            return await super().call_api(*args, **kwargs)

        async def refresh(
            self, *, force: bool, refused: object = None, strict: bool = False
        ) -> bool:
            """Bring the credentials up to date (``force``: after a 401 to ``refused``);
            True when they changed. A source that fails (a plugin that exits non-zero, a token
            file gone) is logged and the current credentials stay, so the server's answer is
            the caller's; ``strict`` (at connect time) raises ``ConfigError`` instead."""
            try:
                changed, tls_changed = await self.credentials.apply(
                    self.configuration, force=force, refused=refused
                )
            except (ConfigError, OSError, ValueError) as exc:
                if strict:
                    raise _invalid(exc) from None
                log.warning("refreshing the API credentials failed: %s", exc)
                return False
            if tls_changed:
                self._new_rest_client()
            return changed

        def _new_rest_client(self) -> None:
            from kubernetes_asyncio.client.rest import RESTClientObject

            self.retired.append(self.rest_client)
            with system_cas_on_first_use(), self.credentials.presented(self.configuration):
                self.rest_client = RESTClientObject(self.configuration)
            if self.on_new_rest_client is not None:
                self.on_new_rest_client(self)
            log.info("client certificate changed: new connections present the new one")

        async def close(self) -> None:
            for old in self.retired:
                with contextlib.suppress(Exception):
                    await old.close()
            self.retired.clear()
            await super().close()

    return RefreshingApiClient


# --- kubeconfig -----------------------------------------------------------------------------


def _kubeconfig_paths(explicit: str | None) -> tuple[list[str], str]:
    """The files to merge, as clientcmd's loading rules choose them: ``--kubeconfig`` alone
    (which must exist), else those ``$KUBECONFIG`` lists that exist (once each), else
    ``~/.kube/config`` if it exists. Also answers ``$KUBECONFIG`` when it named only missing
    files (for the message when nothing else can be used)."""
    if explicit is not None:
        if not os.path.exists(explicit):
            raise NoSuchKubeconfig(explicit)
        return [explicit], ""
    env = os.environ.get("KUBECONFIG", "")
    listed = list(dict.fromkeys(p for p in env.split(os.pathsep) if p))
    if listed:
        found = [p for p in listed if os.path.exists(p)]
        return found, "" if found else env
    default = os.path.expanduser("~/.kube/config")
    return ([default] if os.path.exists(default) else []), ""


def _read_kubeconfig(paths: Sequence[str]) -> Kubeconfig:
    """The merged files; ``InvalidConfiguration`` naming the file that cannot be used."""
    try:
        return load_kubeconfig(paths)
    except KubeconfigError as exc:
        raise InvalidConfiguration(str(exc)) from None
    except OSError as exc:
        where = exc.filename or ", ".join(paths)
        raise InvalidConfiguration(f"{where}: {exc.strerror or exc}") from None


def _key_pair(user: Mapping[str, Any]) -> tuple[bytes, bytes] | None:
    """The user's client certificate and key, when either is given inline (``*-data``): both
    read into memory (the other from its file), for ``Credentials.presented``."""
    if not (user.get("client-certificate-data") or user.get("client-key-data")):
        return None
    pair: list[bytes] = []
    for key in ("client-certificate", "client-key"):
        data = user.get(f"{key}-data")
        if data:
            pair.append(base64.b64decode("".join(str(data).split()), validate=True))
        elif user.get(key):
            with open(str(user[key]), "rb") as f:
                pair.append(f.read())
        else:
            return None  # half a pair: no client certificate (client-go's HasCertAuth)
    return pair[0], pair[1]


def _credentials(user: Mapping[str, Any], clock: Callable[[], float]) -> Credentials:
    creds = Credentials(clock=clock)
    if user.get("tokenFile"):
        creds.token_file = _TokenFile(str(user["tokenFile"]), TOKEN_FILE_PERIOD)
    elif user.get("token"):
        creds.token = str(user["token"])
    spec = user.get("exec")
    if isinstance(spec, Mapping):
        env = {
            str(e.get("name")): str(e.get("value", ""))
            for e in spec.get("env") or []
            if isinstance(e, Mapping) and e.get("name")
        }
        creds.exec = _Exec(
            command=str(spec.get("command") or ""),
            args=[str(a) for a in spec.get("args") or []],
            env=env,
            api_version=str(spec.get("apiVersion") or "client.authentication.k8s.io/v1"),
        )
    creds.key_pair = _key_pair(user)
    if creds.key_pair is None and user.get("client-certificate") and user.get("client-key"):
        creds.cert_files = _CertFiles(str(user["client-certificate"]), str(user["client-key"]))
    return creds


def _credentials_withheld(resolved: ResolvedContext) -> str:
    """The one warning line for credentials not sent to a server that is not ``https``
    ("" when the user holds none). The server is named without any user:password in it."""
    kinds = resolved.identification()
    if not kinds:
        return ""
    url = urllib.parse.urlsplit(resolved.server)
    server = f"{url.scheme}://{url.netloc.rpartition('@')[2]}" if url.netloc else resolved.server
    return (
        f"credentials not sent ({', '.join(kinds)}): the server {server} is not https, and "
        "kubeconfig credentials go over TLS only"
    )


async def connect(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    prog: str,
    in_cluster: bool = True,
    pool_size: int | None = None,
    clock: Callable[[], float] = time.time,
    service_account_dir: str = SERVICE_ACCOUNT_DIR,
    overrides: Overrides | None = None,
    warn: Callable[[str], None] | None = None,
) -> Connection:
    """The API client for ``prog`` from ``kubeconfig`` (else ``$KUBECONFIG``, else
    ``~/.kube/config``) changed by kubectl's global ``overrides`` (``--server``, ``--token``,
    ``--cluster``, ``--user``, ``--as`` …), acting as the user's ``as`` (if any), or in-cluster.
    ``warn`` gets the line about credentials kept from a server that is not https (default:
    this module's logger). Raises ``ConfigError``.

    Which configuration and which identity follow clientcmd's loading rules
    (``ClientConfigLoadingRules.Load``, ``DeferredLoadingClientConfig.ClientConfig``):
    ``--kubeconfig`` naming a missing file is an error, files ``$KUBECONFIG`` lists that do
    not exist are skipped, and a file that exists but cannot be read or decoded is an error
    naming it (``kube.kubeconfig``), as is a context, cluster or user it names that is
    missing. The in-cluster ServiceAccount is used only when the merged configuration chooses
    no context at all (client-go's ``ErrEmptyConfig``) and no kubeconfig, context or override
    was named: a kubeconfig that fails never falls back to it, since that would be another
    identity. The static parts of a kubeconfig (server, CA, TLS server name, ``proxy-url``,
    contexts) are read by kubernetes-asyncio's own loader, with the refreshable parts and
    client certificates taken out, so the library never runs a plugin itself nor writes a key
    to a temporary file of its own.

    Credentials travel only over TLS, as in ``DirectClientConfig.ClientConfig``: for a server
    that is not ``https`` (``kube.kubeconfig.transport_tls``) no token, token file, client
    certificate, basic auth or auth provider is read and no exec plugin runs; one warning says
    so. Impersonation is still sent (client-go sets it before that test), and kubectl's proxy
    rule is applied (``resolve_proxy_once``).
    """
    from evictor.api.deferred import defer_client_models, defer_system_cas

    defer_client_models()  # config and ApiClient only: the models cost ~0.3 s of start-up
    defer_system_cas()  # the system CAs load for the first TLS connection, not at import
    from kubernetes_asyncio.client.configuration import Configuration

    cfg = Configuration()
    paths, missing_env = _kubeconfig_paths(kubeconfig)
    merged = _read_kubeconfig(paths)
    namespace: str | None = None
    impersonation: Impersonation | None = None
    used_cluster = not (context or merged.current_context or overrides)  # ErrEmptyConfig
    if used_cluster:
        if kubeconfig is not None or not in_cluster:
            where = f"{kubeconfig}: " if kubeconfig else ""
            raise InvalidConfiguration(f"{where}no context chosen (current-context is not set)")
        creds = _in_cluster(cfg, service_account_dir, clock, paths=paths, missing_env=missing_env)
    else:
        try:
            name = context
            if overrides:
                merged = merged.overridden(context, overrides)
                name = None  # the overridden context is the current one
            resolved = merged.resolve(name)
            impersonation = resolved.impersonation()
            tls = transport_tls(resolved.server)
            if tls:
                creds = _credentials(resolved.user, clock)
            else:  # client-go reads nothing of the user but its impersonation
                creds = Credentials(clock=clock)
                if withheld := _credentials_withheld(resolved):
                    (warn or log.warning)(withheld)
            await _load_static(merged.as_dict(), resolved.name, cfg, tls=tls)
            if creds.cert_files is not None:
                cfg.cert_file, cfg.key_file = creds.cert_files.cert, creds.cert_files.key
            namespace = resolved.namespace or None
        except (ConfigError, KubeconfigError, OSError, ValueError, TypeError, KeyError) as exc:
            raise _invalid(exc) from None
    if pool_size is not None:
        cfg.connection_pool_maxsize = pool_size
    try:
        api = _client_class()(cfg, creds, impersonation)
    except ssl.SSLError as exc:
        raise InvalidConfiguration(f"client certificate and key: {exc}") from None
    except (OSError, ValueError) as exc:  # a CA file that cannot be read
        raise _invalid(exc) from None
    from kube.cliutil import user_agent

    api.user_agent = user_agent(prog)
    proxy = resolve_proxy_once(api)
    api.on_new_rest_client = resolve_proxy_once
    try:
        await api.refresh(force=False, strict=True)  # a broken plugin or file fails here
    except ConfigError:
        await api.close()
        raise
    return Connection(api, namespace=namespace, proxy=proxy, in_cluster=used_cluster)


def _invalid(exc: BaseException) -> ConfigError:
    if isinstance(exc, ConfigError):
        return exc
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return InvalidConfiguration(f"{exc.filename}: {exc.strerror}")
    return InvalidConfiguration(" ".join(str(exc).split()) or type(exc).__name__)


# Every user field that identifies someone, which the library would otherwise read: the
# refreshable ones and client certificates are this module's, the rest go only over TLS.
_USER_CREDENTIALS: Final = (
    "exec",
    "tokenFile",
    "token",
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
)


async def _load_static(merged: Mapping[str, Any], context: str, cfg: Any, *, tls: bool) -> None:
    """Server, CA, TLS and proxy through kubernetes-asyncio's own loader, with the
    credentials this module handles taken out so that it runs and reads none of them; auth
    providers and basic auth stay the library's, and only for a ``tls`` server (else every
    user is emptied: the library would send basic auth, or a provider's token, over http)."""
    from kubernetes_asyncio.config import kube_config
    from kubernetes_asyncio.config.config_exception import ConfigException

    static = json.loads(json.dumps(merged))
    for entry in static["users"]:
        user = entry.get("user") or {}
        for key in _USER_CREDENTIALS:
            user.pop(key, None)
        if not tls:
            entry["user"] = {}
    try:
        await kube_config.load_kube_config_from_dict(
            static, context=context, client_configuration=cfg
        )
    except ConfigException as exc:
        raise InvalidConfiguration(" ".join(str(exc).split())) from None


def _in_cluster(
    cfg: Any,
    directory: str,
    clock: Callable[[], float],
    *,
    paths: Sequence[str],
    missing_env: str,
) -> Credentials:
    """client-go's ``InClusterConfig``: the service's address from the environment, the CA
    and the token from the ServiceAccount volume (the token re-read as it rotates). When that
    is not possible either, says what was looked for."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    token = os.path.join(directory, "token")
    ca = os.path.join(directory, "ca.crt")
    if not host or not port or not os.path.isfile(token):
        if missing_env:
            raise NoSuchKubeconfig(missing_env, from_env=True)
        where = (
            f"{', '.join(paths)}: no context chosen (current-context is not set)"
            if paths
            else "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config)"
        )
        raise NotInCluster(
            f"{where}, and not running in a cluster (KUBERNETES_SERVICE_HOST and _PORT, {token})"
        )
    cfg.host = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
    if os.path.isfile(ca):
        cfg.ssl_ca_cert = ca
    return Credentials(token_file=_TokenFile(token, TOKEN_FILE_PERIOD), clock=clock)


def resolve_proxy_once(api_client: Any) -> str | None:
    """Choose the API server's proxy from the environment once, as kubectl does, and stop
    aiohttp from choosing it again on every request.

    kubernetes-asyncio opens its session with ``trust_env=True``: each request then looks up the
    proxy variables and reads ``~/.netrc``, two trips through a worker thread that delayed a
    1000-pod drain's first evictions by ~40 ms and its whole run by ~0.1 s — and a ``.netrc``
    entry would add credentials kubectl never sends. Go's ``ProxyFromEnvironment`` (kubectl's
    rule) is applied instead: ``HTTPS_PROXY``/``HTTP_PROXY`` by the server's scheme, ``NO_PROXY``
    exclusions, never for localhost or a loopback address. A ``proxy-url`` from the kubeconfig
    already on the configuration wins. Answers the proxy in use (None: direct).

    The session is replaced through aiohttp's public API only: the library's session hands its
    connector (TLS context, pool) over with ``detach()`` to a new ``ClientSession(trust_env=
    False)`` that owns it from then on; ``rest_client.pool_manager`` is the generated client's
    public attribute for its session.
    """
    import aiohttp

    rest = api_client.rest_client
    if not rest.proxy:
        url = urllib.parse.urlsplit(str(api_client.configuration.host))
        host = url.hostname or ""
        proxies = urllib.request.getproxies_environment()
        proxy = proxies.get(url.scheme or "https")
        if proxy and not is_loopback(host) and not _no_proxy(url.netloc, proxies):
            rest.proxy = proxy
    session = rest.pool_manager
    if session.trust_env:
        connector = session.connector
        session.detach()
        rest.pool_manager = aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE
        )
    return str(rest.proxy) if rest.proxy else None


# kubernetes-asyncio's session reads in chunks of 2 MiB (a watch line can be a large object)
READ_BUFSIZE = 2**21


def _no_proxy(netloc: str, proxies: dict[str, str]) -> bool:
    """``NO_PROXY`` names the host (or a domain of it); typeshed does not declare the helper."""
    from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

    return bool(proxy_bypass_environment(netloc, proxies))
