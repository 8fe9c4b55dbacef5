"""The kubelet's node e2e eviction suite on this machine's kernel, the agent as the evictor.

Every scenario of eviction_scenarios.py (upstream's test/e2e_node/eviction_test.go, scaled
to ``HOST``) runs on its own process node of one kubesim, with the agent started for it as a
kubelet restarts for a scenario; the scenarios run at once, four at a time
(``ScenarioPool``), and each test reports its own. This host's kernel mounts cgroup v1 (the
guest-kernel tests run the same scenarios on v2). They need root (tmpfs disks, memory
cgroups) and take minutes, so they run in ``make test-node``, not ``make test``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.node.eviction_host import HostCluster, cgroup_version, why_not_runnable
from tests.node.eviction_run import ScenarioPool, running, selected
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
    environment = f"host, cgroup {cgroup_version()}"
    with running(cluster, chosen, scale=HOST, environment=environment, workers=WORKERS) as pool:
        yield pool


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_on_the_host(
    host_pool: ScenarioPool, scenario: Scenario, figure: Callable[[str], None]
) -> None:
    figure(host_pool.result(scenario.name).line())
