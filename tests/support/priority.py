"""PriorityClasses and pods (typed, and as raw manifests) for the priority tests, and
kube-apiserver's words for a bad name."""

from __future__ import annotations

from typing import Any

from kube.apierrors import FieldError
from kube.objects import Pod, PriorityClass
from tests.support.objects import mkpod

DNS_RE = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"

NAME_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or"
    " '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex"
    f" used for validation is '{DNS_RE}')"
)

RESERVED = "priority class names with 'system-' prefix are reserved for system use only. error: "

UNKNOWN_SYSTEM_FOO = (
    f"metadata.name: Forbidden: {RESERVED}system-foo is not a known system priority class"
)


def pc(name: str = "tier1", value: int = 100, **kw: Any) -> PriorityClass:
    return PriorityClass(name=name, value=value, **kw)


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


def pod(name: str = "p", *, ns: str = "namespace", **kw: Any) -> Pod:
    """Upstream's admission tests' pod: ``objects.mkpod`` in namespace "namespace"."""
    return mkpod(name, ns=ns, **kw)


def manifest(name: str | None = "web-0", **spec: Any) -> dict[str, Any]:
    meta = {} if name is None else {"name": name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
