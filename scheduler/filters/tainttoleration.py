"""``scheduler.filters.tainttoleration`` is now ``scheduler.plugins.tainttoleration``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins import tainttoleration
from scheduler.plugins.tainttoleration import *  # noqa: F403

__all__ = list(tainttoleration.__all__)
