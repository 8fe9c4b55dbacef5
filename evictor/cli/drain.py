"""``evict drain``: kubectl's drain (``k8s.io/kubectl/pkg/cmd/drain``) on the drain helper
(``evictor.drain.helper``): cordon every node first, then drain one node after another; a
blocking filter stops that node before any eviction; failures are collected and reported at
the end as ``There are pending nodes to be drained:``. What goes beyond kubectl
(``--concurrency``, ``--order``, ``-o json``, ``--uncordon-on-failure``, ``--parallel``,
``--plan``, the live line, the blocking budgets' diagnosis) keeps kubectl's behaviour by default.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from evictor.cli.common import (
    DURATION,
    Globals,
    Output,
    RuntimeFailure,
    aggregate,
    api_client,
    check_selector,
    dry_run_option,
    dry_run_suffix,
    global_options,
    node_selector_option,
    parse_dry_run,
    pod_report,
    resolve_nodes,
    run_command,
)
from evictor.cli.plan import EXIT_WILL_NOT_FINISH, make_plan, plan_only, print_plan
from evictor.cli.progress import Progress
from evictor.cliflags import GoCommand, bool_flag
from kube.cliutil import EXIT_CODES

if TYPE_CHECKING:
    from evictor.client import Evictor
    from evictor.drain.helper import DrainHelper
    from evictor.plan.types import PlanOptions
    from scheduler.config import KubeSchedulerConfiguration

__all__ = ["drain"]


@click.command(cls=GoCommand)
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
@node_selector_option
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
@dry_run_option
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
# kubernetes/kubernetes#37592: kubectl leaves a node whose drain failed cordoned
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
@click.option(
    "--scheduler-config",
    "scheduler_config",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    callback=lambda _ctx, _param, value: _scheduler_config(value),
    help="With --plan or --check-plan: the cluster's KubeSchedulerConfiguration "
    "(kubescheduler.config.k8s.io/v1, kube-scheduler's --config): its profiles, by "
    "schedulerName, place the replacements (default: kube's default profile).",
)
@global_options
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
    scheduler_config: KubeSchedulerConfiguration | None,
) -> None:
    """Drain NODE(s) in preparation for maintenance: cordon, then evict their pods.

    With --plan, predict the drain instead and change nothing."""
    if nodes and selector:
        raise click.UsageError("cannot specify both a node name and a --selector option")
    if not nodes and not selector:
        raise click.UsageError("USAGE: drain NODE [flags]")
    if pod_selector:
        check_selector("--pod-selector", pod_selector)
    if selector:
        check_selector("--selector", selector)
    mode = parse_dry_run(dry_run)
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
        scheduler_config=scheduler_config,
    )
    if scheduler_config is not None and not (plan or check_plan):
        raise click.UsageError("--scheduler-config needs --plan or --check-plan")
    if plan:
        planned = plan_only(
            glob,
            _plan_options(opts),
            nodes=nodes,
            selector=selector,
            chunk_size=chunk_size,
            concurrency=concurrency,
            output=output,
        )
        sys.exit(run_command(glob, planned))
    sys.exit(run_command(glob, _drain(glob, opts)))


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
    scheduler_config: KubeSchedulerConfiguration | None = None


def _scheduler_config(path: str | None) -> KubeSchedulerConfiguration | None:
    """The file read as kube-scheduler reads ``--config``; exit 2 naming the bad field."""
    if path is None:
        return None
    from scheduler.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        raise click.BadParameter(f"{exc.field}: {exc}", param_hint="'--scheduler-config'") from None


def _drain_options(a: _DrainArgs) -> Any:
    """kubectl's filter flags (``evictor.drain.filters.DrainOptions``)."""
    from evictor.drain.filters import DrainOptions

    return DrainOptions(
        force=a.force,
        ignore_daemonsets=a.ignore_daemonsets,
        delete_emptydir_data=a.delete_emptydir_data,
        skip_wait_for_delete_timeout=a.skip_wait,
    )


def _plan_options(a: _DrainArgs) -> PlanOptions:
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
        scheduler_config=a.scheduler_config,
    )


async def _drain(glob: Globals, a: _DrainArgs) -> int:
    from evictor.api.calls import TURNS_TO_CONNECT, APIError, TransportError, let_requests_out

    started = time.time()
    io = Output(to_stderr=a.output == "json")
    api = await api_client(glob, a.concurrency)
    async with api:
        # The node lookup goes out first; the drain's own modules (~30 ms) load while it is
        # on the wire, instead of before it.
        lookup = asyncio.ensure_future(resolve_nodes(api, a.nodes, a.selector, a.chunk_size))
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
                plan = await make_plan(
                    api,
                    _plan_options(a),
                    nodes=a.nodes,
                    selector=a.selector,
                    chunk_size=a.chunk_size,
                    names=names,
                )
                assert plan is not None  # names is not empty
                if not plan.finishes:
                    print_plan(plan, Output(), a.output)
                    io.err(f"error: {plan.summary()} (--check-plan: nothing was cordoned)")
                    return EXIT_WILL_NOT_FINISH
                io.err(f"plan: {plan.summary()}; order {' '.join(plan.order)}")
                by_name = {str(n["metadata"]["name"]): n for n in nodes}
                names = list(plan.order)
                nodes = [by_name[name] for name in names]
                report["plan"] = {"finishes": True, "order": names, "rounds": plan.rounds}
            suffix = dry_run_suffix(a.dry_run)
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
                node_report["pods"] = [pod_report(r, evictor) for r in mine.reports]
                if errs:
                    io.err(
                        f'error: unable to drain node "{name}" due to error: '
                        f"{aggregate(errs)}, continuing command..."
                    )
                    fatal.extend(errs)
                    remaining.append(name)
                    node_report["errors"] = errs
                else:
                    node_report["drained"] = True
                    io.out(f"node/{name} drained{suffix}")

            progress = Progress.start(reports, evictor, io) if _use_progress(a) else None
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
                f'There are pending pods in node "{name}" when an error occurred: {aggregate(errs)}'
            )
            for p in pods:
                io.err(f"pod/{p.name}")
        return [aggregate(errs)] if len(errs) > 1 else errs
    return []


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


# The drain's help ends with the exit status table, and the plan's own status.
drain.epilog = EXIT_CODES + "\n  3  the plan says the drain will not finish (--plan, --check-plan)"
