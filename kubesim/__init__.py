"""An embedded kube-apiserver-compatible server for the demo and the tests."""
