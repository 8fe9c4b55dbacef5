"""The eviction client library and the kubectl-compatible `evict` CLI."""
