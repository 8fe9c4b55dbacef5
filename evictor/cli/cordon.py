"""``evict cordon`` and ``evict uncordon``: kubectl's, setting ``spec.unschedulable`` on the
named or selected nodes (``k8s.io/kubectl/pkg/cmd/drain``, ``pkg/drain/cordon.go``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from evictor.cli.common import (
    Globals,
    api_client,
    check_selector,
    dry_run_option,
    dry_run_suffix,
    global_options,
    node_selector_option,
    parse_dry_run,
    resolve_nodes,
    run_command,
)
from evictor.cliflags import GoCommand

__all__ = ["cordon", "uncordon"]


def _cordon_command(desired: bool) -> Callable[..., None]:
    word = "cordon" if desired else "uncordon"

    @click.argument("nodes", nargs=-1)
    @node_selector_option
    @dry_run_option
    @global_options
    @click.pass_obj
    def command(glob: Globals, nodes: tuple[str, ...], selector: str, dry_run: str) -> None:
        if nodes and selector:
            raise click.UsageError("cannot specify both a node name and a --selector option")
        if not nodes and not selector:
            raise click.UsageError(f"USAGE: {word} NODE [flags]")
        if selector:
            check_selector("--selector", selector)
        mode = parse_dry_run(dry_run)
        sys.exit(run_command(glob, _cordon(glob, nodes, selector, desired=desired, dry_run=mode)))

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

    api = await api_client(glob)
    async with api:
        helper = DrainHelper(Evictor(api), dry_run=dry_run)
        found = await resolve_nodes(api, nodes, selector, 500)
        failed = False
        for node in found:
            name = node["metadata"]["name"]
            try:
                what = await helper.cordon(node, desired)
                click.echo(f"node/{name} {what}{dry_run_suffix(dry_run)}")
            except TransportError as exc:
                click.echo(f"error: {exc}", err=True)
                failed = True
        if not found:
            click.echo("No resources found", err=True)
        return 1 if failed else 0


cordon = click.command("cordon", cls=GoCommand)(_cordon_command(True))
uncordon = click.command("uncordon", cls=GoCommand)(_cordon_command(False))
