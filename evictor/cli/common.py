"""What every ``evict`` command shares: kubectl's global flags (before or after the command),
the API client they configure, where output lines go, the errors a user reads as one line, and
the small rules kubectl applies to every command (selectors, ``--dry-run``, node lookups).

Only click and ``kube``'s light modules are imported here: the API client and the object views
are imported inside the functions that need them, so ``evict --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from evictor.cliflags import BOOL, GoOption, persistent
from kube.duration import parse_go_duration
from kube.kubeconfig import Overrides

if TYPE_CHECKING:
    from evictor.client import Evictor

__all__ = [
    "DURATION",
    "Globals",
    "Output",
    "RuntimeFailure",
    "aggregate",
    "api_client",
    "check_selector",
    "dry_run_option",
    "dry_run_suffix",
    "fail",
    "fail_server",
    "global_options",
    "node_selector_option",
    "parse_dry_run",
    "pod_report",
    "resolve_nodes",
    "run_command",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class RuntimeFailure(Exception):
    """A failure the user should read as one line; exit 1."""


class _Duration(click.ParamType):  # type: ignore[type-arg,unused-ignore]
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float | int):
            return float(value)
        try:
            return parse_go_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = _Duration()


class _RequestTimeout(click.ParamType):  # type: ignore[type-arg,unused-ignore]
    """kubectl's ``--request-timeout``: whole seconds, or a Go duration; 0 is no timeout."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float | int):
            return float(value)
        text = str(value)
        if text.isdigit():
            return float(text)
        try:
            seconds = parse_go_duration(text)
        except ValueError:
            seconds = -1.0
        if seconds < 0:
            raise click.UsageError(
                "Invalid timeout value. Timeout must be a single integer in seconds, or an "
                "integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)",
                ctx,
            )
        return seconds


