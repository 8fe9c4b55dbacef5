"""Reading API objects as the JSON documents they are: their metadata and their controller.

Stores, informer caches and lists hold objects as plain dicts; the typed views of the kinds the
policy core models are ``kube.objects``'. These helpers stay on the documents, where a
malformed field reads as absent rather than failing, so a caller that walks every kind (the
drain plan's reads in evictor, kubesim's registry and controllers) needs no decoding first.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["controller_ref", "meta_of"]


def meta_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` of an object; empty (and detached) when it has none."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``."""
    for ref in meta_of(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None
