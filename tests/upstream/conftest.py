"""Fixtures of the upstream tests: the demo template (built once), a real upstream process, the live app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from upstream_support import LiveServer, UpstreamProcess, build_template, copy_template


class Template:
    def __init__(self, path: Path, keys: dict[str, str]) -> None:
        self.path = path
        self.keys = keys


@pytest.fixture(scope="session")
def upstream_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    path = tmp_path_factory.mktemp("upstream-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
def keys(upstream_template: Template) -> dict[str, str]:
    return upstream_template.keys


@pytest.fixture
async def upstream() -> AsyncIterator[UpstreamProcess]:
    process = UpstreamProcess()
    await process.start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
async def live(upstream_template: Template, tmp_path: Path) -> AsyncIterator[LiveServer]:
    server = LiveServer(copy_template(upstream_template.path, tmp_path))
    await server.start()
    try:
        yield server
    finally:
        server.stop()
