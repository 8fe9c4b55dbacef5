"""The node agent: node-pressure eviction with kubelet-compatible thresholds and ranking."""

from typing import Final

__all__ = ["DOMAIN"]

# The prefix of every name the agent writes or reads as its own: the eviction-preference
# annotation, the pressure taints, the Events' reporting controller.
DOMAIN: Final = "node-pressure-evictor.io"
