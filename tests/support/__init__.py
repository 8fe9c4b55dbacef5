"""What the tests share: waiting for a state (``wait``), the API objects they build
(``builders``), living kubesim clusters and the processes run against them, kubeconfig files,
benchmarks loaded as modules, the import graph. A test module imports from here, never from
another test module or a conftest (tests/test_import_contract.py checks that)."""
