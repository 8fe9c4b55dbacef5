"""ClusterRole aggregation: the rules an aggregated ClusterRole holds, written to the store.

As ``pkg/controller/clusterroleaggregation`` computes them: the union of the rules of every
other ClusterRole selected by any of the role's ``clusterRoleSelectors`` — selectors in order,
the roles of one selector sorted by name, each rule once — written only when it differs from
the stored rules. ``aggregate_all`` repeats until nothing changes (``view`` into ``edit`` into
``admin``). The bootstrap policy runs it once seeded; the ClusterRole aggregation controller
(``kubesim.controllers.clusterroleaggregation``) on every ClusterRole change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube.labels import LabelSelector, SelectorError
from kubesim.core.attributes import in_process
from kubesim.core.store import clone
from kubesim.registry.generic import GenericStore

__all__ = ["aggregate_all", "aggregated_rules"]

_MAX_ROUNDS: Final = 32


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def aggregated_rules(
    role: Mapping[str, Any], roles: Mapping[str, Mapping[str, Any]]
) -> list[Any] | None:
    """The rules ``role`` should hold, or None when it has no aggregation rule."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    name = (role.get("metadata") or {}).get("name")
    out: list[Any] = []
    for raw in rule.get("clusterRoleSelectors") or ():
        try:
            selector = LabelSelector.from_dict(raw)
        except SelectorError:
            continue
        for other_name in sorted(roles):
            other = roles[other_name]
            if other_name == name or not selector.matches(_labels(other)):
                continue
            for r in other.get("rules") or ():
                if r not in out:
                    out.append(clone(r))
    return out


def aggregate_all(registry: GenericStore) -> int:
    """Bring every aggregated ClusterRole up to date; the number of roles written."""
    rt = registry.scheme.lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
    assert rt is not None
    written = 0
    for _ in range(_MAX_ROUNDS):
        roles = {
            str((o.get("metadata") or {}).get("name", "")): o
            for o in registry.store.items(rt.storage_name)
        }
        changed = False
        for name, role in roles.items():
            want = aggregated_rules(role, roles)
            if want is None or want == (role.get("rules") or []):
                continue
            new = clone(role)
            new["rules"] = want
            with in_process():
                registry.update(rt, "", name, registry.to_wire(rt, new))
            written += 1
            changed = True
            break  # the roles changed: read them again
        if not changed:
            return written
    return written
