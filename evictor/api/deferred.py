"""Start-up savings no public API offers: kubernetes-asyncio's client without its ~770 generated
models (``defer_client_models``), and TLS contexts that load the system CAs only when a TLS
connection needs them (``defer_system_cas``); in ``evictor`` as the agent and ``evict`` use them.

The project's one workaround that touches private names of its dependencies (aiohttp,
kubernetes-asyncio, urllib3): ``dependency_problems()`` (``tests/evictor/api/
test_deferred_contract.py``) fails loudly when an upgrade moves them, instead of the agent
silently losing the saving.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import ssl
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, Final

__all__ = [
    "AIOHTTP_SSL_HOOK",
    "defer_client_models",
    "defer_system_cas",
    "dependency_problems",
    "load_pending_cas",
    "system_cas_on_first_use",
]

# aiohttp's private method this module wraps: it returns the context for a request's connection
AIOHTTP_SSL_HOOK: Final = "_get_ssl_context"

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
    """Make ``kubernetes_asyncio`` importable without its models; False if already imported.

    ``import kubernetes_asyncio`` executes ``kubernetes_asyncio/client/__init__.py``, which
    imports every generated API class and all ~770 model classes: about 0.3 s of start-up and
    30 MiB of RSS. The agent (its footprint, ``bench/agent_footprint.py``) and ``evict`` (its
    start-up, ``bench/startup.py``) read and write raw JSON (``_preload_content=False``), so
    they need none of them. Measured, best of 7 fresh interpreters on a 2-core machine:
    importing ``client.api_client`` and ``config.kube_config`` takes 0.47 s, 0.23 s with this.

    ``kubernetes_asyncio``, ``kubernetes_asyncio.client`` and its ``api`` and ``models``
    packages are registered as module objects whose ``__init__`` has not run yet:

    * submodules import normally (``kubernetes_asyncio.config``, ``client.api_client``,
      ``client.rest``, ``client.configuration``, ``watch``, one API class's module such as
      ``client.api.core_v1_api``), so the kubeconfig's static parts, TLS and the auth headers
      are the library's own code, unchanged (credentials that refresh are
      ``evictor.api.connect``'s);
    * ``client.ApiClient``/``client.Configuration``/``client.ApiException`` resolve to their
      modules;
    * any other name (``client.CoreV1Api``, ``client.V1Pod``, ``models.V1Pod`` as
      ``ApiClient.deserialize`` looks it up) runs the package's real ``__init__`` on first use,
      so every library and test that wants the full client still gets it — only later;
    * ``urllib3`` (~20 ms), which ``client.configuration`` imports only to build an HTTP basic
      auth header, is deferred whole: its ``__init__`` runs on the first use of any of its
      names.

    It relies on that package layout (``client/api_client.py``, ``client/configuration.py``,
    ``client/exceptions.py``, one module per API class, ``client/__init__`` importing every
    model) and on urllib3 being a package. A no-op once ``kubernetes_asyncio`` is imported
    (tests, kubesim in the same process).
    """
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


# contexts made by ``defer_system_cas`` without the system CAs yet: each with its loader
_PENDING_CAS: weakref.WeakKeyDictionary[ssl.SSLContext, Callable[[], None]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.contextmanager
def system_cas_on_first_use() -> Iterator[None]:
    """While active, the system CAs a new ``SSLContext`` would load (``load_default_certs``,
    ``set_default_verify_paths``) are noted instead, and loaded by ``load_pending_cas``."""
    cls = ssl.SSLContext
    real_default_certs = cls.load_default_certs
    real_verify_paths = cls.set_default_verify_paths

    def load_default_certs(self: ssl.SSLContext, purpose: Any = ssl.Purpose.SERVER_AUTH) -> None:
        _PENDING_CAS[self] = lambda: real_default_certs(self, purpose)

    def set_default_verify_paths(self: ssl.SSLContext) -> None:
        _PENDING_CAS[self] = lambda: real_verify_paths(self)

    cls.load_default_certs = load_default_certs  # type: ignore[method-assign]
    cls.set_default_verify_paths = set_default_verify_paths  # type: ignore[method-assign]
    try:
        yield
    finally:
        cls.load_default_certs = real_default_certs  # type: ignore[method-assign]
        cls.set_default_verify_paths = real_verify_paths  # type: ignore[method-assign]


def load_pending_cas(context: object) -> None:
    """Load the system CAs ``context`` skipped, if it did; then it is as it would have been."""
    if isinstance(context, ssl.SSLContext):
        loader = _PENDING_CAS.pop(context, None)
        if loader is not None:
            loader()


def defer_system_cas() -> bool:
    """Import aiohttp with its default TLS contexts' CAs deferred to their first use, and make
    its connector load any pending CAs before a TLS connection; False if aiohttp is already
    imported or has no ``TCPConnector._get_ssl_context`` to hook (CAs load as usual).

    aiohttp builds two ``SSLContext`` objects when it is imported and kubernetes-asyncio one
    per ``ApiClient``, each loading the system's CA bundle (~20 ms each, ~70 ms of a command's
    start-up) — also for an ``http://`` server, where no TLS connection is ever made. Contexts
    created without a CA of their own get the very same CAs just before aiohttp hands them to
    their first TLS connection; a context given a CA file or data is built as usual. Importing
    aiohttp takes 0.16 s instead of 0.20 s. It relies on ``ssl.SSLContext.load_default_certs``
    and ``set_default_verify_paths`` (public) and on aiohttp's private
    ``TCPConnector._get_ssl_context(req)`` (``AIOHTTP_SSL_HOOK``), the one place aiohttp hands
    a context to a new TLS connection.
    """
    if "aiohttp" in sys.modules:
        return False
    with system_cas_on_first_use():
        import aiohttp.connector
    connector = aiohttp.connector.TCPConnector
    real = getattr(connector, AIOHTTP_SSL_HOOK, None)
    if real is None:  # pragma: no cover - another aiohttp: load them now (the test fails)
        for context in list(_PENDING_CAS):
            load_pending_cas(context)
        return False

    def _get_ssl_context(self: Any, req: Any) -> Any:
        context = real(self, req)
        load_pending_cas(context)
        return context

    setattr(connector, AIOHTTP_SSL_HOOK, _get_ssl_context)
    return True


def dependency_problems() -> list[str]:
    """What this module relies on and the installed dependencies no longer offer ([]: all
    there). Call it in a fresh interpreter, after ``defer_client_models``/``defer_system_cas``."""
    import inspect

    problems: list[str] = []
    for name in (
        *_DEFERRED,
        "kubernetes_asyncio.client.api_client",
        "kubernetes_asyncio.client.configuration",
        "kubernetes_asyncio.client.exceptions",
        "kubernetes_asyncio.client.rest",
        "kubernetes_asyncio.client.api.core_v1_api",
        "kubernetes_asyncio.client.api.policy_v1_api",
        "kubernetes_asyncio.config.kube_config",
        *_LAZY,
    ):
        spec = importlib.util.find_spec(name)
        if spec is None:
            problems.append(f"{name}: no such module")
    for package, names in _LIGHT_NAMES.items():
        for attr, module in names.items():
            if not hasattr(importlib.import_module(f"{package}.{module}"), attr):
                problems.append(f"{package}.{module}.{attr}: gone")
    problems.extend(
        f"ssl.SSLContext.{method}: gone"
        for method in ("load_default_certs", "set_default_verify_paths")
        if not callable(getattr(ssl.SSLContext, method, None))
    )
    import aiohttp.connector

    hook = getattr(aiohttp.connector.TCPConnector, AIOHTTP_SSL_HOOK, None)
    if hook is None:
        problems.append(f"aiohttp TCPConnector.{AIOHTTP_SSL_HOOK}: gone")
    else:
        params = list(inspect.signature(hook).parameters)
        if params != ["self", "req"]:
            problems.append(f"aiohttp TCPConnector.{AIOHTTP_SSL_HOOK}{params}: not (self, req)")
    return problems
