"""``python -m scheduler``: the policy core from the command line.

``simulate`` loads a cluster from manifests, runs the scheduling cycle for its pending pods
(see ``scheduler.simulator``) and prints each decision with its explanation, as a table or as
JSON. This module is the only place in ``scheduler`` that prints. Bad input exits 2 with one
line naming the file, the document, the object and the field, before anything is simulated
(exit codes and ``--debug`` come from ``kube.cliutil``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import click

from kube.cliutil import CONTEXT_SETTINGS, EXIT_CODES, BadInput, common_options, run
from kube.strict import Validation, parse_validation

if TYPE_CHECKING:
    from rich.console import Console

    from kube.objects import KubeObject
    from scheduler.config import KubeSchedulerConfiguration
    from scheduler.simulator import Decision, SimulationReport

__all__ = [
    "SCHEDULER_CONFIG_HELP",
    "VALIDATE_HELP",
    "cli",
    "main",
    "read_scheduler_config",
    "scheduler_config_option",
    "validate_option",
]

SCHEDULER_CONFIG_HELP: Final = (
    "A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler's --config"
    " reads it: its profiles, by schedulerName, decide (default: kube's)."
)

PROG: Final = "python -m scheduler"

F = TypeVar("F", bound=Callable[..., Any])

VALIDATE_HELP: Final = (
    "How to treat unknown or duplicate fields in manifests, as kubectl: strict (or true) "
    "rejects them, warn reports them, ignore (or false) drops them (manifests from a newer "
    "Kubernetes, skipping kinds it has no schema for). Wrong types are always errors."
)


def _validation(_ctx: click.Context, _param: click.Parameter, value: str) -> Validation:
    try:
        return parse_validation(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def validate_option() -> Callable[[F], F]:
    """kubectl's ``--validate`` flag, shared with ``kubesim serve``."""
    return click.option(
        "--validate",
        "validation",
        default="strict",
        show_default=True,
        metavar="strict|warn|ignore",
        callback=_validation,
        help=VALIDATE_HELP,
    )


def read_scheduler_config(
    path: str, flag: str = "--scheduler-config"
) -> KubeSchedulerConfiguration:
    """The file read as kube-scheduler reads ``--config``; a bad one is a usage error (exit 2)
    naming the field and the rule."""
    from scheduler.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        raise click.BadParameter(f"{exc.field}: {exc}", param_hint=f"'{flag}'") from None


def _scheduler_config(
    _ctx: click.Context, param: click.Parameter, value: str | None
) -> KubeSchedulerConfiguration | None:
    if value is None:
        return None
    return read_scheduler_config(value, param.opts[0] if param.opts else "--scheduler-config")


def scheduler_config_option(*flags: str) -> Callable[[F], F]:
    """A KubeSchedulerConfiguration file (``kube-scheduler --config``), loaded when the
    command line is parsed: a bad file exits 2 naming the field before anything runs.
    Shared by ``simulate``, ``kubesim serve``, ``evict drain --plan``."""
    return click.option(
        *(flags or ("--scheduler-config",)),
        "scheduler_config",
        default=None,
        type=click.Path(dir_okay=False),
        metavar="FILE",
        callback=_scheduler_config,
        help=SCHEDULER_CONFIG_HELP,
    )


def _warn(message: str) -> None:
    click.echo(f"Warning: {message}", err=True)


def _load(path: str, validation: Validation) -> list[KubeObject]:
    """The manifests, decoded strictly by default, as kube-apiserver does with
    ``fieldValidation=Strict`` (``kube.strict``): a misspelled field (``requets:``) or kind
    (``Nod``) would otherwise be dropped and the simulation would answer a different question.
    ``--validate`` takes kubectl's values to relax that for manifests written for a newer
    Kubernetes."""
    from kube.objects import InvalidObject, load_objects

    try:
        return load_objects(
            Path(path), ignore_unknown=True, validation=validation, on_warning=_warn
        )
    except InvalidObject as exc:
        raise BadInput(str(exc)) from None


