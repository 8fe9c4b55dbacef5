"""``scheduler.filters`` was the Filter plugins and the default profile's Filter chain: the
plugins are now one module or folder each under ``scheduler.plugins``, the registry and the
default profile ``scheduler.plugins.registry``.

Kept for users' code: it hands out every name of the registry's ``__all__`` (each plugin
class, ``FILTER_REGISTRY``, ``default_filter_plugins``, ``default_framework``), of the
framework's (``BatchFilterPlugin``, ``PreFilterResultPlugin``) and of NodeResourcesFit's
Filter module (``fits_request``); its old modules are kept the same way.
"""

from scheduler import framework
from scheduler.framework import *  # noqa: F403
from scheduler.plugins import registry
from scheduler.plugins.noderesources import fit
from scheduler.plugins.noderesources.fit import *  # noqa: F403
from scheduler.plugins.registry import *  # noqa: F403

__all__ = registry.__all__ + framework.__all__ + fit.__all__
