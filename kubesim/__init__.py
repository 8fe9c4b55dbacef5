"""An embedded kube-apiserver-compatible server for the demo and the tests.

``async with kubesim.serve(state=..., faults=...) as sim:`` runs one in process; ``kubesim
serve`` runs one from the command line. Real kubectl and kubernetes-asyncio work against it.
"""

from kubesim.sim import Simulator, StateError, serve

__all__ = ["Simulator", "StateError", "serve"]
