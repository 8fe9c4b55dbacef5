"""Reading stored objects: their metadata, their controller, their selectors as kubectl shows.

The store holds objects as the JSON documents clients sent (plain dicts), so every layer reads
them the same few ways; each reading lives here once. Typed views of the kinds the policy core
models are ``kube.objects``'; these helpers stay on the documents, where a malformed field
reads as absent rather than failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.labels import LabelSelector, SelectorError

__all__ = ["controller_ref", "meta_of", "pdb_selects", "selector_string"]


def meta_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` of a stored object; empty (and detached) when it has none."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``."""
    for ref in meta_of(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def selector_string(selector: Any, *, plain_map: bool = False) -> str:
    """A selector as ``labels.Selector.String()`` (requirements sorted by key).

    ``plain_map``: a ``map[string]string`` selector (a ReplicationController's, a node
    selector) rather than a ``metav1.LabelSelector``. An invalid selector prints ``<error>``,
    as ``metav1.FormatLabelSelector`` does.
    """
    if not isinstance(selector, Mapping):
        return ""
    try:
        if plain_map:
            return str(LabelSelector.from_labels({str(k): str(v) for k, v in selector.items()}))
        return str(LabelSelector.from_dict(selector))
    except SelectorError:
        return "<error>"


def pdb_selects(pdb: Mapping[str, Any], pod_labels: Mapping[str, str]) -> bool:
    """policy/v1 matching: ``{}`` selects every pod, an absent or invalid selector none."""
    spec = pdb.get("spec") or {}
    raw = spec.get("selector")
    if raw is None:
        return False
    try:
        selector = LabelSelector.from_dict(raw)
    except SelectorError:
        return False
    return selector.matches(pod_labels)
