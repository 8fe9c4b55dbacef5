"""``evict --as``: kubectl's impersonation, against kubesim's ``WithImpersonation`` and RBAC.

``ops`` may only impersonate (``drainer`` or ``auditor``, the ``node-operators`` and ``auditors``
groups, uid ``u-1``, extra ``example.com/scopes``); the drain role is bound to the group
``node-operators``. So a drain succeeds only when the API server sees the impersonated identity
with ``node-operators`` as a group of its own — one comma-joined header value would be one
unknown group, and a 403. The kubeconfig's ``as`` fields work alone and under the flags; a user
without the ``impersonate`` verb gets kube's 403; groups or a uid without ``--as`` are refused
before any request, as clientcmd refuses them.
"""

from __future__ import annotations

import urllib.parse

from hypothesis import given
from hypothesis import strategies as st

from evictor.api.impersonation import escape_extra_key, header_lines, with_lines
from kube.kubeconfig import Impersonation

EXTRA_KEY = "example.com/scopes"  # "/" is no header token character: sent as %2F


# --- the header lines (pure) -------------------------------------------------------------------


@given(st.text())
def test_an_extra_key_is_escaped_into_a_header_token_that_decodes_back(key: str) -> None:
    escaped = escape_extra_key(key)
    token = set("!#$&'*+-.^_`|~%0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    assert set(escaped) <= token
    assert urllib.parse.unquote(escaped, errors="strict") == key
    assert ("%" in key) <= ("%25" in escaped)


def test_one_line_per_group_and_per_extra_value_in_client_gos_order() -> None:
    imp = Impersonation(
        "system:serviceaccount:ops:drainer",
        uid="u-1",
        groups=("a,b", "c"),
        extra=((EXTRA_KEY, ("x", "y")), ("Reason%", ("z",))),
    )
    assert header_lines(imp) == (
        ("Impersonate-User", "system:serviceaccount:ops:drainer"),
        ("Impersonate-Uid", "u-1"),
        ("Impersonate-Group", "a,b"),
        ("Impersonate-Group", "c"),
        ("Impersonate-Extra-example.com%2Fscopes", "x"),
        ("Impersonate-Extra-example.com%2Fscopes", "y"),
        ("Impersonate-Extra-Reason%25", "z"),
    )
    assert header_lines(Impersonation("bob")) == (("Impersonate-User", "bob"),)
    headers = with_lines({"Accept": "application/json"}, header_lines(imp))
    assert headers.getall("impersonate-group") == ["a,b", "c"]
    assert headers["Accept"] == "application/json"
