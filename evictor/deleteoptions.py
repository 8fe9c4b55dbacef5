"""The one builder of a ``DeleteOptions`` body, for evictions and deletions alike.

An Eviction carries a ``deleteOptions`` (kube-apiserver ``eviction.go`` deletes the pod with it)
and a DELETE carries the same object as its body; two hand-written builders once drifted apart.
Every request this project sends to remove a pod (``evict drain``, ``evict pod``, the node
agent's delete and Eviction-API modes) takes its options from here. Pure: no I/O, cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PodDeleteOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodDeleteOptions:
    """How one pod is to be removed; ``body()`` is the API's ``DeleteOptions``.

    * ``preconditions.uid``: the UID that was listed, so a same-name replacement (a StatefulSet pod
      recreated meanwhile, kubernetes/kubernetes#138229) is refused with a 409 instead of removed;
    * ``gracePeriodSeconds``: only when given and not negative — kubectl's ``--grace-period=-1``
      means "the pod's own ``terminationGracePeriodSeconds``", which is what leaving it out does;
    * ``dryRun: ["All"]`` for a server dry run. kubectl puts it in the body only; the apiserver
      copies it to the query when one side is missing and refuses a mismatch, so a DELETE may also
      carry it as a query parameter (``query()``), which this project does as before.
    """

    uid: str = ""
    grace_period_seconds: int | None = None  # None or negative: the pod's own grace period
    dry_run: bool = False

    @property
    def grace(self) -> int | None:
        g = self.grace_period_seconds
        return g if g is not None and g >= 0 else None

    def body(self) -> dict[str, Any]:
        """The ``DeleteOptions`` object (a DELETE's body, an Eviction's ``deleteOptions``)."""
        opts: dict[str, Any] = {"preconditions": {"uid": self.uid}} if self.uid else {}
        if self.grace is not None:
            opts["gracePeriodSeconds"] = self.grace
        if self.dry_run:
            opts["dryRun"] = ["All"]
        return opts

    def query(self) -> list[tuple[str, Any]]:
        """The same options as a DELETE's query parameters, in the order they have always been
        sent (the generated ``delete_namespaced_pod``'s)."""
        query: list[tuple[str, Any]] = []
        if self.dry_run:
            query.append(("dryRun", "All"))
        if self.grace is not None:
            query.append(("gracePeriodSeconds", self.grace))
        return query

    def eviction(self, api_version: str, namespace: str, name: str) -> dict[str, Any]:
        """An ``Eviction`` of ``namespace/name`` carrying these options; the name and namespace
        must be set (an empty or mismatching name is a 400, kubernetes-client/python#710)."""
        return {
            "apiVersion": api_version,
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": self.body(),
        }
