"""Fixtures: the demo database is built once per session; each test gets an app on a private copy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from forecourt.bootstrap import create_app

from .support import LiveServer, Rig, build_template, settings_for, start_rig, stop_rig


@pytest.fixture(scope="session")
def aap_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The migrated demo database and its API keys."""
    path = tmp_path_factory.mktemp("aap-template") / "template.db"
    keys = asyncio.run(build_template(path))
    return path, keys


@pytest.fixture
async def rig(aap_template: tuple[Path, dict[str, str]], tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database."""
    made = await start_rig(aap_template[0], aap_template[1], tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)


@pytest.fixture(scope="session")
def live(aap_template: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One app served on loopback for the whole session (tests use unique data)."""
    import shutil

    db = tmp_path_factory.mktemp("aap-live") / "forecourt.db"
    shutil.copyfile(aap_template[0], db)
    server = LiveServer(create_app(settings_for(db))).start()
    try:
        yield server
    finally:
        server.stop()
