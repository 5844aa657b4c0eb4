"""Console tests run the gateway tests' app rig (demo database built once per session) with an operator key."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.support import Rig, Template, build_template, start_rig, stop_rig

OPERATOR_KEY = "console-tests-operator-key-0123456789"


@pytest.fixture(scope="session")
def console_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("console-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def rig(console_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """A fresh app on a private copy of the demo database, with the console's operator key set."""
    made = await start_rig(console_template, tmp_path, console_operator_key=OPERATOR_KEY)
    try:
        yield made
    finally:
        await stop_rig(made)


def csrf_of(html: str) -> str:
    """The CSRF token in a console page's forms."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, key: str) -> str:
    """Sign in with ``key``; returns a CSRF token from the overview."""
    response = await client.post("/console/signin", data={"api_key": key})
    assert response.status_code == 303, response.text
    page = await client.get("/console/")
    assert page.status_code == 200, page.text
    return csrf_of(page.text)
