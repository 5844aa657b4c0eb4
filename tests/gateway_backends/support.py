"""Helpers for the backend contract suites: a fake clock, a bounded wait, and a builder of either backend kind."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis

from forecourt.gateway.backends.authority import (
    AuthorityGenerations,
    MemoryAuthorityGenerations,
    RedisAuthorityGenerations,
)
from forecourt.gateway.backends.console_sessions import (
    MemorySessionRegistry,
    RedisSessionRegistry,
    SessionRegistry,
)
from forecourt.gateway.backends.events import EventBus, MemoryEventBus, RedisEventBus
from forecourt.gateway.backends.memory import (
    MemoryIdempotencyStore,
    MemoryRateLimiter,
    MemoryResultCache,
    MemoryRevocationList,
)
from forecourt.gateway.backends.redis import (
    RedisIdempotencyStore,
    RedisRateLimiter,
    RedisResultCache,
    RedisRevocationList,
    connect_redis,
)
from forecourt.gateway.base import IdempotencyStore, RateLimiter, ResultCache, RevocationList
from forecourt.settings import FailMode


class FakeClock:
    """A monotonic clock that only moves when a test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 3.0) -> bool:
    """Poll ``check`` until it holds or ``timeout_s`` passes (a bounded wait, for Redis's real-time expiry)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        if await check():
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.01)


@dataclass
class Rig:
    """Builds one kind of backend; Redis ones share the test's key prefix and are closed afterwards."""

    kind: str
    clock: FakeClock
    redis_url: str | None = None
    prefix: str = ""
    clients: list[aioredis.Redis] = field(default_factory=list)
    buses: list[EventBus] = field(default_factory=list)

    def client(self) -> aioredis.Redis:
        """A new client, as another replica would have."""
        assert self.redis_url is not None
        client = connect_redis(self.redis_url)
        self.clients.append(client)
        return client

    def rate_limiter(self, fail_mode: FailMode = "open") -> RateLimiter:
        if self.kind == "memory":
            return MemoryRateLimiter(clock=self.clock)
        return RedisRateLimiter(self.client(), prefix=self.prefix, fail_mode=fail_mode, clock=self.clock)

    def cache(self) -> ResultCache:
        if self.kind == "memory":
            return MemoryResultCache(clock=self.clock)
        return RedisResultCache(self.client(), prefix=self.prefix)

    def idempotency(self) -> IdempotencyStore:
        if self.kind == "memory":
            return MemoryIdempotencyStore(clock=self.clock)
        return RedisIdempotencyStore(self.client(), prefix=self.prefix)

    def revocations(self) -> RevocationList:
        if self.kind == "memory":
            return MemoryRevocationList()
        return RedisRevocationList(self.client(), prefix=self.prefix)

    def bus(self) -> EventBus:
        bus: EventBus = MemoryEventBus() if self.kind == "memory" else RedisEventBus(self.client(), prefix=self.prefix)
        self.buses.append(bus)
        return bus

    async def close(self) -> None:
        for bus in self.buses:
            await bus.close()
        for client in self.clients:
            await client.aclose()


class TcpRelay:
    """A loopback TCP relay to a real server that a test switches off and on: a Redis outage without mocks."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._silenced: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        """Listen (on the same port as before, after a stop)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and cut every open connection."""
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    def silence_open_connections(self) -> None:
        """Keep every open connection up but drop its traffic, like a peer that vanished without a FIN."""
        self._silenced |= self._writers

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.get_running_loop().create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                if dst in self._silenced:
                    continue
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            dst.close()
            self._writers.discard(dst)

    def url_for(self, redis_url: str) -> str:
        """``redis_url`` with its host and port replaced by the relay's."""
        parts = urlsplit(redis_url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@127.0.0.1:{self.port}" if userinfo else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))


def console_sessions(rig: Rig) -> SessionRegistry:
    """A console-session registry of the rig's kind (a new Redis client each: another replica)."""
    if rig.kind == "memory":
        return MemorySessionRegistry(clock=rig.clock)
    return RedisSessionRegistry(rig.client(), prefix=rig.prefix)


def authority(rig: Rig) -> AuthorityGenerations:
    """Authority generations of the rig's kind (a new Redis client each: another replica)."""
    if rig.kind == "memory":
        return MemoryAuthorityGenerations()
    return RedisAuthorityGenerations(rig.client(), prefix=rig.prefix)
