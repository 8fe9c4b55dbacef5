"""Filter plugins and the default profile.

One plugin per module, one job per plugin, as in kube-scheduler. ``default_framework()`` is
the Filter chain used by ``find_feasible_nodes``, ``schedule_one`` and preemption; the order is
the default profile's order, which decides which reason a node reports first.
"""

from __future__ import annotations

from scheduler.filters.noderesources import NodeResourcesFit, fits_request
from scheduler.framework import FilterPlugin, Framework

__all__ = ["NodeResourcesFit", "default_filter_plugins", "default_framework", "fits_request"]


def default_filter_plugins() -> list[FilterPlugin]:
    return [NodeResourcesFit()]


def default_framework() -> Framework:
    return Framework(default_filter_plugins())
