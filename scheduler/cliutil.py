"""``scheduler.cliutil`` is now ``kube.cliutil``.

The Kubernetes basics every package uses moved to the ``kube`` package (issue 21); this module
keeps the old name working for users' code and the names API.md gives. New code imports
``kube.cliutil``.
"""

from kube.cliutil import (
    CONTEXT_SETTINGS,
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PACKAGE,
    VERSION,
    BadInput,
    Failure,
    common_options,
    run,
    user_agent,
)

__all__ = [
    "CONTEXT_SETTINGS",
    "EXIT_CODES",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PACKAGE",
    "VERSION",
    "BadInput",
    "Failure",
    "common_options",
    "run",
    "user_agent",
]
