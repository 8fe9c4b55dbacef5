"""``scheduler.filters.nodeaffinity`` is now ``scheduler.plugins.nodeaffinity``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins import nodeaffinity
from scheduler.plugins.nodeaffinity import *  # noqa: F403

__all__ = list(nodeaffinity.__all__)
