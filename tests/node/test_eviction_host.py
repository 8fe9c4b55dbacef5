"""The kubelet's node e2e eviction suite on this machine's kernel, the agent as the evictor.

Every scenario of eviction_scenarios.py (upstream's test/e2e_node/eviction_test.go, scaled
to ``HOST``) runs on its own process node of one kubesim, with the agent started for it as a
kubelet restarts for a scenario. This host's kernel mounts cgroup v1 (the guest-kernel tests
run the same scenarios on v2). They need root (tmpfs disks, memory cgroups) and take minutes,
so they run in ``make test-node``, not ``make test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.conftest import GUEST_FIGURES
from tests.node.eviction_host import HostCluster, cgroup_version, why_not_runnable
from tests.node.eviction_run import run_scenario
from tests.node.eviction_scenarios import HOST, Scenario, scenarios

pytestmark = pytest.mark.node

SCENARIOS = scenarios(HOST)


@pytest.fixture(scope="module")
def host_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostCluster]:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    cluster = HostCluster(Path(tmp_path_factory.mktemp("eviction-host")), SCENARIOS, HOST)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_on_the_host(
    host_cluster: HostCluster, scenario: Scenario, pytestconfig: pytest.Config
) -> None:
    result = run_scenario(
        host_cluster,
        scenario,
        host_cluster.nodes[scenario.node],
        scale=HOST,
        kubelet_port=host_cluster.kubelet_ports[scenario.node],
    )
    result.environment = f"host, cgroup {cgroup_version()}"
    pytestconfig.stash.setdefault(GUEST_FIGURES, []).append(result.line())
