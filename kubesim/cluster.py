"""What an actor sees of the cluster: the ``Cluster`` protocol, and the living cluster's timing.

The actors (``kubesim.controllers``, ``kubesim.node``, ``kubesim.scheduling``,
``kubesim.faults``) are kubesim's kube-controller-manager, kubelets and kube-scheduler.
``Simulator`` is one ``Cluster``; an actor never sees the rest of it (the HTTP server, the
authenticators, the other actors), so an actor can be driven by anything that provides these.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kubesim.core.scheme import Scheme
    from kubesim.core.store import Store
    from kubesim.node.runtime import ProcessRuntime
    from kubesim.plugins.binding import BindingStorage
    from kubesim.registry.generic import GenericStore

__all__ = [
    "READY_AFTER_ANNOTATION",
    "RUN_FOR_ANNOTATION",
    "Cluster",
    "ControllerSettings",
    "annotation_seconds",
]

log = logging.getLogger("kubesim")

READY_AFTER_ANNOTATION: Final = "kubesim.io/ready-after"
RUN_FOR_ANNOTATION: Final = "kubesim.io/run-for"


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Timing of the living cluster, in seconds before ``time_scale``.

    ``reaction_delay``: how long a controller waits after a change before syncing;
    ``ready_after``: from a pod's start on its node to Ready (the annotation
    ``kubesim.io/ready-after`` on a pod or pod template overrides it); ``job_duration``: how
    long a Job's pod runs before it Succeeds (``kubesim.io/run-for`` overrides it).
    """

    reaction_delay: float = 0.0
    ready_after: float = 0.0
    job_duration: float = 5.0

    def __post_init__(self) -> None:
        for name in ("reaction_delay", "ready_after", "job_duration"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name}: must be a number of seconds >= 0, not {value!r}")


def annotation_seconds(obj: Mapping[str, Any], key: str) -> float | None:
    """A non-negative number of seconds from an annotation; None when absent or malformed."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    if raw is None:
        return None
    try:
        value = float(str(raw))
    except ValueError:
        log.warning("kubesim: annotation %s=%r is not a number of seconds; ignored", key, raw)
        return None
    if not 0 <= value < float("inf"):
        log.warning("kubesim: annotation %s=%r must be >= 0; ignored", key, raw)
        return None
    return value


class Cluster(Protocol):
    """The cluster as the actors use it (read-only members: any object with them will do).

    In a cluster the actors see the control plane only through the API; here they get the object
    store and its watch (what their informers would cache), the generic store they write through in
    process (what their clients would call), the scheme, and the few things each really uses
    besides: the time scale and ``ControllerSettings``, the node runtimes of the process nodes, the
    binding storage the scheduler binds through, the registry of ``/metrics`` and the version a
    kubelet reports.
    """

    @property
    def store(self) -> Store:
        """The objects and their watch: what the actors' informers would cache."""

    @property
    def registry(self) -> GenericStore:
        """The generic store the actors write through, in process, as API clients."""

    @property
    def scheme(self) -> Scheme:
        """The served types."""

    @property
    def time_scale(self) -> float:
        """Every delay of the living cluster is multiplied by it."""

    @property
    def settings(self) -> ControllerSettings:
        """The living cluster's timing."""

    @property
    def runtimes(self) -> Mapping[str, ProcessRuntime]:
        """The process nodes' runtimes, by node name (the other nodes are simulated)."""

    @property
    def binding(self) -> BindingStorage:
        """``pods/binding``, which the scheduler binds through."""

    @property
    def metrics(self) -> CollectorRegistry:
        """The registry ``/metrics`` serves (the scheduler loop's metrics)."""

    @property
    def version_minor(self) -> str:
        """The minor version the server reports, which the kubelets report too."""

    @property
    def priority_admission(self) -> bool:
        """Whether the API server resolves a pod's priority class at creation (the Priority
        admission plugin is on): with it off, a pod keeps the priority it was sent, or none."""
