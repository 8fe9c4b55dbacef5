"""``scheduler.filters.nodename`` is now ``scheduler.plugins.nodename``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins import nodename
from scheduler.plugins.nodename import *  # noqa: F403

__all__ = list(nodename.__all__)
