"""The money tests run the gateway tests' app rig (demo database built once per session)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.support import Rig, Template, build_template, start_rig, stop_rig


@pytest.fixture(scope="session")
def money_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("money-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def rig(money_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database."""
    made = await start_rig(money_template, tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)
