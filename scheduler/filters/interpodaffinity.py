"""``scheduler.filters.interpodaffinity`` is now ``scheduler.plugins.interpodaffinity.filtering``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins.interpodaffinity import filtering
from scheduler.plugins.interpodaffinity.filtering import *  # noqa: F403

__all__ = list(filtering.__all__)
