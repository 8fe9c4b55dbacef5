"""The node agent: node-pressure eviction with kubelet-compatible thresholds and ranking."""
