"""Test-wide settings: deterministic hypothesis runs so CI never flakes on a new example, the
guest-kernel tests of tests/node kept out of `make test` (they boot a VM: `make test-node`), and
the `long` tests started first."""

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# hypothesis's own 100 examples (at 200, property tests were a third of the suite's CPU);
# `HYPOTHESIS_PROFILE=thorough` draws five times more, derandomized too so a failure replays.
settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# --- tests/node: the guest-kernel harness (boots a VM; `make test-node`) -----------------------

NODE_DIR = Path(__file__).resolve().parent / "node"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--node",
        action="store_true",
        help="run the guest-kernel tests of tests/node (one VM for the session; make test-node)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that use the VM (`guest` fixture) `node`; without --node they are
    deselected (the summary says why), and so are those marked `node` themselves (the eviction
    suite on the host: minutes, as root). The harness's own host-side tests run everywhere."""
    run_node = config.getoption("--node")
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if item.path.is_relative_to(NODE_DIR) and (
            "guest" in getattr(item, "fixturenames", ()) or item.get_closest_marker("node")
        ):
            item.add_marker(pytest.mark.node)
            (keep if run_node else dropped).append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    # Tests marked `long` (a whole program for tens of seconds, mostly waiting) go first: xdist
    # hands out the first tests first (two per worker to start with `make unit`'s
    # --maxschedchunk 1), so they wait while the others compute instead of being the last
    # thing a run waits for.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if config.getoption("--node"):
        return
    args = [Path(a.split("::")[0]).resolve() for a in config.args] or [NODE_DIR.parent]
    if not any(NODE_DIR.is_relative_to(a) or a.is_relative_to(NODE_DIR) for a in args):
        return
    from tests.node.image import install_hint, missing_packages

    missing = missing_packages()
    why = f"; {install_hint(missing)}" if missing else ""
    terminalreporter.write_line(
        f"tests/node deselected: the guest-kernel tests run with `make test-node`{why}"
    )
