"""``scheduler.filters.podtopologyspread`` is now the ``scheduler.plugins.podtopologyspread``
folder: ``common``, ``filtering``, ``scoring`` and ``plugin``.

Kept for users' code: it hands out every name of their ``__all__``.
"""

from scheduler.plugins.podtopologyspread import common, filtering, plugin, scoring
from scheduler.plugins.podtopologyspread.common import *  # noqa: F403
from scheduler.plugins.podtopologyspread.filtering import *  # noqa: F403
from scheduler.plugins.podtopologyspread.plugin import *  # noqa: F403
from scheduler.plugins.podtopologyspread.scoring import *  # noqa: F403

__all__ = common.__all__ + filtering.__all__ + scoring.__all__ + plugin.__all__
