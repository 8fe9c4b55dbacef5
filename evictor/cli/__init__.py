"""``evict``: kubectl's drain, cordon and uncordon, plus a single-pod eviction, on ``evictor``.

One module per command group: ``drain`` (with ``plan`` for ``--plan`` and ``progress`` for
the live line), ``cordon`` (cordon, uncordon), ``pod``; ``common`` holds kubectl's global
flags and what the commands share. Exit codes: 0 ok, 1 something failed at run time, 2 bad
usage or input (nothing is cordoned or evicted then; kubectl exits 1, the project's CLI rule
wins), 3 the plan says the drain will not finish. Installed also as ``kubectl-evict``, a
kubectl plugin (``kubectl evict drain ...``). Only click is imported at start-up.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import click

from evictor.cli.common import Globals, global_options
from evictor.cli.cordon import cordon, uncordon
from evictor.cli.drain import drain
from evictor.cli.pod import pod_cmd
from evictor.cliflags import GoGroup
from kube.cliutil import CONTEXT_SETTINGS, EXIT_CODES, EXIT_INTERRUPTED, PACKAGE

__all__ = ["main", "run"]

# Collect cycles every 100 000 allocations, not 700: a command allocates mostly acyclic JSON
# (two 500-pod pages are ~10^5 objects), and the default thresholds spent ~40 ms collecting
# before a 1000-pod drain's first eviction, and ~0.15 s in a full collection after it was done.
_GC_THRESHOLD = (100_000, 20, 20)


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
@global_options
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


# Every subcommand's help ends with the exit status table, as the group's does.
for _command in (drain, cordon, uncordon, pod_cmd):
    _command.epilog = _command.epilog or EXIT_CODES
    main.add_command(_command)


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
