"""Which updates a gated pod accepts (``ValidatePodUpdate``, KEP-3838 mutable directives).

While a pod still has scheduling gates, a controller (Kueue, for example) may narrow where it
will run before releasing it; ``pkg/apis/core/validation`` allows exactly that
(``validate_pod_update_while_gated``). Errors are ``kube.apierrors.FieldError`` values, whose
``str`` is kube's ``Error()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from kube.apierrors import FieldError
from kube.labels import Requirement
from kube.objects import NodeAffinity, NodeSelectorTerm, Pod

__all__ = ["FieldError", "validate_pod_update_while_gated"]

_UPDATABLE_POD_SPEC_FIELDS: Final = ",".join(
    (
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously"
        " negative)",
    )
)

_NODE_SELECTOR_TERMS: Final = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
)


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError.forbidden(path, detail)


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError.invalid(path, value, detail)


def _requirement_value(req: Requirement) -> dict[str, object]:
    # Internal core types have no json tags, so Go prints their field names.
    return {"Key": req.key, "Operator": req.operator, "Values": list(req.values) or None}


def _term_value(term: NodeSelectorTerm) -> dict[str, object]:
    return {
        "MatchExpressions": [_requirement_value(r) for r in term.match_expressions] or None,
        "MatchFields": [_requirement_value(r) for r in term.match_fields] or None,
    }


def _only_deleted_scheduling_gates(
    new_gates: Sequence[str], old_gates: Sequence[str]
) -> list[FieldError]:
    """``validateOnlyDeletedSchedulingGates``."""
    added = {name: i for i, name in enumerate(new_gates)}
    for name in old_gates:
        added.pop(name, None)
    return [
        _forbidden(
            f"spec.schedulingGates[{i}].name",
            f"only deletion is allowed, but found new scheduling gate '{name}'",
        )
        for name, i in sorted(added.items(), key=lambda item: item[1])
    ]


def _node_selector_mutation(new: Mapping[str, str], old: Mapping[str, str]) -> list[FieldError]:
    """``validateNodeSelectorMutation``."""
    for key, value in old.items():
        if new.get(key) != value:
            return [
                _invalid(
                    "spec.nodeSelector",
                    dict(new),
                    "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                )
            ]
    return []


def _term_has_only_additions(new: NodeSelectorTerm, old: NodeSelectorTerm) -> bool:
    """``validateNodeSelectorTermHasOnlyAdditions``."""
    if not (old.match_expressions or old.match_fields) and (
        new.match_expressions or new.match_fields
    ):
        return False
    for old_reqs, new_reqs in (
        (old.match_expressions, new.match_expressions),
        (old.match_fields, new.match_fields),
    ):
        n = len(old_reqs)
        if n and (len(new_reqs) < n or tuple(new_reqs[:n]) != tuple(old_reqs)):
            return False
    return True


def _node_affinity_mutation(new: NodeAffinity | None, old: NodeAffinity | None) -> list[FieldError]:
    """``validateNodeAffinityMutation``: required terms may only gain requirements."""
    if old is None or old.required is None:
        return []
    old_terms = old.required.terms
    new_terms: tuple[NodeSelectorTerm, ...] = ()
    if new is not None and new.required is not None:
        new_terms = new.required.terms
    if old_terms and len(old_terms) != len(new_terms):
        return [
            _invalid(
                _NODE_SELECTOR_TERMS,
                [_term_value(t) for t in new_terms] or None,
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            )
        ]
    return [
        _invalid(
            f"{_NODE_SELECTOR_TERMS}[{i}]",
            _term_value(new_terms[i]),
            "only additions are allowed (no mutations or deletions)",
        )
        for i, old_term in enumerate(old_terms)
        if not _term_has_only_additions(new_terms[i], old_term)
    ]


def validate_pod_update_while_gated(old: Pod, new: Pod) -> list[FieldError]:
    """The scheduling-directive rules of ``ValidatePodUpdate`` for an update ``old`` -> ``new``.

    Returns the errors in upstream's order (gates, node selector, node affinity, then the
    catch-all for other placement changes); an empty list means the update is allowed.

    * ``spec.schedulingGates`` may only lose entries, on any pod: each new name is reported as
      Forbidden ``only deletion is allowed, but found new scheduling gate '<name>'`` on
      ``spec.schedulingGates[<index>].name`` (upstream iterates a map, so its order is random;
      here it is index order);
    * on a pod that was gated before the update (``len(old.schedulingGates) > 0``):

      - ``spec.nodeSelector`` may only gain keys: Invalid ``only additions to
        spec.nodeSelector are allowed (no mutations or deletions)``;
      - required node affinity may only be tightened: when the old pod had required terms,
        their number is fixed (``no additions/deletions to non-empty NodeSelectorTerms list
        are allowed``) and each term may only get requirements appended to its
        matchExpressions and matchFields (``only additions are allowed (no mutations or
        deletions)``; an empty term may not gain any); setting it when it was unset (or had no
        terms) is allowed; preferred terms may change freely.

    Everything else about placement stays immutable: changing pod (anti-)affinity, or the node
    selector/affinity of a pod that is not gated, is reported the way the final spec
    comparison of ``ValidatePodUpdate`` does (``spec: Forbidden: pod updates may not change
    fields other than …``). Upstream appends a ``cmp.Diff`` of the two specs to that message;
    it is not reproduced. Other immutable fields are not checked here.
    """
    errs = _only_deleted_scheduling_gates(new.scheduling_gates, old.scheduling_gates)
    old_affinity, new_affinity = old.affinity, new.affinity
    old_na = old_affinity.node_affinity if old_affinity is not None else None
    new_na = new_affinity.node_affinity if new_affinity is not None else None
    selector_changed = dict(new.node_selector) != dict(old.node_selector)
    node_affinity_changed = old_na != new_na
    others_changed = False
    if old.scheduling_gates:
        if selector_changed:
            errs += _node_selector_mutation(new.node_selector, old.node_selector)
        if node_affinity_changed:
            errs += _node_affinity_mutation(new_na, old_na)
    else:
        others_changed = selector_changed or node_affinity_changed
    old_pa = old_affinity.pod_affinity if old_affinity is not None else None
    new_pa = new_affinity.pod_affinity if new_affinity is not None else None
    old_paa = old_affinity.pod_anti_affinity if old_affinity is not None else None
    new_paa = new_affinity.pod_anti_affinity if new_affinity is not None else None
    if old_pa != new_pa or old_paa != new_paa:
        others_changed = True
    if others_changed:
        errs.append(
            _forbidden(
                "spec", f"pod updates may not change fields other than {_UPDATABLE_POD_SPEC_FIELDS}"
            )
        )
    return errs
