"""Fixtures of the knowledge tests: a demo template database per session and a fresh app per test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .support import App, Template, build_template, start_app, stop_app


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with documents, named queries and API keys, built once."""
    path = tmp_path_factory.mktemp("knowledge-template") / "template.db"
    return asyncio.run(build_template(path))


@pytest.fixture
async def app(template: Template, tmp_path: Path) -> AsyncIterator[App]:
    """A fresh app on a private copy of the template."""
    made = await start_app(template, tmp_path)
    try:
        yield made
    finally:
        await stop_app(made)
