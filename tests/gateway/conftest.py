"""Fixtures: the demo database is built once per session; each test runs its own app on a private copy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from .support import Rig, Template, build_template, start_rig, stop_rig


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("gateway-template") / "template.db"
    keys = asyncio.run(build_template(path))
    return Template(path, keys)


@pytest.fixture
async def rig(template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database."""
    made = await start_rig(template, tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)


@pytest.fixture
async def make_rig(template: Template, tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Rig]]]:
    """Build apps with a ``prepare`` hook or settings overrides; all are stopped after the test."""
    made: list[Rig] = []

    async def make(**kwargs: Any) -> Rig:
        directory = tmp_path / f"app-{len(made)}"
        directory.mkdir()
        one = await start_rig(template, directory, **kwargs)
        made.append(one)
        return one

    try:
        yield make
    finally:
        for one in made:
            await stop_rig(one)
