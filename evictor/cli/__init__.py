"""``evict``: kubectl's drain, cordon and uncordon, plus a single-pod eviction, on ``evictor``.

Flags, defaults, stdout/stderr lines and the order of operations are kubectl's
(``k8s.io/kubectl/pkg/cmd/drain``): cordon every node first, then drain one node after another;
a blocking filter stops that node before any eviction; failures are collected and reported at
the end as ``There are pending nodes to be drained:``. Where this goes beyond kubectl, the
defaults keep kubectl's behaviour: ``--concurrency`` (kubectl has no bound; 50 here),
``--order=priority`` (lowest priority first, ``scheduler``'s ordering), ``-o json`` (a report on
stdout; the human lines then go to stderr), a live progress display only when stdout is a
terminal, ``--uncordon-on-failure`` (kubernetes/kubernetes#37592), on timeout a diagnosis
of every blocking PodDisruptionBudget, ``--parallel N`` (up to N nodes drained at once; the
Eviction API keeps every budget whole) and ``--plan`` (``evictor.plan``: the drain predicted
from reads only, exit 3 when it would not finish), which ``--check-plan`` runs before a real
drain to refuse one that cannot finish.

Flags are read as kubectl's pflag reads them (``evictor.cliflags``): the global flags
(``--kubeconfig``, ``--context``, ``-n``, ``--request-timeout``, ``-v``, ``--debug``, and those
over the kubeconfig: ``--cluster``, ``--user``, ``-s/--server``, ``--token``,
``--certificate-authority``, ``--insecure-skip-tls-verify``, ``--tls-server-name``,
``--client-certificate``, ``--client-key``, ``--as``, ``--as-group``, ``--as-uid``) before or
after the subcommand (``--as-group`` repeated anywhere: every group counts), every boolean as
``--flag``, ``--flag=true`` or ``--flag=false``, so scripts written for ``kubectl drain`` run
unchanged.

Exit codes: 0 ok, 1 something failed at run time, 2 bad usage or input (nothing is cordoned or
evicted then), 3 the plan says the drain will not finish (``--plan``, ``--check-plan``).
kubectl exits 1 for usage errors too; the project's CLI rule wins here.

Installed also as ``kubectl-evict``, a kubectl plugin (``kubectl evict drain ...``): kubectl
passes the arguments after the plugin's name, global flags included, and the usage lines then
name ``kubectl evict``.

Only click (and ``kube.cliutil``, which needs nothing else) is imported at start-up:
kubernetes-asyncio and the object views are imported inside the commands, so ``evict --help``
stays fast.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from evictor.cliflags import BOOL, GoGroup, GoOption, bool_flag, persistent
from kube.cliutil import CONTEXT_SETTINGS, EXIT_CODES, EXIT_INTERRUPTED, PACKAGE
from kube.duration import parse_go_duration
from kube.kubeconfig import Overrides

if TYPE_CHECKING:
    from evictor.client import Evictor
    from evictor.drain.helper import DrainHelper

__all__ = ["main", "parse_go_duration"]

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


def _global_options(f: F) -> F:
    """kubectl's global flags, on the group and on every command: ``evict drain NODE
    --kubeconfig FILE`` is ``evict --kubeconfig FILE drain NODE`` (``evictor.cliflags``)."""
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


def _fail(message: str) -> NoReturn:
    raise RuntimeFailure(message)


# Collect cycles every 100 000 allocations, not 700: a command allocates mostly acyclic JSON
# (two 500-pod pages are ~10^5 objects), and the default thresholds spent ~40 ms collecting
# before a 1000-pod drain's first eviction, and ~0.15 s in a full collection after it was done.
_GC_THRESHOLD = (100_000, 20, 20)


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


def _run(glob: Globals, coro: Coroutine[Any, Any, T]) -> T:
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


async def _client(glob: Globals, concurrency: int = 50) -> Any:
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


def _check_selector(flag: str, text: str) -> None:
    from kube.labels import SelectorError, parse_label_selector

    try:
        parse_label_selector(text)
    except SelectorError:
        raise click.UsageError(
            f"{flag}=<{flag.strip('-').replace('-', '_')}> must be a valid label selector"
        ) from None


def _dry_run(value: str) -> str:
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


def _suffix(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


def _aggregate(errors: list[str]) -> str:
    """Go's ``utilerrors.NewAggregate(errs).Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


