"""Fixtures of the remote-family tests: the demo database with API keys, built once per session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from .support import SECRET, SECRET_ENV, build_template


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("remote-template") / "template.db"
    return path, asyncio.run(build_template(path))


@pytest.fixture(autouse=True)
def host_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """The secret the gateway signs its service tokens with, as remote.yaml's ``secret_env`` names it."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    return SECRET
