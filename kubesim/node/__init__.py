"""The node side of the cluster: the built-in kubelet that runs bound pods and finishes their
graceful deletion."""
