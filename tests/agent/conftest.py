"""Fixtures of the agent's tests: a node cgroup under the cgroup v1 memory controller."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.memcg import node_cgroup_v1


@pytest.fixture
def node_cgroup() -> Iterator[Path]:
    with node_cgroup_v1() as path:
        yield path
