"""What stops a workload, and the exit code each means: a config upstream would refuse (2), a
workload this runner cannot reproduce (its line says what), a workload that ran and did not
complete (1)."""

from __future__ import annotations

__all__ = ["ConfigError", "Unmodelled", "WorkloadFailed"]


class ConfigError(ValueError):
    """The config (or a template it names) is not what upstream would accept: exit 2."""


class Unmodelled(Exception):
    """A workload uses something this runner cannot reproduce; its line says what."""


class WorkloadFailed(RuntimeError):
    """The workload ran but did not complete: pods left unscheduled, a timeout."""
