"""Fixtures for the backend contract suites: each runs against memory and against Redis (when reachable)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .support import FakeClock, Rig


@pytest.fixture(params=["memory", "redis"])
async def rig(request: pytest.FixtureRequest) -> AsyncIterator[Rig]:
    """One backend kind per parametrisation; Redis skips (or fails in CI) when unreachable."""
    clock = FakeClock()
    if request.param == "memory":
        made = Rig("memory", clock)
    else:
        made = Rig("redis", clock, request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix"))
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def redis_rig(redis_url: str, redis_prefix: str) -> AsyncIterator[Rig]:
    """Redis backends only (replica sharing, server clock, outages)."""
    made = Rig("redis", FakeClock(), redis_url, redis_prefix)
    try:
        yield made
    finally:
        await made.close()
