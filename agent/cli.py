"""Entry point of `eviction-agent` (and `python -m agent`): the command itself lands with its issue.

Until then it answers ``--help`` and ``--version`` like every command of the project and
refuses everything else with one line and exit 1, instead of pretending to work.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from scheduler.cliutil import CONTEXT_SETTINGS, EXIT_CODES, Failure, common_options, run

PROG = "eviction-agent"


@click.command(
    context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True},
    epilog=EXIT_CODES,
)
@common_options(PROG)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def cli(args: tuple[str, ...]) -> None:
    """The node-pressure eviction agent: evicts pods when the node runs short of memory,
    disk or PIDs, as the kubelet's eviction manager does.

    Not available yet in this version: the agent lands with its own issue.
    """
    raise Failure(f"{PROG} is not available yet in this version (see '{PROG} --help')")


def main(argv: Sequence[str] | None = None) -> int:
    return run(cli, argv, prog_name=PROG)


if __name__ == "__main__":
    sys.exit(main())
