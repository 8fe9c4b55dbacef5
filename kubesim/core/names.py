"""Object names: the rule every name must follow to sit in a URL, and generated names.

``path.ValidatePathSegmentName`` is the least any name must satisfy (RBAC objects and events
need nothing more, so ``system:basic-user`` is a fine Role name); the request filters use it
too, for the name a field selector narrows a list to. A ``generateName`` gets five characters
from utilrand's alphabet (no vowels, no look-alike digits), as ``names.SimpleNameGenerator``.
Stricter rules (DNS-1123 labels and subdomains) are ``kube.labels``'.
"""

from __future__ import annotations

import random
from typing import Final

__all__ = ["NAME_CHARS", "generate_name", "path_segment_name_errors"]

NAME_CHARS: Final = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphanums
GENERATED_SUFFIX_LENGTH: Final = 5


def path_segment_name_errors(name: str) -> list[str]:
    """``path.ValidatePathSegmentName``: what any object name must be to sit in a URL."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def generate_name(base: str, rng: random.Random) -> str:
    """``SimpleNameGenerator.GenerateName``: ``base`` plus five random characters."""
    return base + "".join(rng.choice(NAME_CHARS) for _ in range(GENERATED_SUFFIX_LENGTH))
