"""Every door on one app: the demo database (built once per session) copied per test, with the console's
operator key set, so a test can reach the admin API, the console, the REST envelope and the CLI on one database."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.support import Rig, Template, build_template, start_rig, stop_rig

OPERATOR_KEY = "door-tests-operator-key-0123456789"


@pytest.fixture(scope="session")
def doors_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("doors-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def rig(doors_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database."""
    made = await start_rig(doors_template, tmp_path, console_operator_key=OPERATOR_KEY)
    try:
        yield made
    finally:
        await stop_rig(made)


def console_client(rig: Rig) -> httpx.AsyncClient:
    """A browser-like client of the rig's console (its own cookie jar)."""
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def sign_in_console(client: httpx.AsyncClient, key: str) -> str:
    """Sign in to the console with ``key``; the CSRF token of its forms."""
    response = await client.post("/console/signin", data={"api_key": key})
    assert response.status_code == 303, response.text
    page = await client.get("/console/")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, "no CSRF token on the page"
    return found.group(1)
