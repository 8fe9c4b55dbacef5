"""Reading stored objects: their metadata, their controller, their selectors as kubectl shows.

The store holds objects as the JSON documents clients sent (plain dicts), so every layer reads
them the same few ways; each reading lives here once. Typed views of the kinds the policy core
models are ``kube.objects``'; these helpers stay on the documents, where a malformed field
reads as absent rather than failing. The metadata and the controller are read as every package
reads them (``kube.documents``, re-exported here for kubesim's layers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.documents import controller_ref, meta_of
from kube.labels import LabelSelector, SelectorError

__all__ = ["controller_ref", "meta_of", "pdb_selects", "selector_string"]


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
