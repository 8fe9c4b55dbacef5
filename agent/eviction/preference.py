"""The operator's ``eviction-preference`` annotation: an explicit extension beyond the kubelet.

``node-pressure-evictor.io/eviction-preference`` on a pod:

- ``avoid``: after the kubelet's ranking, the pod moves behind every pod of the same priority that
  does not carry ``avoid`` ("last within its priority class"); pods of other priorities keep their
  positions, so the kubelet's interleaving of priorities is unchanged.
- ``never``: the pod is never evicted — treated like a critical pod: it stays in the ranking (so
  ``rank`` shows where the kubelet would have put it) and is skipped when evicting.

Any other value is ignored (and reported by ``preference_of`` as None). Without the annotation on
any pod the ranking and the decisions are exactly the kubelet's.
"""

from __future__ import annotations

from typing import Final

from scheduler.objects import Pod

__all__ = [
    "EVICTION_PREFERENCE_ANNOTATION",
    "PREFERENCE_AVOID",
    "PREFERENCE_NEVER",
    "apply_eviction_preference",
    "is_eviction_forbidden",
    "preference_of",
]

EVICTION_PREFERENCE_ANNOTATION: Final = "node-pressure-evictor.io/eviction-preference"
PREFERENCE_AVOID: Final = "avoid"
PREFERENCE_NEVER: Final = "never"


def preference_of(pod: Pod) -> str | None:
    value = pod.annotations.get(EVICTION_PREFERENCE_ANNOTATION)
    return value if value in (PREFERENCE_AVOID, PREFERENCE_NEVER) else None


def is_eviction_forbidden(pod: Pod) -> bool:
    """``never``: skip this pod like a critical one."""
    return preference_of(pod) == PREFERENCE_NEVER


def apply_eviction_preference(ranked: list[Pod]) -> list[Pod]:
    """Reorder a ranked list in place for ``avoid`` pods (see the module docstring)."""
    if not any(preference_of(p) == PREFERENCE_AVOID for p in ranked):
        return ranked
    slots: dict[int, list[int]] = {}
    for i, p in enumerate(ranked):
        slots.setdefault(p.priority, []).append(i)
    original = list(ranked)
    for positions in slots.values():
        members = [original[i] for i in positions]
        reordered = [p for p in members if preference_of(p) != PREFERENCE_AVOID] + [
            p for p in members if preference_of(p) == PREFERENCE_AVOID
        ]
        for i, p in zip(positions, reordered, strict=True):
            ranked[i] = p
    return ranked
