"""The ClusterRole aggregation controller: reproduces ``pkg/controller/clusterroleaggregation``.

That is how the bootstrap ``admin``, ``edit`` and ``view`` get their rules, and how a CRD's
``aggregate-to-view: "true"`` role widens ``view``. The aggregation itself is
``kubesim.plugins.authorization.aggregation``'s, which the bootstrap policy also runs once it
is seeded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesim.plugins.authorization.aggregation import aggregate_all

if TYPE_CHECKING:
    from kubesim.cluster import Cluster

__all__ = ["ClusterRoleAggregationController"]


class ClusterRoleAggregationController:
    """Re-aggregates on every ClusterRole change.

    A ClusterRole with an ``aggregationRule`` owns no rules of its own: its ``rules`` are kept equal
    to the union of the rules of every other ClusterRole selected by any of its
    ``clusterRoleSelectors`` (selectors in order, the roles of one selector sorted by name, each
    rule once: a rule already present is not repeated), written to the stored object only when they
    differ (an empty union and no rules are the same). A change to any ClusterRole re-syncs every
    aggregated role until nothing changes (aggregation chains: ``view`` into ``edit`` into
    ``admin``).
    """

    name = "clusterrole-aggregation"

    async def run(self, cluster: Cluster) -> None:
        store = cluster.store
        sub = store.subscribe("clusterroles")
        try:
            aggregate_all(cluster.registry)
            while True:
                await sub.queue.get()
                while not sub.queue.empty():
                    sub.queue.get_nowait()
                aggregate_all(cluster.registry)
        finally:
            store.unsubscribe(sub)
