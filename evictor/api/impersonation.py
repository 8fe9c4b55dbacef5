"""Acting as someone else (``kubectl --as``): the ``Impersonate-*`` header lines on every request.

client-go's ``ImpersonatingRoundTripper`` (``k8s.io/client-go/transport/round_trippers.go``)
adds them to each request of a client whose ``rest.Config.Impersonate`` names a user
(``header_lines``). What is asked for is read and checked with the kubeconfig
(``kube.kubeconfig.Impersonation``): a uid or groups without a user to act as never gets here,
as clientcmd refuses it.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from typing import Final

from multidict import CIMultiDict

from kube.kubeconfig import Impersonation

__all__ = ["escape_extra_key", "header_lines", "with_lines"]

USER: Final = "Impersonate-User"
UID: Final = "Impersonate-Uid"
GROUP: Final = "Impersonate-Group"
EXTRA_PREFIX: Final = "Impersonate-Extra-"

# RFC 7230 token characters, less "%" (the escape itself must be escaped to decode back)
_KEPT: Final = frozenset((string.ascii_letters + string.digits + "!#$&'*+-.^_`|~").encode())


def escape_extra_key(key: str) -> str:
    """``key`` as it may follow ``Impersonate-Extra-`` (client-go's ``headerKeyEscape``)."""
    return "".join(chr(b) if b in _KEPT else f"%{b:02X}" for b in key.encode())


def header_lines(imp: Impersonation) -> tuple[tuple[str, str], ...]:
    """The header lines of ``imp``, in client-go's order: user, uid, groups, extras.

    * ``Impersonate-User`` (always) and ``Impersonate-Uid`` (when one is asked for);
    * ``Impersonate-Group``, one header line per group: the API server reads every line of
      the name and never splits a value on commas, so ``system:masters,dev`` would be a single
      group;
    * ``Impersonate-Extra-<key>``, one line per value, the key percent-encoded byte by byte
      (UTF-8) wherever it is not an HTTP token character, ``%`` included, because header names
      are tokens and the server percent-decodes (and lower-cases) what follows the prefix
      (``escape_extra_key``).
    """
    lines = [(USER, imp.user)]
    if imp.uid:
        lines.append((UID, imp.uid))
    lines.extend((GROUP, group) for group in imp.groups)
    for key, values in imp.extra:
        name = EXTRA_PREFIX + escape_extra_key(key)
        lines.extend((name, value) for value in values)
    return tuple(lines)


def with_lines(
    headers: Mapping[str, str] | None, lines: Iterable[tuple[str, str]]
) -> CIMultiDict[str]:
    """``headers`` with ``lines`` added, a name repeated once per line.

    kubernetes-asyncio keeps default headers in a plain dict, one value per name, so the lines
    go in through the ``ApiClient``'s public ``request`` method (``RefreshingApiClient`` in
    ``connect``): the request's headers become a ``multidict.CIMultiDict`` with the lines
    added, which the library's REST layer hands to aiohttp as it is, and aiohttp writes one
    line per value."""
    out: CIMultiDict[str] = CIMultiDict(headers or {})
    for name, value in lines:
        out.add(name, value)
    return out
