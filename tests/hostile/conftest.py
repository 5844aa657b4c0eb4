"""Fixtures of the hostile-input tests: the gateway tests' demo database, copied per test, behind the real app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.support import Rig, Template, build_template, start_rig, stop_rig

# Fuzzing sends many calls from one member; limits high enough that no example is refused for volume.
HIGH_LIMITS = {
    "rate_company_per_minute": 10_000_000,
    "rate_member_per_minute": 10_000_000,
    "rate_action_per_minute": 10_000_000,
    "rate_anonymous_per_minute": 10_000_000,
}


@pytest.fixture(scope="session")
def hostile_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("hostile-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def rig(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database."""
    made = await start_rig(hostile_template, tmp_path, **HIGH_LIMITS)
    try:
        yield made
    finally:
        await stop_rig(made)