async def _resolve_nodes(
    api: Any, names: tuple[str, ...], selector: str, chunk_size: int
) -> list[dict[str, Any]]:
    from evictor.api.calls import APIError, TransportError, list_items, path_segment, send

    nodes: list[dict[str, Any]] = []
    try:
        if names:
            for name in names:
                resp = await send(api, "GET", f"/api/v1/nodes/{path_segment(name)}")
                if not resp.ok:
                    _fail_server(resp)
                nodes.append(resp.body)
            return nodes
        return await list_items(
            api, "/api/v1/nodes", query=[("labelSelector", selector)], chunk_size=chunk_size
        )
    except APIError as exc:
        raise RuntimeFailure(str(exc)) from None
    except TransportError as exc:
        _fail(f"unable to connect to the server: {exc}")


def _fail_server(resp: Any) -> NoReturn:
    from evictor.api.calls import api_error_text

    raise RuntimeFailure(api_error_text(resp.status, resp.body, resp.message))


# --- click -------------------------------------------------------------------------------------


class _Group(GoGroup):
    """click's group, flags parsed as kubectl's (``evictor.cliflags``), every usage error as one
    ``error: ...`` line and exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("Interrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except click.UsageError as exc:
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@_global_options
@click.version_option(
    package_name=PACKAGE,
    prog_name="evict",
    message="%(prog)s %(version)s",
    help="Show the version and exit.",
)
@click.pass_context
def main(ctx: click.Context) -> None:
    """Drain nodes and evict pods through the Eviction API, like kubectl drain but faster.

    The global options may also follow the command, as kubectl's do, and every boolean flag
    takes =true or =false (evict drain NODE --force --delete-emptydir-data=true)."""
    ctx.ensure_object(Globals)


_node_selector = click.option(
    "-l", "--selector", default="", help="Selector (label query) to filter on nodes."
)
_dry_run_opt = click.option(
    "--dry-run",
    cls=GoOption,
    default="none",
    no_opt_default="client",
    help='Must be "none", "server", or "client". A bare --dry-run means client.',
)


@main.command()
@click.argument("nodes", nargs=-1)
@bool_flag(
    "--force",
    help="Also evict pods without a controller (and pods of a missing DaemonSet).",
)
@bool_flag(
    "--ignore-daemonsets",
    help="Leave DaemonSet pods in place instead of refusing the drain.",
)
@bool_flag(
    "--delete-emptydir-data",
    help="Also evict pods with emptyDir volumes; their data is lost.",
)
@click.option(
    "--grace-period",
    type=int,
    default=-1,
    show_default=True,
    help="Seconds each pod gets to shut down; negative: the pod's own value.",
)
@click.option(
    "--timeout",
    type=DURATION,
    default="0s",
    show_default=True,
    help="Give up on a node after this long (Go duration); 0s waits forever.",
)
@click.option("--pod-selector", default="", help="Only pods matching this label selector.")
@_node_selector
@bool_flag(
    "--disable-eviction",
    help="DELETE pods instead of evicting them; PodDisruptionBudgets are not checked.",
)
@click.option(
    "--skip-wait-for-delete-timeout",
    type=int,
    default=0,
    show_default=True,
    help="N > 0: do not wait for pods deleted more than N seconds ago.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=0),
    default=500,
    show_default=True,
    help="Page size of node and pod lists; 0 lists everything at once.",
)
@_dry_run_opt
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="At most this many eviction requests in flight.",
)
@click.option(
    "--order",
    type=click.Choice(["none", "priority"]),
    default="none",
    show_default=True,
    help="priority: evict lowest-priority pods first, one priority level at a time.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["", "json"]),
    default="",
    help="json: print a report of every pod on stdout (human lines go to stderr).",
)
@bool_flag(
    "--uncordon-on-failure",
    help="Uncordon nodes whose drain failed (kubectl leaves them cordoned).",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Drain up to N nodes at once (each budget still bounds the disruption it allows).",
)
@bool_flag(
    "--plan",
    help="Only predict the drain, changing nothing: where each pod goes, which budget holds "
    "it, whether the drain finishes (exit 0) or not (exit 3). Nodes are played in the order "
    "that finishes soonest.",
)
@bool_flag(
    "--check-plan",
    help="Plan first; refuse to start (exit 3, nothing cordoned) when the plan says the drain "
    "cannot finish, else drain the nodes in the plan's order.",
)
@_global_options
@click.pass_obj
def drain(  # noqa: PLR0917 - click passes options positionally
    glob: Globals,
    nodes: tuple[str, ...],
    force: bool,
    ignore_daemonsets: bool,
    delete_emptydir_data: bool,
    grace_period: int,
    timeout: float,
    pod_selector: str,
    selector: str,
    disable_eviction: bool,
    skip_wait_for_delete_timeout: int,
    chunk_size: int,
    dry_run: str,
    concurrency: int,
    order: str,
    output: str,
    uncordon_on_failure: bool,
    parallel: int,
    plan: bool,
    check_plan: bool,
) -> None:
    """Drain NODE(s) in preparation for maintenance: cordon, then evict their pods.

    With --plan, predict the drain instead and change nothing."""
    if nodes and selector:
        raise click.UsageError("cannot specify both a node name and a --selector option")
    if not nodes and not selector:
        raise click.UsageError("USAGE: drain NODE [flags]")
    if pod_selector:
        _check_selector("--pod-selector", pod_selector)
    if selector:
        _check_selector("--selector", selector)
    mode = _dry_run(dry_run)
    if timeout < 0:
        raise click.UsageError("--timeout must not be negative")
    opts = _DrainArgs(
        nodes=nodes,
        selector=selector,
        force=force,
        ignore_daemonsets=ignore_daemonsets,
        delete_emptydir_data=delete_emptydir_data,
        grace_period=grace_period,
        timeout=timeout,
        pod_selector=pod_selector,
        disable_eviction=disable_eviction,
        skip_wait=skip_wait_for_delete_timeout,
        chunk_size=chunk_size,
        dry_run=mode,
        concurrency=concurrency,
        order=order,
        output=output,
        uncordon_on_failure=uncordon_on_failure,
        parallel=parallel,
        plan=plan,
        check_plan=check_plan,
    )
    code = _run(glob, _plan_only(glob, opts) if plan else _drain(glob, opts))
    sys.exit(code)


@dataclass(slots=True)
class _DrainArgs:
    nodes: tuple[str, ...]
    selector: str
    force: bool
    ignore_daemonsets: bool
    delete_emptydir_data: bool
    grace_period: int
    timeout: float
    pod_selector: str
    disable_eviction: bool
    skip_wait: int
    chunk_size: int
    dry_run: str
    concurrency: int
    order: str
    output: str
    uncordon_on_failure: bool
    parallel: int = 1
    plan: bool = False
    check_plan: bool = False


EXIT_WILL_NOT_FINISH = 3


def _drain_options(a: _DrainArgs) -> Any:
    """kubectl's filter flags (``evictor.drain.filters.DrainOptions``)."""
    from evictor.drain.filters import DrainOptions

    return DrainOptions(
        force=a.force,
        ignore_daemonsets=a.ignore_daemonsets,
        delete_emptydir_data=a.delete_emptydir_data,
        skip_wait_for_delete_timeout=a.skip_wait,
    )


