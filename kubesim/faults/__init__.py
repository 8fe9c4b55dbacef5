"""Fault injection: the typed fault file (``file``) and the injector acting on it while serving
(``injection``)."""

from kubesim.faults.file import (
    CallRange,
    Fault,
    FaultError,
    FaultSet,
    PodFault,
    TimelineStep,
    load_faults,
    parse_faults,
)

__all__ = [
    "CallRange",
    "Fault",
    "FaultError",
    "FaultSet",
    "PodFault",
    "TimelineStep",
    "load_faults",
    "parse_faults",
]
