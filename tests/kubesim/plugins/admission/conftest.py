"""The admission tests' cluster: the API tests' kubesim, frozen (no controller changes what a
test wrote)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import kubesim
from kubesim.controllers import FROZEN
from kubesim.sim import Simulator
from tests.support.api import STATE


@pytest.fixture
async def sim() -> AsyncIterator[Simulator]:
    async with kubesim.serve(state=STATE, time_scale=0.01, disabled_controllers=FROZEN) as s:
        yield s
