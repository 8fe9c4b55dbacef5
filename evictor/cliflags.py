"""kubectl's flag habits on click: flags anywhere, ``--flag=true|false``, Go's error lines.

kubectl parses its command line with spf13/pflag under cobra, and scripts written for
``kubectl drain`` rely on habits click does not have: global flags after the subcommand
(``persistent``), booleans with a value and shorthands with ``=`` (``go_args``). Only click's
public API is used (``Command.parse_args``, ``Option.get_help_record``,
``Group.command_class``, ``ParamType``), and only click is imported: ``evict --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

import click

__all__ = [
    "BOOL",
    "GoCommand",
    "GoGroup",
    "GoOption",
    "bool_flag",
    "go_args",
    "persistent",
]

F = TypeVar("F", bound=Callable[..., Any])

# strconv.ParseBool: exactly these spellings, case included
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _flag_name(param: click.Parameter | None) -> str:
    if param is None:
        return "flag"
    opts = getattr(param, "opts", None) or [param.name or ""]
    return str(max(opts, key=len))


class _GoBool(click.ParamType):  # type: ignore[type-arg,unused-ignore]
    """A value of a Go bool flag (``strconv.ParseBool``). A bad one is a usage error (exit 2)
    worded as pflag words it: ``invalid argument "maybe" for "--force" flag:
    strconv.ParseBool: parsing "maybe": invalid syntax``."""

    name = "bool"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, bool):
            return value
        text = str(value)
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise click.UsageError(
            f'invalid argument "{text}" for "{_flag_name(param)}" flag: '
            f'strconv.ParseBool: parsing "{text}": invalid syntax',
            ctx,
        )


BOOL = _GoBool()


class GoOption(click.Option):
    """An option parsed as pflag parses it. ``no_opt_default``: the value a bare ``--flag``
    stands for (pflag's ``NoOptDefVal``: ``"true"`` for a bool); without it, an ordinary
    option that takes a value."""

    def __init__(self, *args: Any, no_opt_default: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.no_opt_default = no_opt_default

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None or self.no_opt_default is None:
            return record
        names = ", ".join(sorted(self.opts, key=len))
        if self.type is BOOL:
            return names, record[1]  # shown as the flag it is
        return f"{names}[={self.no_opt_default}]", record[1]


def bool_flag(*decls: str, help: str, **kwargs: Any) -> Callable[[F], F]:
    """A Go bool flag: ``--flag``, ``--flag=true``, ``--flag=false`` (default false)."""
    kwargs.setdefault("default", False)
    return click.option(*decls, cls=GoOption, type=BOOL, no_opt_default="true", help=help, **kwargs)


def persistent(
    *decls: str, store: Callable[[click.Context, str, Any], None], **kwargs: Any
) -> Callable[[F], F]:
    """A flag every command takes (cobra's persistent flag): declare it on the group and on each
    command; a value given at either place is handed to ``store(ctx, name, value)`` — the
    later one last — and never to the command function.

    cobra's persistent flags (``--kubeconfig``, ``--context``, ``-n``, ``--request-timeout``,
    ``-v``) are accepted anywhere: ``kubectl drain NODE --kubeconfig FILE``; storing every
    occurrence on the shared context object makes the last one win, as with pflag."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None and param.name is not None:
            store(ctx, param.name, value)

    kwargs.setdefault("cls", GoOption)
    return click.option(*decls, default=None, expose_value=False, callback=callback, **kwargs)


def go_args(params: Iterable[click.Parameter], args: list[str], *, interspersed: bool) -> list[str]:
    """``args`` rewritten so that click reads them as pflag would.

    A Go bool flag is ``--force``, ``--force=true`` or ``--force=false`` (any spelling
    ``strconv.ParseBool`` takes), but never consumes the next argument: ``--force false`` is
    ``--force`` and a positional ``false``. click's flags refuse a value and its
    optional-value options eat the next argument, so neither fits: a bare flag with pflag's
    "no option default" (a ``GoOption`` with ``no_opt_default``: bools, ``--dry-run``) is
    rewritten into ``--force=true``, so the value always comes after ``=``. pflag also reads
    ``-v=6`` and ``-n=prod`` as ``-v 6`` and ``-n prod`` where click would read the value
    ``=6``; the same pass splits them.

    Values are never rewritten: the argument after an option that takes one is passed as it is
    (``--pod-selector --force`` keeps ``--force`` as the selector, as pflag does). Without
    ``interspersed`` (a group), the first positional argument — the subcommand — and everything
    after it are left to the subcommand's own pass.
    """
    options: dict[str, click.Option] = {}
    for p in params:
        if isinstance(p, click.Option):
            for opt in (*p.opts, *p.secondary_opts):
                options[opt] = p
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out.append(arg)
            out.extend(args[i:])
            break
        if not arg.startswith("-") or arg == "-":
            out.append(arg)
            if not interspersed:
                out.extend(args[i:])
                break
            continue
        name, eq, value = arg.partition("=")
        option = options.get(name)
        if option is None or option.is_flag or option.count:
            out.append(arg)  # click's own flags, clusters (-ojson), unknown: click decides
            continue
        no_opt = option.no_opt_default if isinstance(option, GoOption) else None
        if eq:
            if name.startswith("--"):
                out.append(arg)
            else:
                out.extend((name, value))  # -v=6 is -v 6
        elif no_opt is not None:
            out.append(f"{name}={no_opt}")
        else:
            out.append(arg)
            if i < len(args):
                out.append(args[i])  # its value, whatever it looks like
                i += 1
    return out


class GoCommand(click.Command):
    """A command whose options are parsed as pflag parses them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, go_args(self.get_params(ctx), args, interspersed=True))


class GoGroup(click.Group):
    """A group whose own options are parsed as pflag parses them, and whose commands are
    ``GoCommand``s."""

    command_class = GoCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, go_args(self.get_params(ctx), args, interspersed=False))
