"""``scheduler.filters.noderesources`` is now ``scheduler.plugins.noderesources.fit``.

Kept for users' code: it hands out every name of the new module's ``__all__``.
"""

from scheduler.plugins.noderesources import fit
from scheduler.plugins.noderesources.fit import *  # noqa: F403

__all__ = list(fit.__all__)
