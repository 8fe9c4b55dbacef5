"""``evictor.api.deferred`` is the one module that relies on its dependencies' internals (its
``defer_client_models`` and ``defer_system_cas`` say what start-up each saves). When an upgrade
of aiohttp or kubernetes-asyncio moves what it relies on, this fails — loudly, instead of the
saving silently disappearing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _fresh(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_what_the_workaround_relies_on_is_still_there() -> None:
    out = _fresh(
        """
        import json, sys
        from evictor.api.deferred import (
            defer_client_models, defer_system_cas, dependency_problems)
        models = defer_client_models()
        cas = defer_system_cas()
        from kubernetes_asyncio.client.api_client import ApiClient
        from kubernetes_asyncio.config import kube_config
        print(json.dumps({
            "deferred": [models, cas],
            "problems": dependency_problems(),
            "models_loaded": "kubernetes_asyncio.client.models.v1_pod" in sys.modules,
            "urllib3_loaded": hasattr(sys.modules["urllib3"], "PoolManager")
                and "urllib3.poolmanager" in sys.modules,
        }))
        """
    )
    assert out["problems"] == [], "a dependency upgrade broke evictor/api/deferred.py"
    assert out["deferred"] == [True, True]
    assert out["models_loaded"] is False  # the ~770 models stay unimported


def test_the_models_still_load_when_asked_for() -> None:
    out = _fresh(
        """
        import json
        from evictor.api.deferred import defer_client_models
        defer_client_models()
        from kubernetes_asyncio import client
        print(json.dumps({"pod": client.V1Pod(metadata=client.V1ObjectMeta(name="x"))
                          .metadata.name}))
        """
    )
    assert out == {"pod": "x"}


def test_no_other_module_touches_a_private_name_of_a_dependency() -> None:
    """The repository's before-stop check, over the packages."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[3]
    # the hook's expression, assembled so that this file does not match it itself
    names = [".{}".format("_get_ssl_context"), ".{}".format("_trust_env")]
    pattern = re.compile(
        "|".join([*map(re.escape, names), r"setattr\({}".format("watch"), r"watch\.ApiClient *="])
    )
    hits = [
        str(path.relative_to(root))
        for package in ("agent", "evictor", "kube", "kubesim", "scheduler")
        for path in (root / package).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert hits in ([], ["evictor/api/deferred.py"])
