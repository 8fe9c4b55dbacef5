"""Whether a host is the machine itself, as Go's networking decides it.

Two rules of the project turn on it: a client never sends an API request for ``localhost`` or a
loopback address through a proxy (Go's ``http.ProxyFromEnvironment``, which kubectl and the
API room follow), and kubesim refuses to serve credentials in clear text to anything but
loopback. ``localhost`` by name, and any address in 127.0.0.0/8 or ``::1``
(``net.IP.IsLoopback``); other names are not looked up.
"""

from __future__ import annotations

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1); brackets around IPv6 allowed."""
    if host == "localhost":
        return True
    import ipaddress  # only when asked: commands start without it

    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False
