"""One cluster per module: a fresh PostgreSQL database, a Redis key prefix, two replicas and the proxy.

Starting two server processes is the slow part, so the tests of a module share them; each test uses its
own keys, actions or dealership state so that they do not depend on each other's order.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from replicas.support import (
    NAMES,
    Cluster,
    ProxyThread,
    prepare_database,
    replica_env,
    require_reachable,
    start_replica,
    stop_replica,
    wait_ready,
)

REDIS_URL = os.environ.get("FORECOURT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(scope="package")
def cluster_database(postgres_admin_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database for the module's cluster, dropped afterwards."""
    import asyncpg

    name = f"forecourt_r_{uuid.uuid4().hex[:12]}"

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
def cluster_redis() -> Iterator[tuple[str, str]]:
    """The Redis URL and a key prefix for the module; every key under it is deleted afterwards."""
    import redis

    require_reachable("Redis", REDIS_URL)
    prefix = f"forecourt-test-{uuid.uuid4().hex[:10]}:"
    yield REDIS_URL, prefix
    client = redis.Redis.from_url(REDIS_URL)
    try:
        for key in client.scan_iter(match=f"{prefix}*", count=500):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture(scope="package")
def cluster(
    cluster_database: str, cluster_redis: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Two ``forecourt serve`` replicas behind the round-robin proxy (the proxy's URL is the public one)."""
    keys = asyncio.run(prepare_database(cluster_database))
    proxy = ProxyThread()
    logs: Path = tmp_path_factory.mktemp("replica-logs")
    env = replica_env(cluster_database, cluster_redis[0], cluster_redis[1], proxy.url)
    replicas = [start_replica(name, env, logs) for name in NAMES]
    try:
        for replica in replicas:
            wait_ready(replica)
        proxy.route_to([("127.0.0.1", r.port) for r in replicas])
        yield Cluster(proxy, replicas, keys, cluster_database)
    finally:
        for replica in replicas:
            stop_replica(replica)
        proxy.stop()
