"""``scheduler.filters.nodeunschedulable`` is now ``scheduler.plugins.nodeunschedulable``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins import nodeunschedulable
from scheduler.plugins.nodeunschedulable import *  # noqa: F403

__all__ = list(nodeunschedulable.__all__)
