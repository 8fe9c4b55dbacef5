"""The kubelet's node e2e eviction suite on this machine's kernel, the agent as the evictor.

Every scenario of eviction_scenarios.py (upstream's test/e2e_node/eviction_test.go, scaled
to ``HOST``) runs on its own process node of one kubesim, with the agent started for it as a
kubelet restarts for a scenario; the scenarios run at once, four at a time
(``ScenarioPool``), and each test reports its own. This host's kernel mounts cgroup v1 (the
guest-kernel tests run the same scenarios on v2). They need root (tmpfs disks, memory
cgroups) and take minutes, so they run in ``make test-node``, not ``make test``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.conftest import GUEST_FIGURES
from tests.node.eviction_host import HostCluster, cgroup_version, why_not_runnable
from tests.node.eviction_run import ScenarioPool, longest_first, selected
from tests.node.eviction_scenarios import HOST, Scenario, scenarios

pytestmark = pytest.mark.node

SCENARIOS = scenarios(HOST)
WORKERS = 4


@pytest.fixture(scope="module")
def host_pool(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ScenarioPool]:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    chosen = selected(request.session.items, __name__, SCENARIOS)
    cluster = HostCluster(Path(tmp_path_factory.mktemp("eviction-host")), chosen, HOST)
    pool = None
    try:
        cluster.start()
        pool = ScenarioPool(
            cluster,
            longest_first(chosen),
            nodes=cluster.nodes,
            kubelet_ports=cluster.kubelet_ports,
            scale=HOST,
            environment=f"host, cgroup {cgroup_version()}",
            workers=WORKERS,
        )
        yield pool
    finally:
        if pool is not None:
            pool.close()
        cluster.stop()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_on_the_host(
    host_pool: ScenarioPool, scenario: Scenario, pytestconfig: pytest.Config
) -> None:
    result = host_pool.result(scenario.name)
    pytestconfig.stash.setdefault(GUEST_FIGURES, []).append(result.line())
