"""Entry point of `evict` (and `python -m evictor`): the command itself lands with its issue.

Until then it answers ``--help`` and ``--version`` like every command of the project and
refuses everything else with one line and exit 1, instead of pretending to work.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from scheduler.cliutil import CONTEXT_SETTINGS, EXIT_CODES, Failure, common_options, run

PROG = "evict"


@click.command(
    context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True},
    epilog=EXIT_CODES,
)
@common_options(PROG)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def cli(args: tuple[str, ...]) -> None:
    """The eviction client's CLI: drain, cordon, uncordon and evict pods through the
    Eviction API, as kubectl drain does.

    Not available yet in this version: the drain, cordon, uncordon and pod subcommands
    land with their own issue.
    """
    raise Failure(f"{PROG} is not available yet in this version (see '{PROG} --help')")


def main(argv: Sequence[str] | None = None) -> int:
    return run(cli, argv, prog_name=PROG)


if __name__ == "__main__":
    sys.exit(main())
