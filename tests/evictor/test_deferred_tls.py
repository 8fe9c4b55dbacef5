"""``defer_system_cas``: the system CAs load for the first TLS connection, not at import.

aiohttp is already imported in the test process, so each check runs in a fresh interpreter.
What is compared is the trust a TLS connection gets (``cert_store_stats``), against a context
made the usual way in the same process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_aiohttp_defaults_get_the_system_cas_when_a_tls_connection_needs_them() -> None:
    out = _run(
        """
        import json, ssl
        from evictor.deferred import defer_system_cas
        deferred = defer_system_cas()
        import aiohttp.connector as c

        class Req:  # what the connector reads of a request to an https URL
            def __init__(self, verify): self.ssl = verify
            def is_ssl(self): return True

        before = [c._SSL_CONTEXT_VERIFIED.cert_store_stats(),
                  c._SSL_CONTEXT_UNVERIFIED.cert_store_stats()]
        connector = c.TCPConnector.__new__(c.TCPConnector)
        connector._ssl = True
        verified = connector._get_ssl_context(Req(True))
        unverified = connector._get_ssl_context(Req(False))
        again = connector._get_ssl_context(Req(True))
        print(json.dumps({
            "deferred": deferred,
            "before": before,
            "verified": verified.cert_store_stats(),
            "unverified": unverified.cert_store_stats(),
            "same": verified is c._SSL_CONTEXT_VERIFIED and again is verified,
            "mode": [verified.verify_mode == ssl.CERT_REQUIRED, verified.check_hostname,
                     unverified.verify_mode == ssl.CERT_NONE],
            "usual": ssl.create_default_context().cert_store_stats(),
            "second_call": defer_system_cas(),
        }))
        """
    )
    assert out["deferred"] is True
    assert out["before"] == [{"x509": 0, "crl": 0, "x509_ca": 0}] * 2  # nothing loaded at import
    assert out["verified"] == out["usual"]  # then exactly what a usual context trusts
    assert out["unverified"] == out["usual"]
    assert out["same"] is True
    assert out["mode"] == [True, True, True]
    assert out["second_call"] is False  # aiohttp already imported: nothing to defer


def test_api_client_for_http_defers_for_a_ca_file_loads_now(tmp_path: Path) -> None:
    ca = Path(ssl_default_cafile())
    single = tmp_path / "ca.crt"
    single.write_text(_first_pem(ca.read_text()))
    out = _run(
        f"""
        import asyncio, json, ssl
        from evictor.deferred import (
            defer_client_models, defer_system_cas, load_pending_cas, system_cas_on_first_use,
        )
        defer_client_models()
        defer_system_cas()
        from kubernetes_asyncio.client import ApiClient, Configuration

        def ctx(api):
            return api.rest_client.pool_manager.connector._ssl

        async def main():
            with system_cas_on_first_use():
                plain = ApiClient(configuration=Configuration(host="http://127.0.0.1:1"))
                system = ApiClient(configuration=Configuration(host="https://k:6443"))
            cfg = Configuration(host="https://k:6443")
            cfg.ssl_ca_cert = {str(single)!r}
            with system_cas_on_first_use():
                own_ca = ApiClient(configuration=cfg)
            after = ssl.create_default_context()  # outside the block: loads as usual
            stats = {{"plain": ctx(plain).cert_store_stats(),
                      "own_ca": ctx(own_ca).cert_store_stats(),
                      "after": after.cert_store_stats()}}
            load_pending_cas(ctx(system))
            stats["system_loaded"] = ctx(system).cert_store_stats()
            for api in (plain, system, own_ca):
                await api.close()
            return stats

        print(json.dumps(asyncio.run(main())))
        """
    )
    assert out["plain"]["x509_ca"] == 0  # an http:// server: never loaded unless TLS is used
    assert out["own_ca"]["x509_ca"] == 1  # the kubeconfig's CA, loaded at once, nothing else
    assert out["after"]["x509_ca"] > 1
    assert out["system_loaded"] == out["after"]


def ssl_default_cafile() -> str:
    import ssl

    path = ssl.get_default_verify_paths().cafile
    assert path, "no system CA bundle on this machine"
    return path


def _first_pem(bundle: str) -> str:
    begin = bundle.index("-----BEGIN CERTIFICATE-----")
    end = bundle.index("-----END CERTIFICATE-----", begin) + len("-----END CERTIFICATE-----")
    return bundle[begin:end] + "\n"
