"""The config's values decoded as Go's ``encoding/json`` fills upstream's structs.

A field name matches case-insensitively (the exact spelling first), an unknown one fails the
file with its name, and a value of the wrong type is named with where it was found. Each
function takes ``where`` (the path to the value, for the message) and raises ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigError

__all__ = ["boolean", "fields", "integer", "string", "string_list", "string_map"]


def fields(raw: object, allowed: Sequence[str], where: str) -> dict[str, Any]:
    """``raw`` decoded as ``encoding/json`` fills a struct with ``allowed`` fields: keys match
    case-insensitively (exact first), an unknown one fails with its name."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, not {type(raw).__name__}")
    exact = set(allowed)
    folded = {a.lower(): a for a in allowed}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key if key in exact else folded.get(str(key).lower())
        if name is None:
            raise ConfigError(f'{where}: unknown field "{key}"')
        out[name] = value
    return out


def string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, not {value!r}")
    return value


def integer(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, not {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{where}: expected an integer, not {value!r}")
    return int(value)


def boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, not {value!r}")
    return value


def string_list(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list, not {value!r}")
    return [string(v, f"{where}[{i}]") for i, v in enumerate(value)]


def string_map(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected an object, not {value!r}")
    return {str(k): string(v, f"{where}.{k}") for k, v in value.items()}
