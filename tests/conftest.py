"""Shared fixtures: real PostgreSQL and Redis when reachable (always in CI), each test run in its own namespace."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, settings

# Property tests check behaviour, never speed: no per-example deadline (a busy machine is not a failure).
settings.register_profile("forecourt", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("forecourt")

PG_HOST = os.environ.get("FORECOURT_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("FORECOURT_TEST_PG_PORT", "5432"))
REDIS_URL = os.environ.get("FORECOURT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    """Skip with a visible reason outside CI; fail in CI, where the service must be there."""
    if _reachable(host, port):
        return
    if IN_CI:
        pytest.fail(f"{name} at {host}:{port} is required in CI but is not reachable")
    pytest.skip(f"{name} at {host}:{port} is not reachable; start it to run this test")


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """A libpq-style URL to the ``test`` database (used only to create and drop per-run databases)."""
    require_service("PostgreSQL", PG_HOST, PG_PORT)
    return f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"


@pytest.fixture
async def postgres_url(postgres_admin_url: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    import asyncpg

    name = f"forecourt_t_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(postgres_admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        admin = await asyncpg.connect(postgres_admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    """A fresh SQLite file for one test."""
    return f"sqlite+aiosqlite:///{tmp_path}/forecourt.db"


@pytest.fixture
def redis_url() -> str:
    """The Redis server URL (skips outside CI when unreachable)."""
    require_service("Redis", "127.0.0.1", 6379)
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix unique to one test; every key under it is deleted afterwards."""
    import redis

    prefix = f"forecourt-test-{uuid.uuid4().hex[:10]}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture(autouse=True)
def _empty_caches() -> None:
    """Every test starts with the process's caches empty (``forecourt.caching``: the one switch)."""
    from forecourt import caching

    caching.clear_all()
