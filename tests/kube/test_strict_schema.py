"""The committed strict-decoding schema is what the installed kubernetes-asyncio generates.

If this fails after a client upgrade, regenerate: ``.venv/bin/python -m kube.schemagen``.
"""

from __future__ import annotations

import json
import subprocess
import sys

from kube.schemagen import SCHEMA_PATH, generate, render
from kube.strict import known_kinds, model_for
from kubesim.core.scheme import default_scheme


def test_committed_schema_matches_the_installed_client() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(generate())


def test_schema_covers_every_kind_kubesim_serves() -> None:
    kinds = known_kinds()
    for rt in default_scheme().types:
        assert (rt.api_version, rt.kind) in kinds, rt.kind
        for sub in rt.subresources:
            api_version = f"{sub.group}/{sub.version}" if sub.group else rt.api_version
            assert model_for(api_version, sub.kind) is not None, sub.kind


def test_quantity_fields_accept_numbers_and_plain_strings_do_not() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["types"]["V1ResourceRequirements"]["requests"] == "dict(str, quantity)"
    assert schema["types"]["V1NodeStatus"]["allocatable"] == "dict(str, quantity)"
    assert schema["types"]["V1ObjectMeta"]["labels"] == "dict(str, str)"


def test_loading_the_schema_does_not_import_the_client() -> None:
    code = (
        "import sys\n"
        "from kube.strict import check_object\n"
        "check_object({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'n'}})\n"
        "assert 'kubernetes_asyncio' not in sys.modules, 'imported kubernetes_asyncio'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
