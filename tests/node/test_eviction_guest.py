"""The kubelet's node e2e eviction suite in the guest: cgroup v2 under systemd, Debian's kernel.

The same scenarios as test_eviction_host.py (scaled to ``GUEST``: TCG is slow and the guest
has 2 GiB), with kubesim and the agents inside the VM (eviction_guest.py), where the agent
reads a v2 kernel: no memcg threshold announcements, PSI, ``memory.events.local``, the usage
watch, ``cgroup.procs`` listing processes as v2 does. They run at once, three at a time
(``ScenarioPool``; the guest has two vCPUs), and each test reports its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.node.eviction_guest import GuestEvictionCluster
from tests.node.eviction_run import ScenarioPool, running, selected
from tests.node.eviction_scenarios import GUEST, Scenario, scenarios
from tests.node.vm import Guest

SCENARIOS = scenarios(GUEST)
WORKERS = 3


@pytest.fixture(scope="module")
def guest_pool(
    guest: Guest, request: pytest.FixtureRequest, figure: Callable[[str], None]
) -> Iterator[ScenarioPool]:
    chosen = selected(request.session.items, __name__, SCENARIOS)
    cluster = GuestEvictionCluster(guest, chosen, GUEST)
    environment = "guest, cgroup v2"
    with running(cluster, chosen, scale=GUEST, environment=environment, workers=WORKERS) as pool:
        figure(
            "eviction suite: kubesim and the agents' imports ready in the guest after"
            f" {cluster.started_in:.1f} s"
        )
        yield pool


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_in_the_guest(
    guest_pool: ScenarioPool, scenario: Scenario, figure: Callable[[str], None]
) -> None:
    figure(guest_pool.result(scenario.name).line())
