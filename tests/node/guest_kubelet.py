"""A kubelet's `/stats/summary` endpoint for the guest, stdlib only (runs inside the VM).

The DaemonSet as installed asks the kubelet on its node for per-pod disk figures
(`--kubelet-summary-url=https://[$(NODE_IP)]:10250/stats/summary`) with the pod's
ServiceAccount token, verifying the kubelet's serving certificate against the ServiceAccount
CA. kubesim has no kubelet port, so this serves one, as the kubelet does: HTTPS with the given
certificate, 401 without the expected bearer token, the summary JSON file (re-read on every
request) otherwise. Whether the token may read `nodes/stats` is the API server's question,
proven on the host (tests/e2e/test_permissions.py); here any holder of the token is served.

    kubelet.py --port 10250 --cert tls.crt --key tls.key --token-file token --summary s.json
"""

from __future__ import annotations

import argparse
import hmac
import http.server
import ssl
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=10250)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--summary", required=True)
    args = parser.parse_args()
    token = Path(args.token_file).read_text().strip()
    summary = Path(args.summary)

    class Kubelet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/stats/summary":
                self._answer(404, b"404 page not found\n", "text/plain")
                return
            sent = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(sent, token):
                self._answer(401, b"Unauthorized\n", "text/plain")
                return
            self._answer(200, summary.read_bytes(), "application/json")

        def _answer(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Kubelet)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
