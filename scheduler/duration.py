"""``scheduler.duration`` is now ``kube.duration``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.duration``.
"""

from kube.duration import (
    MAX_DURATION_SECONDS,
    DurationError,
    DurationOverflowError,
    parse_go_duration,
)

__all__ = [
    "MAX_DURATION_SECONDS",
    "DurationError",
    "DurationOverflowError",
    "parse_go_duration",
]
