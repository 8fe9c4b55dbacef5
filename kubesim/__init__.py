"""An embedded kube-apiserver-compatible server for the demo and the tests.

``async with kubesim.serve(state=..., faults=...) as sim:`` runs one in process; ``kubesim
serve`` runs one from the command line. Real kubectl and kubernetes-asyncio work against it.

Its modules are in six layers (core, registry, plugins, endpoints, the actors and the
composition), each importing only those below it, as kube-apiserver keeps the same concerns
apart: ARCHITECTURE.md draws them, an import contract checks them.

The names below are loaded on first use (PEP 562): ``kubesim --help`` must not pay for
aiohttp and the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesim.sim import Simulator, StateError, serve

__all__ = ["Simulator", "StateError", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kubesim import sim

        return getattr(sim, name)
    raise AttributeError(f"module 'kubesim' has no attribute {name!r}")
