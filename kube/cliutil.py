"""What every command of the project shares: one click style, one error style, one exit code table.

kubectl's conventions, which users of these tools already know: usage errors and bad input
exit 2 before anything runs, runtime failures exit 1, and neither prints a traceback — one
line on stderr saying what failed and where (``--debug`` adds the traceback for bug reports).
Ctrl-C ends a command quietly with 130, the shell's code for SIGINT. Kept free of heavy
imports: ``--help`` and ``--version`` of every command load click and this module only.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

import click

__all__ = [
    "CONTEXT_SETTINGS",
    "EXIT_CODES",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PACKAGE",
    "VERSION",
    "BadInput",
    "Failure",
    "common_options",
    "parse_feature_gates",
    "run",
    "user_agent",
]

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

PACKAGE: Final = "node-pressure-evictor"
# The distribution's version: pyproject.toml reads it from here (``tool.setuptools.dynamic``),
# so a command can name itself without the ~10 ms package-metadata lookup.
VERSION: Final = "0.1.0"

# Go's names for the machine, as kubectl's user agent spells them (``linux/amd64``)
_GOARCH: Final = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}


def user_agent(prog: str) -> str:
    """``prog/vVERSION (os/arch)``, the shape of kubectl's ``kubectl/v1.31.0 (linux/amd64)``,
    so the API server's audit log names the tool instead of the client library."""
    machine = os.uname().machine if hasattr(os, "uname") else ""
    return f"{prog}/v{VERSION} ({sys.platform}/{_GOARCH.get(machine, machine or 'unknown')})"


EXIT_CODES: Final = (
    "\b\nExit status:\n  0  success\n  1  runtime failure (e.g. server unreachable, port in use)"
    "\n  2  usage error or bad input (flags, files, manifests)"
)

CONTEXT_SETTINGS: Final[dict[str, Any]] = {
    "help_option_names": ["-h", "--help"],
    "max_content_width": 100,
}

F = TypeVar("F", bound=Callable[..., Any])


class BadInput(click.ClickException):
    """Bad flags, files or manifests: exit 2 with one line naming the input."""

    exit_code = EXIT_USAGE


class Failure(click.ClickException):
    """A runtime failure (network, ports, processes): exit 1 with one line."""

    exit_code = EXIT_FAILURE


# click >= 8.2 raises this for a group called without a command; 8.1 prints the help itself.
_NO_ARGS_IS_HELP: type[click.UsageError] | None = getattr(
    click.exceptions, "NoArgsIsHelpError", None
)


def common_options(prog_name: str) -> Callable[[F], F]:
    """``--version`` and ``--debug`` for a command group (or a lone command)."""

    def decorate(f: F) -> F:
        f = click.option(
            "--debug",
            is_flag=True,
            expose_value=False,
            is_eager=True,
            # ``run`` looks for the flag before parsing, so it also covers parse errors.
            help="Show the full traceback of an error (for bug reports).",
        )(f)
        f = click.version_option(
            package_name=PACKAGE,
            prog_name=prog_name,
            message="%(prog)s %(version)s",
            help="Show the version and exit.",
        )(f)
        return f

    return decorate


# strconv.ParseBool's spellings, as kube's flags read booleans.
_GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_feature_gates(values: Iterable[str], known: Mapping[str, bool]) -> dict[str, bool]:
    """``--feature-gates`` as kube's components read it (component-base ``featuregate.Set``):
    comma-separated ``Name=bool`` pairs, repeatable, the last setting of a gate winning; each
    name one of ``known`` (the gates and their defaults). Every gate is returned, defaults
    filled in. ``ValueError`` with kube's message for a pair without a value, a value Go's
    ``strconv.ParseBool`` refuses, or an unknown gate."""
    out = dict(known)
    given: dict[str, bool] = {}
    for value in values:
        for item in value.split(","):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep:
                raise ValueError(f"missing bool value for {name}")
            raw = raw.strip()
            if raw not in _GO_TRUE and raw not in _GO_FALSE:
                raise ValueError(
                    f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}":'
                    " invalid syntax"
                )
            given[name] = raw in _GO_TRUE
    for name, enabled in given.items():  # every pair is read before any name is checked
        if name not in known:
            raise ValueError(f"unrecognized feature gate: {name}")
        out[name] = enabled
    return out


def _say(message: str) -> None:
    click.echo(f"Error: {message}", err=True)


def run(command: click.Command, argv: Sequence[str] | None, *, prog_name: str) -> int:
    """Run a click command with the project's error handling; the exit status is returned."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        result = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        if debug:
            traceback.print_exc()
        click.echo("Interrupted.", err=True)
        return EXIT_INTERRUPTED
    except click.UsageError as exc:
        if _NO_ARGS_IS_HELP is not None and isinstance(exc, _NO_ARGS_IS_HELP):
            # A bare group name: the help is the most useful answer, still a usage error.
            click.echo(exc.format_message(), err=True)
            return EXIT_USAGE
        if debug:
            traceback.print_exc()
        where = exc.ctx.command_path if exc.ctx is not None else prog_name
        _say(f"{exc.format_message()} (see '{where} --help')")
        return EXIT_USAGE
    except click.ClickException as exc:
        if debug:
            traceback.print_exc()
        _say(exc.format_message())
        return exc.exit_code
    except BrokenPipeError:
        # `cmd | head`: the reader left; nothing more to say.
        sys.stderr.close()
        return EXIT_FAILURE
    except Exception as exc:  # a bug: still one line, the traceback on request
        if debug:
            traceback.print_exc()
        _say(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return EXIT_FAILURE
    return result if isinstance(result, int) else EXIT_OK
