"""``evict pod``: one pod evicted (or deleted) as a drain evicts it, and waited for."""

from __future__ import annotations

import json
import sys

import click

from evictor.cli.common import (
    DURATION,
    Globals,
    Output,
    RuntimeFailure,
    api_client,
    dry_run_option,
    fail,
    global_options,
    parse_dry_run,
    pod_report,
    run_command,
)
from evictor.cliflags import GoCommand, bool_flag

__all__ = ["pod_cmd"]


@click.command("pod", cls=GoCommand)
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
@dry_run_option
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
@global_options
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
    mode = parse_dry_run(dry_run)
    if timeout < 0:
        raise click.UsageError("--timeout must not be negative")
    sys.exit(
        run_command(
            glob, _evict_pod(glob, name, grace_period, timeout, mode, disable_eviction, output)
        )
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
    api = await api_client(glob)
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
                fail(f'pods "{name}" not found')
            from kube.objects import InvalidObject, Pod

            try:
                pod = Pod.from_dict(raw)
            except InvalidObject as exc:
                fail(str(exc))
            errs = await helper.delete_or_evict_pods([pod])
        except TransportError as exc:
            raise RuntimeFailure(f"unable to connect to the server: {exc}") from None
        finally:
            await evictor.close()
        if output == "json":
            rep = [pod_report(r, evictor) for r in helper.reports]
            click.echo(json.dumps(rep[0] if rep else {}, indent=2))
        for e in errs:
            io.err(f"error: {e}")
        return 1 if errs else 0
