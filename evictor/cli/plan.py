"""``evict drain --plan`` and ``--check-plan``: read the cluster (GETs only), play the drain
(``evictor.plan``) and print what it says; exit 3 when the drain would not finish.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Final

import click

from evictor.cli.common import Globals, Output, RuntimeFailure, api_client, resolve_nodes

if TYPE_CHECKING:
    from evictor.plan.output import DrainPlan
    from evictor.plan.types import PlanOptions

__all__ = ["EXIT_WILL_NOT_FINISH", "make_plan", "plan_only", "print_plan"]

EXIT_WILL_NOT_FINISH: Final = 3


async def make_plan(
    api: Any,
    options: PlanOptions,
    *,
    nodes: tuple[str, ...],
    selector: str,
    chunk_size: int,
    names: list[str] | None = None,
) -> DrainPlan | None:
    """Read the cluster (GETs only) and play the drain of ``names`` in the order that finishes
    soonest; None: the ``nodes`` or ``selector`` are looked up as a drain does, while the
    cluster is being read. None when no node is selected."""
    from evictor.clusterread import read_cluster
    from evictor.plan.search import best_plan

    reading = asyncio.ensure_future(read_cluster(api, chunk_size=chunk_size))
    try:
        if names is None:
            found = await resolve_nodes(api, nodes, selector, chunk_size)
            names = [str(n["metadata"]["name"]) for n in found]
        if not names:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            return None
        view = await reading
    except BaseException:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        raise
    return best_plan(view, names, options)


def print_plan(plan: DrainPlan, io: Output, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        for line in plan.lines():
            io.out(line)


async def plan_only(
    glob: Globals,
    options: PlanOptions,
    *,
    nodes: tuple[str, ...],
    selector: str,
    chunk_size: int,
    concurrency: int,
    output: str,
) -> int:
    """``--plan``: the prediction, on stdout; 0 when the drain finishes, 3 when it does not."""
    from evictor.api.calls import APIError, TransportError

    io = Output()
    api = await api_client(glob, concurrency)
    async with api:
        try:
            plan = await make_plan(
                api, options, nodes=nodes, selector=selector, chunk_size=chunk_size
            )
            if plan is None:
                io.err("No resources found")
                return 0
        except TransportError as exc:
            raise RuntimeFailure(f"unable to connect to the server: {exc}") from None
        except APIError as exc:
            raise RuntimeFailure(str(exc)) from None
    print_plan(plan, io, output)
    return 0 if plan.finishes else EXIT_WILL_NOT_FINISH
