"""Object names: the rule every name must follow to sit in a URL, and generated names.

``path.ValidatePathSegmentName`` is the least any name must satisfy (RBAC objects and events
need nothing more, so ``system:basic-user`` is a fine Role name); the request filters use it
too, for the name a field selector narrows a list to. A ``generateName`` gets five characters
from utilrand's alphabet (no vowels, no look-alike digits), as ``names.SimpleNameGenerator``;
the Deployment controller's pod-template-hash is spelled in it (``rand.SafeEncodeString``).
Stricter rules (DNS-1123 labels and subdomains) are ``kube.labels``'.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from typing import Final

__all__ = [
    "NAME_CHARS",
    "digest",
    "generate_name",
    "new_uid",
    "path_segment_name_errors",
    "safe_encode",
]

NAME_CHARS: Final = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphanums
GENERATED_SUFFIX_LENGTH: Final = 5


def path_segment_name_errors(name: str) -> list[str]:
    """``path.ValidatePathSegmentName``: what any object name must be to sit in a URL."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def digest(*parts: str) -> str:
    """A stable hex ID made of ``parts``: the container, image, machine and boot IDs kubesim's
    kubelets report are the same for the same pod, image and node on every run."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped into ``NAME_CHARS``."""
    return "".join(NAME_CHARS[ord(c) % len(NAME_CHARS)] for c in text)


def generate_name(base: str, rng: random.Random) -> str:
    """``SimpleNameGenerator.GenerateName``: ``base`` plus five random characters."""
    return base + "".join(rng.choice(NAME_CHARS) for _ in range(GENERATED_SUFFIX_LENGTH))


# Random bytes for UIDs, read from the system's CSPRNG a page at a time: one getrandom call per
# 256 objects instead of one per object (a busy server creates thousands a second).
_UID_POOL_BYTES: Final = 16 * 256
_uid_pool = b""
_uid_at = 0
_uid_lock = threading.Lock()  # two threads never take the same bytes


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID in its text form, as ``uuid.New()`` gives
    the apiserver's objects: the system's CSPRNG, never a seeded generator."""
    global _uid_pool, _uid_at  # noqa: PLW0603 - the pool is this module's own state
    with _uid_lock:
        if _uid_at + 16 > len(_uid_pool):
            _uid_pool, _uid_at = os.urandom(_UID_POOL_BYTES), 0
        h = _uid_pool[_uid_at : _uid_at + 16].hex()
        _uid_at += 16
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"
