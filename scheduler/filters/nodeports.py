"""``scheduler.filters.nodeports`` is now ``scheduler.plugins.nodeports``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins import nodeports
from scheduler.plugins.nodeports import *  # noqa: F403

__all__ = list(nodeports.__all__)
