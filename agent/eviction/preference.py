"""The ``eviction-preference`` annotation: an extension beyond the kubelet that the operator grants
— ``avoid`` (last within its priority) or ``never`` (skipped like a critical pod), honoured only in
the namespaces the operator lists (``evictionPreferenceNamespaces``), nowhere by default.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from agent import DOMAIN
from kube.objects import Pod

__all__ = [
    "ALL_NAMESPACES",
    "EVICTION_PREFERENCE_ANNOTATION",
    "PREFERENCE_AVOID",
    "PREFERENCE_NEVER",
    "apply_eviction_preference",
    "is_eviction_forbidden",
    "preference_allowed",
    "preference_of",
    "requested_preference",
]

EVICTION_PREFERENCE_ANNOTATION: Final = f"{DOMAIN}/eviction-preference"
PREFERENCE_AVOID: Final = "avoid"
PREFERENCE_NEVER: Final = "never"
ALL_NAMESPACES: Final = "*"


def requested_preference(pod: Pod) -> str | None:
    """What the pod asks for, honoured or not (for explanations)."""
    value = pod.annotations.get(EVICTION_PREFERENCE_ANNOTATION)
    return value if value in (PREFERENCE_AVOID, PREFERENCE_NEVER) else None


def preference_allowed(pod: Pod, allowed: Collection[str]) -> bool:
    """Whether the operator lets pods of this pod's namespace state a preference."""
    return ALL_NAMESPACES in allowed or pod.namespace in allowed


def preference_of(pod: Pod, *, allowed: Collection[str]) -> str | None:
    """The preference in force: None when unset, unknown, or the namespace is not allowed.

    ``node-pressure-evictor.io/eviction-preference`` on a pod: ``avoid`` moves the pod behind every
    pod of its priority without ``avoid`` (``apply_eviction_preference``); ``never`` means it is
    never evicted — it stays in the ranking (so ``rank`` shows where the kubelet would have put it)
    and is skipped when evicting, like a critical pod. Any other value is ignored.

    Why the operator decides where it counts: annotations are written by whoever may update the pod,
    so a pod author could mark a memory hog ``never`` and the node would evict its neighbours
    instead. The kubelet exempts only critical priority, which ResourceQuota can restrict per
    namespace. The annotation is therefore honoured only in the namespaces the operator lists (``*``
    = every namespace) and ignored everywhere else, so by default the ranking and decisions are
    exactly the kubelet's. A plain list of namespace names, not a label selector on namespaces:
    namespace labels are themselves writable by namespace admins in many clusters, and a selector
    would need the agent to watch Namespaces (a new permission and a second cache) for no gain in
    trust.
    """
    if not allowed or not preference_allowed(pod, allowed):
        return None
    return requested_preference(pod)


def is_eviction_forbidden(pod: Pod, *, allowed: Collection[str]) -> bool:
    """``never`` in an allowed namespace: skip this pod like a critical one."""
    return preference_of(pod, allowed=allowed) == PREFERENCE_NEVER


def apply_eviction_preference(ranked: list[Pod], *, allowed: Collection[str]) -> list[Pod]:
    """Reorder a ranked list in place for honoured ``avoid`` pods: each moves behind every pod of
    the same priority that does not carry ``avoid`` ("last within its priority class"); pods of
    other priorities keep their positions, so the kubelet's interleaving of priorities is unchanged.
    """

    def avoids(p: Pod) -> bool:
        return preference_of(p, allowed=allowed) == PREFERENCE_AVOID

    if not allowed or not any(avoids(p) for p in ranked):
        return ranked
    slots: dict[int, list[int]] = {}
    for i, p in enumerate(ranked):
        slots.setdefault(p.priority, []).append(i)
    original = list(ranked)
    for positions in slots.values():
        members = [original[i] for i in positions]
        reordered = [p for p in members if not avoids(p)] + [p for p in members if avoids(p)]
        for i, p in zip(positions, reordered, strict=True):
            ranked[i] = p
    return ranked
