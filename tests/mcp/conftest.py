"""Fixtures of the MCP tests: the demo template (built once) and a live server on a private copy of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_support import LiveServer, Template, build_template, settings_for


@pytest.fixture(scope="session")
def mcp_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("mcp-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def live(mcp_template: Template, tmp_path: Path) -> AsyncIterator[LiveServer]:
    """The whole app on a loopback port, on a private copy of the demo database."""
    db = mcp_template.copy_to(tmp_path)
    server = LiveServer(lambda base: settings_for(db, public_base_url=base))
    await server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def keys(mcp_template: Template) -> dict[str, str]:
    """The template's API keys by name."""
    return mcp_template.keys