def _plan_options(a: _DrainArgs) -> Any:
    from evictor.plan.types import PlanOptions
    from kube.labels import parse_label_selector

    return PlanOptions(
        drain=_drain_options(a),
        order=a.order,
        parallel=a.parallel,
        grace_period=a.grace_period,
        timeout=a.timeout,
        disable_eviction=a.disable_eviction,
        pod_selector=parse_label_selector(a.pod_selector) if a.pod_selector else None,
    )


async def _make_plan(api: Any, a: _DrainArgs, names: list[str] | None = None) -> Any:
    """Read the cluster (GETs only) and play the drain of ``names`` (``evictor.plan``); None:
    the nodes are looked up as a drain does, while the cluster is being read. None when no
    node is selected."""
    from evictor.clusterread import read_cluster
    from evictor.plan.search import best_plan

    reading = asyncio.ensure_future(read_cluster(api, chunk_size=a.chunk_size))
    try:
        if names is None:
            nodes = await _resolve_nodes(api, a.nodes, a.selector, a.chunk_size)
            names = [str(n["metadata"]["name"]) for n in nodes]
        if not names:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            return None
        view = await reading
    except BaseException:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        raise
    return best_plan(view, names, _plan_options(a))


def _print_plan(plan: Any, io: Output, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        for line in plan.lines():
            io.out(line)


async def _plan_only(glob: Globals, a: _DrainArgs) -> int:
    """``--plan``: the prediction, on stdout; 0 when the drain finishes, 3 when it does not."""
    from evictor.api.calls import APIError, TransportError

    io = Output()
    api = await _client(glob, a.concurrency)
    async with api:
        try:
            plan = await _make_plan(api, a)
            if plan is None:
                io.err("No resources found")
                return 0
        except TransportError as exc:
            raise RuntimeFailure(f"unable to connect to the server: {exc}") from None
        except APIError as exc:
            raise RuntimeFailure(str(exc)) from None
    _print_plan(plan, io, a.output)
    return 0 if plan.finishes else EXIT_WILL_NOT_FINISH


async def _drain(glob: Globals, a: _DrainArgs) -> int:
    from evictor.api.calls import TURNS_TO_CONNECT, APIError, TransportError, let_requests_out

    started = time.time()
    io = Output(to_stderr=a.output == "json")
    api = await _client(glob, a.concurrency)
    async with api:
        # The node lookup goes out first; the drain's own modules (~30 ms) load while it is
        # on the wire, instead of before it.
        lookup = asyncio.ensure_future(_resolve_nodes(api, a.nodes, a.selector, a.chunk_size))
        try:
            await let_requests_out(TURNS_TO_CONNECT)
            from evictor.client import Evictor
            from evictor.drain.helper import DrainHelper

            evictor = Evictor(api, concurrency=a.concurrency)

            def new_helper() -> DrainHelper:
                return DrainHelper(
                    evictor,
                    options=_drain_options(a),
                    grace_period_seconds=a.grace_period,
                    timeout=a.timeout,
                    pod_selector=a.pod_selector,
                    disable_eviction=a.disable_eviction,
                    chunk_size=a.chunk_size,
                    dry_run=a.dry_run,
                    order=a.order,
                    out=io.out,
                    err=io.err,
                )

            helper = new_helper()
        except BaseException:
            lookup.cancel()
            await asyncio.gather(lookup, return_exceptions=True)
            raise
        if not a.disable_eviction and a.dry_run != "client":
            # discovery (kubectl's CheckEvictionSupport) overlaps node lookup, cordon and listing
            _prefetch(evictor.eviction_version())
        try:
            nodes = await lookup
            if not nodes:
                io.err("No resources found")
                return 0
            names = [str(n["metadata"]["name"]) for n in nodes]
            report: dict[str, Any] = {"kind": "DrainReport", "nodes": []}
            if a.check_plan:
                plan = await _make_plan(api, a, names)
                if not plan.finishes:
                    _print_plan(plan, Output(), a.output)
                    io.err(f"error: {plan.summary()} (--check-plan: nothing was cordoned)")
                    return EXIT_WILL_NOT_FINISH
                io.err(f"plan: {plan.summary()}; order {' '.join(plan.order)}")
                by_name = {str(n["metadata"]["name"]): n for n in nodes}
                names = list(plan.order)
                nodes = [by_name[name] for name in names]
                report["plan"] = {"finishes": True, "order": names, "rounds": plan.rounds}
            suffix = _suffix(a.dry_run)
            for node in nodes:
                name = node["metadata"]["name"]
                try:
                    word = await helper.cordon(node, True)
                    io.out(f"node/{name} {word}{suffix}")
                except TransportError as exc:
                    io.err(f'error: unable to cordon node "{name}": {exc}')
            remaining: list[str] = []
            fatal: list[str] = []
            helpers: list[DrainHelper] = []
            node_reports = {name: {"name": name, "drained": False} for name in names}
            report["nodes"] = list(node_reports.values())

            def reports() -> list[Any]:
                return [r for h in helpers for r in h.reports]

            async def drain_one(name: str) -> None:
                mine = new_helper()
                helpers.append(mine)
                node_report: dict[str, Any] = node_reports[name]
                errs = await _drain_node(mine, name, io, node_report)
                node_report["pods"] = [_pod_report(r, evictor) for r in mine.reports]
                if errs:
                    io.err(
                        f'error: unable to drain node "{name}" due to error: '
                        f"{_aggregate(errs)}, continuing command..."
                    )
                    fatal.extend(errs)
                    remaining.append(name)
                    node_report["errors"] = errs
                else:
                    node_report["drained"] = True
                    io.out(f"node/{name} drained{suffix}")

            progress = _Progress.start(reports, evictor, io) if _use_progress(a) else None
            try:
                await _each(names, drain_one, a.parallel)
            finally:
                if progress is not None:
                    progress.stop()
            if remaining:
                remaining.sort(key=names.index)
                io.err("There are pending nodes to be drained:")
                for name in remaining:
                    io.err(f" {name}")
                if any(
                    r.result is not None and r.result.outcome == "blocked_by_pdb" for r in reports()
                ):
                    for line in await _diagnose(reports(), evictor):
                        io.err(line)
                if a.uncordon_on_failure:
                    for name in remaining:
                        try:
                            word = await helper.cordon(name, False)
                            io.out(f"node/{name} {word}{suffix}")
                        except TransportError as exc:
                            io.err(f'error: unable to uncordon node "{name}": {exc}')
                if len(fatal) == 1:
                    io.err(f"error: {fatal[0]}")
                else:
                    for e in fatal:
                        io.err(e)
            report["success"] = not remaining
            report["seconds"] = round(time.time() - started, 3)
            if a.output == "json":
                click.echo(json.dumps(report, indent=2))
            return 1 if remaining else 0
        except TransportError as exc:
            raise RuntimeFailure(f"unable to connect to the server: {exc}") from None
        except APIError as exc:
            raise RuntimeFailure(str(exc)) from None
        finally:
            await evictor.close()


async def _each(
    names: list[str], drain_one: Callable[[str], Coroutine[Any, Any, None]], parallel: int
) -> None:
    """``drain_one`` for every node: one after another (kubectl), or up to ``parallel`` at
    once, started in order as slots free up."""
    if parallel <= 1:
        for name in names:
            await drain_one(name)
        return
    slots = asyncio.Semaphore(parallel)

    async def guarded(name: str) -> None:
        async with slots:
            await drain_one(name)

    tasks = [asyncio.create_task(guarded(name)) for name in names]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _prefetch(coro: Coroutine[Any, Any, Any]) -> None:
    """Start ``coro`` now; whoever needs its result later awaits the cached value. A failure
    is left for that later call to meet (and report) again."""
    task = asyncio.ensure_future(coro)
    task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
    _PREFETCHED.add(task)
    task.add_done_callback(_PREFETCHED.discard)


_PREFETCHED: set[asyncio.Future[Any]] = set()


async def _drain_node(
    helper: DrainHelper, name: str, io: Output, node_report: dict[str, Any]
) -> list[str]:
    plan = await helper.get_pods_for_deletion(name)
    errors = plan.errors()
    warnings = plan.warnings()
    if warnings:
        node_report["warnings"] = warnings
    if errors:
        return errors
    if warnings:
        io.err(f"Warning: {warnings}")
    errs = await helper.delete_or_evict_pods(plan.pods())
    if errs:
        pending = await helper.get_pods_for_deletion(name)
        pods = pending.pods()
        if pods:
            io.err(
                f'There are pending pods in node "{name}" when an error occurred: '
                f"{_aggregate(errs)}"
            )
            for p in pods:
                io.err(f"pod/{p.name}")
        return [_aggregate(errs)] if len(errs) > 1 else errs
    return []


def _pod_report(rep: Any, evictor: Evictor) -> dict[str, Any]:
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


async def _diagnose(reports: list[Any], evictor: Evictor) -> list[str]:
    """Name each blocking PDB, why it is at zero, and the remedies (``evictor.diagnose``)."""
    from evictor.diagnose import diagnose

    blocked: dict[tuple[str, str], list[str]] = {}
    for rep in reports:
        res = rep.result
        if res is None or res.outcome != "blocked_by_pdb":
            continue
        for pdb in res.pdbs:
            blocked.setdefault((res.namespace, pdb), []).append(res.name)
    lines: list[str] = []
    for (ns, pdb), pods in blocked.items():
        st = evictor.pdb_state(ns, pdb)
        if st is None:
            lines.append(f"diagnosis: PodDisruptionBudget {ns}/{pdb} blocked {', '.join(pods)}")
            continue
        try:
            lines.extend(await diagnose(evictor.api_client, st, blocked=pods))
        except Exception as exc:  # a diagnosis must never hide the drain's own result
            lines.append(f"diagnosis: PodDisruptionBudget {ns}/{pdb}: unavailable ({exc})")
    return lines


def _use_progress(a: _DrainArgs) -> bool:
    return a.output != "json" and sys.stdout.isatty() and a.dry_run != "client"


class _Progress:
    """A rich live line under kubectl's output: done/total, blocked pods, next retry."""

    def __init__(self, reports: Callable[[], list[Any]], evictor: Evictor, io: Output) -> None:
        from rich.console import Console
        from rich.live import Live

        self.reports = reports
        self.evictor = evictor
        self.io = io
        self.live = Live(
            get_renderable=self.render, console=Console(), refresh_per_second=4, transient=True
        )

    @classmethod
    def start(cls, reports: Callable[[], list[Any]], evictor: Evictor, io: Output) -> _Progress:
        p = cls(reports, evictor, io)
        p.live.start()
        io.live = p.live
        return p

    def stop(self) -> None:
        self.live.stop()
        self.io.live = None

    def render(self) -> Any:
        from rich.text import Text

        reps = self.reports()
        done = sum(
            1
            for r in reps
            if r.wait is not None
            or (r.result is not None and r.wait is None and r.result.outcome != "evicted")
        )
        blocked: dict[str, int] = {}
        next_retry: float | None = None
        now = time.time()
        for r in reps:
            if r.result is None and r.blocked_by and r.next_retry is not None:
                for pdb in r.blocked_by:
                    blocked[pdb] = blocked.get(pdb, 0) + 1
                if r.next_retry is not None:
                    next_retry = (
                        r.next_retry if next_retry is None else min(next_retry, r.next_retry)
                    )
        text = Text(f"{done}/{len(reps)} pods done")
        if blocked:
            parts = []
            for pdb, n in blocked.items():
                pod_ns = next((r.pod.namespace for r in reps if pdb in r.blocked_by), "")
                st = self.evictor.pdb_state(pod_ns, pdb)
                detail = (
                    f" {st.current_healthy}/{st.desired_healthy} healthy" if st is not None else ""
                )
                parts.append(f"{n} blocked by PDB {pdb}{detail}")
            text.append(" · " + ", ".join(parts), style="yellow")
        if next_retry is not None:
            text.append(f" · next retry in {max(next_retry - now, 0):.1f}s")
        return text


# --- cordon / uncordon -------------------------------------------------------------------------


def _cordon_command(desired: bool) -> Callable[..., None]:
    word = "cordon" if desired else "uncordon"

    @click.argument("nodes", nargs=-1)
    @_node_selector
    @_dry_run_opt
    @_global_options
    @click.pass_obj
    def command(glob: Globals, nodes: tuple[str, ...], selector: str, dry_run: str) -> None:
        if nodes and selector:
            raise click.UsageError("cannot specify both a node name and a --selector option")
        if not nodes and not selector:
            raise click.UsageError(f"USAGE: {word} NODE [flags]")
        if selector:
            _check_selector("--selector", selector)
        mode = _dry_run(dry_run)
        sys.exit(_run(glob, _cordon(glob, nodes, selector, desired=desired, dry_run=mode)))

    command.__doc__ = (
        "Mark NODE(s) as unschedulable." if desired else "Mark NODE(s) as schedulable."
    )
    return command


async def _cordon(
    glob: Globals, nodes: tuple[str, ...], selector: str, *, desired: bool, dry_run: str
) -> int:
    from evictor.api.calls import TransportError
    from evictor.client import Evictor
    from evictor.drain.helper import DrainHelper

    api = await _client(glob)
    async with api:
        helper = DrainHelper(Evictor(api), dry_run=dry_run)
        found = await _resolve_nodes(api, nodes, selector, 500)
        failed = False
        for node in found:
            name = node["metadata"]["name"]
            try:
                what = await helper.cordon(node, desired)
                click.echo(f"node/{name} {what}{_suffix(dry_run)}")
            except TransportError as exc:
                click.echo(f"error: {exc}", err=True)
                failed = True
        if not found:
            click.echo("No resources found", err=True)
        return 1 if failed else 0


main.command("cordon")(_cordon_command(True))
main.command("uncordon")(_cordon_command(False))


# --- evict pod ---------------------------------------------------------------------------------


@main.command("pod")
@click.argument("name")
@click.option(
    "--grace-period",
    type=int,
    default=-1,
    show_default=True,
    help="Seconds given to the pod to terminate gracefully; negative: the pod's own value.",
)
@click.option(
    "--timeout",
    type=DURATION,
    default="0s",
    show_default=True,
    help="Give up after this long (retries and waiting); zero means infinite.",
)
@_dry_run_opt
@bool_flag(
    "--disable-eviction",
    help="Delete the pod instead of evicting it (bypasses PodDisruptionBudgets).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["", "json"]),
    default="",
    help="json: print the result on stdout.",
)
@_global_options
@click.pass_obj
def pod_cmd(  # noqa: PLR0917
    glob: Globals,
    name: str,
    grace_period: int,
    timeout: float,
    dry_run: str,
    disable_eviction: bool,
    output: str,
) -> None:
    """Evict one pod NAME (in -n NAMESPACE), respecting its PodDisruptionBudget, and wait."""
    mode = _dry_run(dry_run)
    if timeout < 0:
        raise click.UsageError("--timeout must not be negative")
    sys.exit(
        _run(glob, _evict_pod(glob, name, grace_period, timeout, mode, disable_eviction, output))
    )


async def _evict_pod(  # noqa: PLR0917
    glob: Globals,
    name: str,
    grace_period: int,
    timeout: float,
    dry_run: str,
    disable_eviction: bool,
    output: str,
) -> int:
    from evictor.api.calls import TransportError
    from evictor.client import Evictor
    from evictor.drain.helper import DrainHelper

    io = Output(to_stderr=output == "json")
    api = await _client(glob)
    namespace = glob.namespace or glob.context_namespace or "default"
    async with api:
        evictor = Evictor(api)
        helper = DrainHelper(
            evictor,
            grace_period_seconds=grace_period,
            timeout=timeout,
            disable_eviction=disable_eviction,
            dry_run=dry_run,
            out=io.out,
            err=io.err,
        )
        try:
            raw = await evictor.read_pod(namespace, name)
            if raw is None:
                _fail(f'pods "{name}" not found')
            from kube.objects import InvalidObject, Pod

            try:
                pod = Pod.from_dict(raw)
            except InvalidObject as exc:
                _fail(str(exc))
            errs = await helper.delete_or_evict_pods([pod])
        except TransportError as exc:
            raise RuntimeFailure(f"unable to connect to the server: {exc}") from None
        finally:
            await evictor.close()
        if output == "json":
            rep = [_pod_report(r, evictor) for r in helper.reports]
            click.echo(json.dumps(rep[0] if rep else {}, indent=2))
        for e in errs:
            io.err(f"error: {e}")
        return 1 if errs else 0


# Every subcommand's help ends with the exit status table, as the group's does.
drain.epilog = EXIT_CODES + "\n  3  the plan says the drain will not finish (--plan, --check-plan)"
for _command in main.commands.values():
    _command.epilog = _command.epilog or EXIT_CODES


def run() -> Any:
    """The ``evict`` process: ``main`` with the collector set for a short-lived command.

    The thresholds stay raised until the process ends, and what the command built is frozen
    before the interpreter's final collection (it would scan every listed pod to free nothing
    that exiting does not free anyway). Callers of ``main`` in a process of theirs (tests) keep
    their own collector settings.
    """
    gc.set_threshold(*_GC_THRESHOLD)
    try:
        return main(prog_name=_prog_name(sys.argv[0]))
    finally:
        gc.freeze()


def _prog_name(argv0: str) -> str:
    """``kubectl evict`` when kubectl runs this as its plugin ``kubectl-evict`` (usage lines
    and hints then name the command the user typed, as krew plugins do), else ``evict``."""
    import os.path

    return "kubectl evict" if os.path.basename(argv0) == "kubectl-evict" else "evict"


if __name__ == "__main__":
    run()
