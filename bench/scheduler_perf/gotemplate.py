"""The subset of Go's ``html/template`` that scheduler_perf's templates use.

Upstream renders every template file (``getSpecFromTextTemplateFile``) with ``{{.Index}}``,
``{{.Count}}``, the op's ``templateParams`` and the arithmetic functions of
``getTemplateFuncs`` (``AddInt``, ``DivideFloat``, ``Mod``…); values print as Go's ``%v``,
HTML-escaped. Any other action (``if``, ``range``, another function) is named and refused
rather than rendered differently.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Final

from .errors import ConfigError

__all__ = ["TEMPLATE_FUNCS", "render_template"]


def _go_float(value: float) -> str:
    """Go's ``%v`` of a float64 (``strconv`` ``'g'``, shortest): the fewest digits that read
    back the same, in exponent form when the exponent is below -4 or at least 6."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    exp = len(digits) + exponent - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"


def _to_float(value: object) -> float:
    if isinstance(value, bool):
        raise TypeError(f"cannot cast {value} to float64")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TypeError(f"cannot cast {value!r} to float64")


def _div(a: object, b: object) -> float:
    d = _to_float(b)
    if d == 0:
        raise TypeError("division by zero")
    return _to_float(a) / d


TEMPLATE_FUNCS: Final[dict[str, Callable[..., object]]] = {
    "AddFloat": lambda *n: sum(_to_float(x) for x in n),
    "AddInt": lambda *n: int(sum(_to_float(x) for x in n)),
    "SubtractFloat": lambda a, b: _to_float(a) - _to_float(b),
    "SubtractInt": lambda a, b: int(_to_float(a) - _to_float(b)),
    "MultiplyFloat": lambda *n: math.prod(_to_float(x) for x in n),
    "MultiplyInt": lambda *n: int(math.prod(_to_float(x) for x in n)),
    "DivideFloat": _div,
    "DivideInt": lambda a, b: int(_div(a, b)),
    "Mod": lambda a, b: int(math.fmod(int(_to_float(a)), int(_to_float(b)))),
}
_ACTION: Final = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_ARG: Final = re.compile(r'\.([A-Za-z_]\w*)|(-?\d+(?:\.\d+)?)|"((?:[^"\\]|\\.)*)"')


def _go_print(value: object) -> str:
    """``%v`` as ``html/template`` prints it in text context (HTML-escaped)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = _go_float(float(value))
    else:
        text = str(value)
    return html.escape(text, quote=True).replace("&#x27;", "&#39;").replace("&quot;", "&#34;")


def render_template(text: str, env: Mapping[str, object], source: str) -> str:
    """Go template text with ``{{.Key}}`` and ``{{Func args…}}`` actions evaluated."""
    if "{{" not in text:
        return text
    out: list[str] = []
    pos = 0
    for m in _ACTION.finditer(text):
        before = text[pos : m.start()]
        out.append(before.rstrip() if m[1] else before)
        out.append(_go_print(_evaluate(m[2].strip(), env, source)))
        pos = m.end()
        if m[3]:
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip())
    out.append(text[pos:])
    return "".join(out)


def _evaluate(action: str, env: Mapping[str, object], source: str) -> object:
    words = action.split(None, 1)
    if not words:
        raise ConfigError(f"{source}: empty template action {{{{}}}}")
    func = TEMPLATE_FUNCS.get(words[0])
    arg_text = words[1] if func is not None and len(words) > 1 else action
    args: list[object] = []
    pos = 0
    while pos < len(arg_text):
        if arg_text[pos].isspace():
            pos += 1
            continue
        m = _ARG.match(arg_text, pos)
        if m is None:
            raise ConfigError(
                f"{source}: template action {{{{{action}}}}} is not supported here (only"
                f" .Field values and the functions {', '.join(TEMPLATE_FUNCS)})"
            )
        if m[1] is not None:
            if m[1] not in env:
                raise ConfigError(f"{source}: template has no value for .{m[1]}")
            args.append(env[m[1]])
        elif m[2] is not None:
            args.append(float(m[2]) if "." in m[2] else int(m[2]))
        else:
            args.append(json.loads(f'"{m[3]}"'))
        pos = m.end()
    if func is None:
        if len(args) != 1 or words[0] in ("if", "range", "with", "define", "template", "block"):
            raise ConfigError(
                f"{source}: template action {{{{{action}}}}} is not supported here (only"
                f" .Field values and the functions {', '.join(TEMPLATE_FUNCS)})"
            )
        return args[0]
    try:
        return func(*args)
    except TypeError as exc:
        raise ConfigError(f"{source}: template action {{{{{action}}}}}: {exc}") from None
