"""Two replicas on PostgreSQL and Redis behind the real HAProxy, shared by the load-balancer tests of a module."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deploy.lb import HAProxy, lb_env, start_haproxy
from replicas.support import Replica, prepare_database, require_reachable, start_replica, stop_replica, wait_ready

REDIS_URL = os.environ.get("FORECOURT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@dataclass
class Site:
    """The replicas, HAProxy in front, the API keys and what is needed to start one more replica."""

    haproxy: HAProxy
    replicas: list[Replica]
    keys: dict[str, str]
    env: dict[str, str]
    logs: Path
    extra: list[object] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.haproxy.url


@pytest.fixture(scope="package")
def site_database(postgres_admin_url: str) -> Iterator[str]:
    import asyncpg

    name = f"forecourt_lb_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(postgres_admin_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield postgres_admin_url.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="package")
def lb_site(site_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    import redis

    require_reachable("Redis", REDIS_URL)
    prefix = f"forecourt-test-{uuid.uuid4().hex[:10]}:"
    keys = asyncio.run(prepare_database(site_database))
    logs = tmp_path_factory.mktemp("lb-logs")
    env = lb_env(site_database, REDIS_URL, prefix, "http://127.0.0.1")
    replicas = [start_replica(name, env, logs) for name in ("replica-a", "replica-b")]
    haproxy: HAProxy | None = None
    try:
        for replica in replicas:
            wait_ready(replica, timeout_s=120)
        haproxy = start_haproxy(replicas, logs)
        yield Site(haproxy, replicas, keys, env, logs)
    finally:
        if haproxy is not None:
            haproxy.stop()
        for replica in replicas:
            stop_replica(replica)
        client = redis.Redis.from_url(REDIS_URL)
        try:
            for key in client.scan_iter(match=f"{prefix}*", count=500):
                client.delete(key)
        finally:
            client.close()
