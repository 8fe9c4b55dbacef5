"""Fixtures: a running kubesim with two nodes and a few pods, and a kubernetes-asyncio client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

import kubesim
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.api import STATE


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    # A frozen cluster: the API tests create objects and expect them to stay as they made them.
    async with kubesim.serve(
        state=STATE, time_scale=0.01, bookmark_interval=0.2, disabled_controllers=FROZEN
    ) as s:
        yield s


@pytest.fixture
async def api(sim: Simulator) -> AsyncIterator[client.ApiClient]:
    api_client = sim.api_client()
    try:
        yield api_client
    finally:
        await api_client.close()
