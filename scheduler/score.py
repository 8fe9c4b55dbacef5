"""``scheduler.score`` was the default profile's Score plugins and the run of them: each
plugin's Score is now in its module under ``scheduler.plugins``, the run
(``prioritize_nodes``, ``ScorePlugin``, ``NodeScores``) in ``scheduler.framework``, the registry
and the default profile in ``scheduler.plugins.registry``.

Kept for users' code: it hands out every name of those modules' ``__all__``.
"""

from scheduler import framework
from scheduler.framework import *  # noqa: F403
from scheduler.plugins import helper, imagelocality, registry, tainttoleration
from scheduler.plugins.helper import *  # noqa: F403
from scheduler.plugins.imagelocality import *  # noqa: F403
from scheduler.plugins.interpodaffinity import scoring
from scheduler.plugins.interpodaffinity.scoring import *  # noqa: F403
from scheduler.plugins.noderesources import (
    balanced_allocation,
    least_allocated,
    resource_allocation,
)
from scheduler.plugins.noderesources.balanced_allocation import *  # noqa: F403
from scheduler.plugins.noderesources.least_allocated import *  # noqa: F403
from scheduler.plugins.noderesources.resource_allocation import *  # noqa: F403
from scheduler.plugins.registry import *  # noqa: F403
from scheduler.plugins.tainttoleration import *  # noqa: F403

__all__ = (
    registry.__all__
    + framework.__all__
    + helper.__all__
    + tainttoleration.__all__
    + least_allocated.__all__
    + balanced_allocation.__all__
    + resource_allocation.__all__
    + scoring.__all__
    + imagelocality.__all__
)
