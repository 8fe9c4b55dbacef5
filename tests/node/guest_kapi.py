"""A Kubernetes API client for the guest's shell, stdlib only (runs inside the VM).

The project's own client imports aiohttp and kubernetes_asyncio, 30-45 s under TCG; this is a
plain HTTP request to the guest's kubesim (always-allow, no credentials) that starts in about a
second with `python -I -S`. One request per run, JSON in (stdin) and out (stdout):

    kapi.py SERVER METHOD PATH [--content-type TYPE] [< body.json]
    kapi.py SERVER GET PATH --until EXPR [--timeout SECONDS]

`--until` repeats the GET until the Python expression EXPR is true of the answer `o` (a 404 is
`o = None`), then prints the answer; exit 3 if the timeout passes first (the last answer is
printed). An API error answer exits 1 with the Status on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any


def request(server: str, method: str, path: str, body: bytes | None, ctype: str) -> Any:
    req = urllib.request.Request(server.rstrip("/") + path, data=body, method=method)
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", ctype)
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


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
        if not args.until or (status == 0 and eval(args.until, {}, {"o": o})):
            print(json.dumps(o))
            return status
        if time.monotonic() > deadline:
            print(json.dumps(o))
            return 3
        time.sleep(0.25)


if __name__ == "__main__":
    sys.exit(main())
