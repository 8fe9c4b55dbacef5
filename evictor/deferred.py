"""Importing kubernetes-asyncio's config and ``ApiClient`` without its ~770 generated models.

``import kubernetes_asyncio`` executes ``kubernetes_asyncio/client/__init__.py``, which imports
every generated API class and all ~770 model classes: about 0.3 s of start-up and 30 MiB of RSS.
The node agent (footprint budget, issue 9) and the ``evict`` command (start-up before its first
request) read and write raw JSON (``_preload_content=False``), so they need none of them.

``defer_client_models()`` registers ``kubernetes_asyncio``, ``kubernetes_asyncio.client`` and its
``api`` and ``models`` packages as module objects whose ``__init__`` has not run yet:

* submodules import normally (``kubernetes_asyncio.config``, ``client.api_client``,
  ``client.rest``, ``client.configuration``, ``watch``, one API class's module such as
  ``client.api.core_v1_api``), so kubeconfig loading, exec plugins, in-cluster config, token
  refresh, TLS and auth are the library's own code, unchanged;
* ``client.ApiClient``/``client.Configuration``/``client.ApiException`` resolve to their modules;
* any other name (``client.CoreV1Api``, ``client.V1Pod``, ``models.V1Pod`` as
  ``ApiClient.deserialize`` looks it up) runs the package's real ``__init__`` on first use, so
  every library and test that wants the full client still gets it — only later;
* ``urllib3`` (~20 ms), which ``client.configuration`` imports only to build an HTTP basic auth
  header, is deferred whole: its ``__init__`` runs on the first use of any of its names.

It is a no-op once ``kubernetes_asyncio`` is imported (tests, kubesim in the same process).
It lives here, not in the agent, because both the agent and the ``evict`` CLI use it and the
agent may import ``evictor`` (ARCHITECTURE.md's import direction), not the other way round.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final

__all__ = ["defer_client_models"]

_LIGHT_NAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "kubernetes_asyncio.client": {
        "ApiClient": "api_client",
        "Configuration": "configuration",
        "ApiException": "exceptions",
        "ApiValueError": "exceptions",
    },
}
_DEFERRED: Final = (
    "kubernetes_asyncio",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.client.api",
    "kubernetes_asyncio.client.models",
)
# imported by the modules above but used only off the hot path (HTTP basic auth)
_LAZY: Final = ("urllib3",)
# dunder names the full package defines; import machinery probes others (``__wrapped__``…)
_PACKAGE_DUNDERS: Final = frozenset({"__version__", "__all__"})


def _deferred_package(name: str, *, whole: bool = False) -> ModuleType | None:
    """``name``'s module, its ``__init__`` not run yet; ``whole``: no submodule shortcut."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return None
    module = importlib.util.module_from_spec(spec)
    light = _LIGHT_NAMES.get(name, {})
    loaded = False

    def __getattr__(attr: str) -> Any:
        nonlocal loaded
        if attr.startswith("__") and attr not in _PACKAGE_DUNDERS:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if attr in light:
            return getattr(importlib.import_module(f"{name}.{light[attr]}"), attr)
        if (
            not whole
            and not attr.startswith("_")
            and importlib.util.find_spec(f"{name}.{attr}") is not None
        ):
            return importlib.import_module(f"{name}.{attr}")
        if not loaded:
            loaded = True
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(module)  # the real __init__: everything, as usual
            if attr in module.__dict__:
                return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def defer_client_models() -> bool:
    """Make ``kubernetes_asyncio`` importable without its models; False if already imported."""
    if "kubernetes_asyncio" in sys.modules:
        return False
    for name in _DEFERRED:
        module = _deferred_package(name)
        if module is None:
            return False
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    for name in _LAZY:
        if name not in sys.modules and (module := _deferred_package(name, whole=True)):
            sys.modules[name] = module
    return True