@dataclass(slots=True)
class Globals:
    """kubectl's global flags (given before or after the subcommand) and what they led to."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    request_timeout: float = 0.0
    v: int = 0
    debug: bool = False
    context_namespace: str | None = None
    # kubectl's flags over the kubeconfig (--cluster, --user, --server, --token, ...)
    overrides: Overrides = field(default_factory=Overrides)


_OVERRIDE_FLAGS: frozenset[str] = frozenset(f.name for f in fields(Overrides))


def _store_global(ctx: click.Context, name: str, value: Any) -> None:
    glob = ctx.ensure_object(Globals)
    if name == "impersonate_groups":  # pflag's StringArray: every occurrence, wherever it is
        value = glob.overrides.impersonate_groups + tuple(value)
    if name in _OVERRIDE_FLAGS:
        glob.overrides = replace(glob.overrides, **{name: value})
    else:
        setattr(glob, name, value)


def global_options(f: F) -> F:
    """kubectl's global flags, on the group and on every command: ``evict drain NODE
    --kubeconfig FILE`` is ``evict --kubeconfig FILE drain NODE``, read as kubectl's pflag
    reads them (``evictor.cliflags``): ``--as-group`` repeated anywhere, every group counts;
    every boolean as ``--flag``, ``--flag=true`` or ``--flag=false``. Scripts written for
    ``kubectl drain`` run unchanged."""
    for option in reversed(
        [
            persistent(
                "--kubeconfig",
                store=_store_global,
                help="Path to the kubeconfig file (default $KUBECONFIG or ~/.kube/config).",
            ),
            persistent(
                "--context", store=_store_global, help="The name of the kubeconfig context to use."
            ),
            persistent(
                "-n",
                "--namespace",
                store=_store_global,
                help="Namespace of the pod for `evict pod` (default: the context's).",
            ),
            persistent(
                "--request-timeout",
                store=_store_global,
                type=_RequestTimeout(),
                help="How long to wait for each single server request (whole seconds or a "
                "duration: 1s, 2m, 3h); 0, the default, waits as long as it takes.",
            ),
            persistent(
                "-v",
                "--v",
                "v",
                store=_store_global,
                type=click.IntRange(min=0),
                metavar="LEVEL",
                help="Log verbosity: 4 shows debug logs, 6 every API request and its answer.",
            ),
            persistent(
                "--debug",
                store=_store_global,
                type=BOOL,
                no_opt_default="true",
                help="Show tracebacks of failures.",
            ),
            persistent(
                "--cluster", store=_store_global, help="The name of the kubeconfig cluster to use."
            ),
            persistent(
                "--user", store=_store_global, help="The name of the kubeconfig user to use."
            ),
            persistent(
                "-s",
                "--server",
                store=_store_global,
                help="The address and port of the Kubernetes API server (no kubeconfig needed).",
            ),
            persistent(
                "--token",
                store=_store_global,
                help="Bearer token for authentication to the API server.",
            ),
            persistent(
                "--certificate-authority",
                store=_store_global,
                help="Path to a cert file for the certificate authority.",
            ),
            persistent(
                "--insecure-skip-tls-verify",
                store=_store_global,
                type=BOOL,
                no_opt_default="true",
                help="Do not check the server's certificate (insecure).",
            ),
            persistent(
                "--tls-server-name",
                store=_store_global,
                help="Server name for the server certificate (else the server's hostname).",
            ),
            persistent(
                "--client-certificate",
                store=_store_global,
                help="Path to a client certificate file for TLS.",
            ),
            persistent(
                "--client-key", store=_store_global, help="Path to a client key file for TLS."
            ),
            persistent(
                "--as",
                "impersonate",
                store=_store_global,
                metavar="USER",
                help="Username to impersonate for the operation. User could be a regular user "
                "or a service account in a namespace.",
            ),
            persistent(
                "--as-group",
                "impersonate_groups",
                store=_store_global,
                multiple=True,
                metavar="GROUP",
                help="Group to impersonate for the operation, this flag can be repeated to "
                "specify multiple groups.",
            ),
            persistent(
                "--as-uid",
                "impersonate_uid",
                store=_store_global,
                metavar="UID",
                help="UID to impersonate for the operation.",
            ),
        ]
    ):
        f = option(f)
    return f


@dataclass(slots=True)
class Output:
    """Where kubectl's lines go: stdout (or stderr with ``-o json``), and stderr."""

    to_stderr: bool = False
    live: Any = None
    lines: list[str] = field(default_factory=list)

    def out(self, line: str) -> None:
        if self.live is not None:
            self.live.console.print(line, markup=False, highlight=False)
        else:
            click.echo(line, err=self.to_stderr)

    def err(self, line: str) -> None:
        if self.live is not None and sys.stderr.isatty():
            # same terminal: print above the live line instead of through it
            self.live.console.print(line, markup=False, highlight=False)
        else:
            click.echo(line, err=True)


def fail(message: str) -> NoReturn:
    """Stop the command with ``error: message`` and exit 1."""
    raise RuntimeFailure(message)


def _verbosity(level: int) -> None:
    """``-v``: klog's levels mapped onto the loggers this package writes to (stderr)."""
    if level <= 0:
        return
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname).1s %(name)s] %(message)s"))
    root = logging.getLogger("evictor")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if level >= 4 else logging.INFO)
    if level >= 6:
        logging.getLogger("evictor.requests").setLevel(logging.DEBUG)


def run_command(glob: Globals, coro: Coroutine[Any, Any, T]) -> T:
    from evictor.api.calls import request_timeout

    _verbosity(glob.v)
    try:
        with request_timeout(glob.request_timeout):
            return asyncio.run(coro)
    except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
        raise
    except RuntimeFailure as exc:
        if glob.debug:
            traceback.print_exc()
        text = str(exc)
        click.echo(text if text.startswith("Error from server") else f"error: {text}", err=True)
        sys.exit(1)
    except Exception as exc:
        if glob.debug:
            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


