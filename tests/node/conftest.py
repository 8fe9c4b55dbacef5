"""Fixtures of the guest-kernel tests: one VM for the whole session (`guest`).

Run with `make test-node` (or `pytest --node tests/node`, without xdist: each worker would boot
its own VM). A failing test's report gets the guest's console tail and journal tail.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from tests.node import image
from tests.node.cluster import GuestCluster
from tests.node.vm import Guest, GuestConfig

GUEST_FIGURES = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def guest(figure: Callable[[str], None]) -> Iterator[Guest]:
    """The booted guest (see tests/node/README.md); powered off at the end of the session."""
    missing = image.missing_packages()
    if missing:
        pytest.skip(image.install_hint(missing))
    config = GuestConfig(
        memory_mib=int(os.environ.get("NODE_GUEST_MEMORY_MIB", GuestConfig.memory_mib)),
        cpus=int(os.environ.get("NODE_GUEST_CPUS", GuestConfig.cpus)),
        # the whole session's bound: QEMU is killed past it (`make test-node` within 20 min)
        session_timeout=float(
            os.environ.get("NODE_GUEST_SESSION_TIMEOUT", GuestConfig.session_timeout)
        ),
    )
    vm = Guest(config).start()
    figure(
        f"guest booted to {image.TARGET} in {vm.boot_seconds:.1f} s wall "
        f"(guest uptime {vm.guest_uptime_at_hello:.1f} s); console log {vm.console_log}"
    )
    try:
        yield vm
    finally:
        vm.close()


@pytest.fixture(scope="session")
def figure(pytestconfig: pytest.Config) -> Callable[[str], None]:
    """Record a measured figure: printed in the session's summary (and the -s output)."""

    def record(line: str) -> None:
        print(f"\n# {line}")
        pytestconfig.stash.setdefault(GUEST_FIGURES, []).append(line)

    return record


@pytest.fixture(scope="session")
def cluster(guest: Guest, figure: Callable[[str], None]) -> Iterator[GuestCluster]:
    """kubesim serving in the guest, its node-1 a process node (tests/node/cluster.py)."""
    started = time.monotonic()
    running = GuestCluster(guest).start()
    figure(f"kubesim in the guest answered after {time.monotonic() - started:.1f} s")
    try:
        yield running
    finally:
        if guest.alive:
            running.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    vm = getattr(item, "funcargs", {}).get("guest")
    if not report.failed or not isinstance(vm, Guest):
        return report
    report.sections.append(("guest console (tail)", vm.console_tail(60)))
    if vm.alive:
        try:
            report.sections.append(("guest journal (tail)", vm.journal(lines=120)))
        except Exception as error:  # the report must not hide the failure behind another
            report.sections.append(("guest journal", f"unavailable: {error}"))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in config.stash.get(GUEST_FIGURES, []):
        terminalreporter.write_line(line)
