"""``evict drain --plan``'s reads: every list of ``evictor.plan.view.LISTS``, cluster-wide and
concurrently, on kubectl's paths (``GET``, paged by ``--chunk-size``), and ``/api/v1``
discovery. No request writes: a plan changes nothing in the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from evictor.api.calls import list_items, send
from evictor.plan.types import ClusterView
from evictor.plan.view import LISTS, view_from_lists

__all__ = ["read_cluster"]


async def _eviction_served(api: Any) -> bool:
    """Whether ``/api/v1`` lists ``pods/eviction`` (kubectl's ``CheckEvictionSupport``)."""
    resp = await send(api, "GET", "/api/v1/")
    if not resp.ok or not isinstance(resp.body, Mapping):
        return True  # the drain's own discovery decides; a plan assumes the Eviction API
    return any(
        isinstance(r, Mapping) and r.get("name") == "pods/eviction" and r.get("group")
        for r in resp.body.get("resources") or []
    )


async def read_cluster(api: Any, *, chunk_size: int = 500) -> ClusterView:
    """List everything a plan needs (only GETs) and type it."""
    names = list(LISTS)
    served = asyncio.ensure_future(_eviction_served(api))
    try:
        results = await asyncio.gather(
            *(list_items(api, LISTS[n], chunk_size=chunk_size) for n in names)
        )
    except BaseException:
        served.cancel()
        await asyncio.gather(served, return_exceptions=True)
        raise
    eviction = await served
    return view_from_lists(dict(zip(names, results, strict=True)), eviction=eviction)