async def api_client(glob: Globals, concurrency: int = 50) -> Any:
    """A configured ApiClient (``evictor.api.connect``: credentials that refresh, the proxy
    rule); a bad kubeconfig or context is a usage error (exit 2)."""
    from evictor.api.connect import ConfigError, NoSuchKubeconfig, connect

    try:
        conn = await connect(
            kubeconfig=glob.kubeconfig,
            context=glob.context,
            prog="evict",
            pool_size=max(concurrency + 16, 32),
            overrides=glob.overrides or None,
            warn=lambda line: click.echo(f"W: {line}", err=True),
        )
    except NoSuchKubeconfig as exc:
        if exc.from_env:
            raise click.UsageError(f"KUBECONFIG={exc.path}: no such file or directory") from None
        raise click.UsageError(f"stat {exc.path}: no such file or directory") from None
    except ConfigError as exc:
        raise click.UsageError(f"invalid configuration: {_one_line(exc)}") from None
    glob.context_namespace = conn.namespace
    return conn.api_client


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def check_selector(flag: str, text: str) -> None:
    from kube.labels import SelectorError, parse_label_selector

    try:
        parse_label_selector(text)
    except SelectorError:
        raise click.UsageError(
            f"{flag}=<{flag.strip('-').replace('-', '_')}> must be a valid label selector"
        ) from None


def parse_dry_run(value: str) -> str:
    v = value.lower()
    if v in ("true", "false"):
        click.echo(
            f"W: --dry-run={v} is deprecated (boolean value) and can be replaced with "
            f"--dry-run={'client' if v == 'true' else 'none'}.",
            err=True,
        )
        return "client" if v == "true" else "none"
    if v not in ("none", "client", "server"):
        raise click.UsageError(
            f'Invalid dry-run value ({value}). Must be "none", "server", or "client".'
        )
    return v


def dry_run_suffix(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


def aggregate(errors: list[str]) -> str:
    """Go's ``utilerrors.NewAggregate(errs).Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


async def resolve_nodes(
    api: Any, names: tuple[str, ...], selector: str, chunk_size: int
) -> list[dict[str, Any]]:
    from evictor.api.calls import APIError, TransportError, list_items, path_segment, send

    nodes: list[dict[str, Any]] = []
    try:
        if names:
            for name in names:
                resp = await send(api, "GET", f"/api/v1/nodes/{path_segment(name)}")
                if not resp.ok:
                    fail_server(resp)
                nodes.append(resp.body)
            return nodes
        return await list_items(
            api, "/api/v1/nodes", query=[("labelSelector", selector)], chunk_size=chunk_size
        )
    except APIError as exc:
        raise RuntimeFailure(str(exc)) from None
    except TransportError as exc:
        fail(f"unable to connect to the server: {exc}")


def fail_server(resp: Any) -> NoReturn:
    from evictor.api.calls import api_error_text

    raise RuntimeFailure(api_error_text(resp.status, resp.body, resp.message))


node_selector_option = click.option(
    "-l", "--selector", default="", help="Selector (label query) to filter on nodes."
)
dry_run_option = click.option(
    "--dry-run",
    cls=GoOption,
    default="none",
    no_opt_default="client",
    help='Must be "none", "server", or "client". A bare --dry-run means client.',
)


def pod_report(rep: Any, evictor: Evictor) -> dict[str, Any]:
    """One pod of ``-o json``: its eviction's outcome, the budgets that held it, its wait."""
    out: dict[str, Any] = {"namespace": rep.pod.namespace, "name": rep.pod.name, "uid": rep.pod.uid}
    if rep.result is not None:
        r = rep.result.to_dict()
        out.update(
            outcome=r["outcome"],
            method=r["method"],
            attempts=r["attempts"],
            statusCode=r["statusCode"],
            reason=r["reason"],
            message=r["message"],
        )
        blocking = []
        for pdb in rep.result.pdbs:
            st = evictor.pdb_state(rep.pod.namespace, pdb)
            blocking.append(st.to_dict() if st is not None else {"name": pdb})
        out["pdbs"] = blocking
    if rep.wait is not None:
        out["deletion"] = rep.wait.state
    out["seconds"] = round(max(rep.finished - rep.started, 0.0), 3)
    return out