@click.group(context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@common_options(PROG)
def cli() -> None:
    """kube-scheduler's policy, offline: what would be scheduled or preempted, and why."""


@cli.command(epilog=EXIT_CODES)
@click.argument("cluster", type=click.Path(dir_okay=False))
@click.option(
    "--pending",
    "pending_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Extra pending pods (YAML); may be repeated.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: a summary and each decision explained; json: the decisions as JSON.",
)
@click.option(
    "--mode",
    type=click.Choice(["exhaustive", "sampled"]),
    default="exhaustive",
    show_default=True,
    help="exhaustive: every potential node; sampled: kube's candidate count and random offset.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for --mode sampled.")
@click.option(
    "--cross-node-preemption",
    "cross_node",
    is_flag=True,
    default=False,
    help="Beyond kube: also preempt lower-priority pods on other nodes of a topology domain"
    " that block the pod by anti-affinity (off: kube's behaviour).",
)
@click.option(
    "--now",
    default=None,
    help="RFC 3339 time that unset pod start times count as (default: later than any).",
)
@validate_option()
@scheduler_config_option("--config", "--scheduler-config")
def simulate(  # noqa: PLR0917 - click passes options positionally
    cluster: str,
    pending_files: tuple[str, ...],
    output: Literal["table", "json"],
    mode: Literal["exhaustive", "sampled"],
    seed: int,
    cross_node: bool,
    now: str | None,
    validation: Validation,
    scheduler_config: KubeSchedulerConfiguration | None,
) -> None:
    """Schedule the pending pods of CLUSTER (a manifest file), preempting where needed."""
    from kube.objects import Pod
    from kube.times import parse_time
    from scheduler.simulator import SimulationError
    from scheduler.simulator import simulate as run_simulation

    at: float | None = None
    if now is not None:
        try:
            at = parse_time(now)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--now") from None
    objects = _load(cluster, validation)
    pending: list[Pod] = []
    origin: dict[str, str] = {}
    for path in pending_files:
        for obj in _load(path, validation):
            if not isinstance(obj, Pod):
                raise BadInput(f"{path}: only Pods are accepted by --pending")
            pending.append(obj)
            origin[obj.key] = path
    try:
        report = run_simulation(
            objects,
            pending=pending,
            mode=mode,
            seed=seed,
            now=at,
            cross_node=cross_node,
            config=scheduler_config,
        )
    except SimulationError as exc:
        raise BadInput(f"{origin.get(exc.pod, cluster)}: {exc}") from None
    if output == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        _print_table(report)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m scheduler``; returns the exit status."""
    return run(cli, argv, prog_name=PROG)


def _print_table(report: SimulationReport) -> None:
    from rich.console import Console
    from rich.table import Table

    # Piped output has no terminal width; do not squeeze the table into 80 columns then.
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
    count = len(report.decisions)
    console.print(
        f"Cluster: {report.nodes} node{'s' * (report.nodes != 1)},"
        f" {count} pending pod{'s' * (count != 1)}"
    )
    if not report.decisions:
        return
    table = Table(show_edge=False, header_style="bold", box=None, pad_edge=False)
    for column in ("POD", "PRIORITY", "OUTCOME", "NODE", "VICTIMS"):
        table.add_column(column)
    for d in report.decisions:
        prio = f"{d.priority} ({d.priority_class})" if d.priority_class else str(d.priority)
        node = d.node or d.nominated_node or "-"
        victims = ", ".join(v.pod for v in d.victims) or "-"
        table.add_row(d.pod, prio, d.outcome, node, victims)
    console.print(table)
    for d in report.decisions:
        _print_decision(console, d)


def _print_decision(console: Console, d: Decision) -> None:
    console.print()
    console.print(f"[bold]{d.pod}[/bold]: {d.outcome}")
    if d.warning:
        console.print(f"  warning: {d.warning}", markup=False)
    if d.outcome == "scheduled":
        console.print(f"  scheduled on {d.node}", markup=False)
        _print_scores(console, d)
        return
    if d.message:
        console.print(f"  scheduling: {d.message}", markup=False)
    if d.outcome == "preempting":
        console.print(
            f"  preemption: nominated {d.nominated_node}, {len(d.victims)} victim(s),"
            f" {d.pdb_violations} PDB violation(s)",
            markup=False,
        )
        for v in d.victims:
            console.print(f"    evict {v.pod} (priority {v.priority})", markup=False)
        for other in d.nominated_pods_cleared:
            console.print(f"    clear the nomination of {other}", markup=False)
    elif d.preemption_message:
        console.print(f"  {d.preemption_message}", markup=False)
    if d.explanation:
        console.print("  why:", markup=False)
        for line in d.explanation:
            console.print(f"    {line}", markup=False)
    if d.node:
        console.print(f"  then scheduled on {d.node} once the victims are gone", markup=False)


def _print_scores(console: Console, d: Decision) -> None:
    for node, scores in sorted(d.scores.items(), key=lambda kv: -sum(kv[1].values())):
        detail = ", ".join(f"{k} {v}" for k, v in sorted(scores.items()))
        console.print(f"    {node}: {sum(scores.values())} ({detail})", markup=False)
