"""kube.resourcehelper: a pod's requests and limits from its containers', as
``AggregateContainerRequests``/``AggregateContainerLimits`` compute them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kube.objects import Container
from kube.resourcehelper import aggregate_limits, aggregate_requests

AMOUNTS = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage"]), st.integers(0, 10**6)
)
CONTAINERS = st.lists(
    st.builds(Container, name=st.just("c"), requests=AMOUNTS, limits=AMOUNTS), max_size=4
)
INITS = st.lists(
    st.builds(
        Container,
        name=st.just("i"),
        requests=AMOUNTS,
        limits=AMOUNTS,
        restart_policy=st.sampled_from([None, "Always"]),
    ),
    max_size=4,
)


def test_a_sidecar_counts_for_every_init_container_after_it() -> None:
    sidecar = Container("log", requests={"memory": 100}, restart_policy="Always")
    migrate = Container("migrate", requests={"memory": 500, "cpu": 200})
    app = Container("app", requests={"memory": 300})
    # the init container runs with the sidecar (600) — more than the app with it (400)
    assert aggregate_requests([app], [sidecar, migrate]) == {"memory": 600, "cpu": 200}
    # started after it, the sidecar does not run beside it
    assert aggregate_requests([app], [migrate, sidecar]) == {"memory": 500, "cpu": 200}
    # a resource nobody names is absent, not 0; defaults fill what a container leaves out
    assert "ephemeral-storage" not in aggregate_requests([app], [])
    assert aggregate_requests([app], [], defaults={"cpu": 100, "memory": 1}) == {
        "memory": 300,
        "cpu": 100,
    }


@given(CONTAINERS, INITS, st.booleans())
def test_the_pod_needs_the_most_of_what_runs_at_once(
    containers: list[Container], inits: list[Container], limits: bool
) -> None:
    def amounts(c: Container) -> dict[str, int]:
        return dict(c.limits if limits else c.requests)

    # what runs at once: the app containers with every sidecar, or one ordinary init container
    # with the sidecars started before it
    phases: list[dict[str, int]] = []
    steady: dict[str, int] = {}
    running: dict[str, int] = {}
    for c in [*containers, *(i for i in inits if i.is_restartable_init)]:
        for name, value in amounts(c).items():
            steady[name] = steady.get(name, 0) + value
    for i in inits:
        if i.is_restartable_init:
            for name, value in amounts(i).items():
                running[name] = running.get(name, 0) + value
            phases.append(dict(running))
        else:
            alone = dict(running)
            for name, value in amounts(i).items():
                alone[name] = alone.get(name, 0) + value
            phases.append(alone)
    got = (aggregate_limits if limits else aggregate_requests)(containers, inits)
    named = set(steady).union(*phases)
    assert set(got) == named
    for name in named:
        assert got[name] == max(p[name] for p in [steady, *phases] if name in p)
