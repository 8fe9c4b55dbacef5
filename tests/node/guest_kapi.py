"""A Kubernetes API client for the guest's shell, stdlib only (runs inside the VM).

The project's own client imports aiohttp and kubernetes_asyncio, 30-45 s under TCG; this is a
plain HTTP request to the guest's kubesim (always-allow, no credentials) that starts in about a
second with `python -I -S`. One request per run, JSON in (stdin) and out (stdout):

    kapi.py SERVER METHOD PATH [--content-type TYPE] [< body.json]
    kapi.py SERVER GET PATH --until EXPR [--timeout SECONDS]

`--until` repeats the GET until the Python expression EXPR is true of the answer `o` (a 404 is
`o = None`; a field EXPR reads that is missing yet makes it false), then prints the answer;
exit 3 if the timeout passes first (the last answer is printed). An API error answer exits 1
with the Status on stdout. For one object (`/api/v1/nodes/NAME`), the wait after the first GET
is a watch from that answer's resourceVersion, so every version of the object is looked at: a
state that lasts a few seconds (a pressure condition with a short transition period) is not
missed between two GETs of a guest slowed by TCG and the pressure itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

WATCH_SECONDS = 20  # the server ends each watch before urlopen's 30 s read timeout


def request(server: str, method: str, path: str, body: bytes | None, ctype: str) -> Any:
    req = urllib.request.Request(server.rstrip("/") + path, data=body, method=method)
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", ctype)
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def one_object(path: str) -> tuple[str, str] | None:
    """(the collection's path, the name) when ``path`` names one object, else None."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    prefix = 2 if parts[:1] == ["api"] else 3 if parts[:1] == ["apis"] else 0
    rest = parts[prefix:]
    if not prefix or len(rest) not in (2, 4) or (len(rest) == 4 and rest[0] != "namespaces"):
        return None
    return "/" + "/".join(parts[:-1]), parts[-1]


def watch_until(server: str, path: str, o: Any, expression: str, deadline: float) -> Any:
    """Watch the object ``path`` names from the version ``o`` until EXPR holds of one of its
    versions (returned) or the deadline passes (None). A watch that ends, or an expired
    resourceVersion, starts again from a fresh GET."""
    target = one_object(path)
    assert target is not None
    collection, name = target
    while time.monotonic() < deadline:
        version = ((o or {}).get("metadata") or {}).get("resourceVersion", "")
        query = urllib.parse.urlencode(
            {
                "watch": "1",
                "fieldSelector": f"metadata.name={name}",
                "resourceVersion": version,
                "timeoutSeconds": str(max(1, min(WATCH_SECONDS, int(deadline - time.monotonic())))),
            }
        )
        req = urllib.request.Request(f"{server.rstrip('/')}{collection}?{query}")
        try:
            with urllib.request.urlopen(req, timeout=30) as stream:
                for line in stream:
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        break
                    o = None if event.get("type") == "DELETED" else event.get("object")
                    if holds(expression, o):
                        return o
        except (OSError, ValueError):
            pass
        try:
            o = request(server, "GET", path, None, "")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                continue
            o = None
        except OSError:
            continue
        if holds(expression, o):
            return o
    return None


def holds(expression: str, o: Any) -> bool:
    """EXPR over the answer; a field it names that the answer lacks yet counts as false."""
    try:
        # `o` a global: a comprehension in EXPR sees it (class-like scoping hides locals)
        return bool(eval(expression, {"o": o}))
    except (KeyError, IndexError, TypeError):
        return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("method")
    parser.add_argument("path")
    parser.add_argument("--content-type", default="application/json")
    parser.add_argument("--until")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    body = None if sys.stdin.isatty() else sys.stdin.buffer.read() or None
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            o = request(args.server, args.method, args.path, body, args.content_type)
            status = 0
        except urllib.error.HTTPError as error:
            o = json.loads(error.read() or b"null")
            status = 1
            if args.until and error.code == 404:
                o, status = None, 0
        if not args.until or (status == 0 and holds(args.until, o)):
            print(json.dumps(o))
            return status
        watchable = status == 0 and args.method == "GET" and one_object(args.path) is not None
        if watchable and time.monotonic() < deadline:
            seen = watch_until(args.server, args.path, o, args.until, deadline)
            if seen is not None:
                print(json.dumps(seen))
                return 0
            continue  # past the deadline: one more GET, printed as the last answer
        if time.monotonic() > deadline:
            print(json.dumps(o))
            return 3
        time.sleep(0.25)


if __name__ == "__main__":
    sys.exit(main())
