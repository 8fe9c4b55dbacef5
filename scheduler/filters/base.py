"""``scheduler.filters.base`` is now ``scheduler.plugins.helper``, its batch interfaces
``scheduler.framework``.

Kept for users' code: it hands out every name of both modules' ``__all__``.
"""

from scheduler import framework
from scheduler.framework import *  # noqa: F403
from scheduler.plugins import helper
from scheduler.plugins.helper import *  # noqa: F403

__all__ = helper.__all__ + framework.__all__
