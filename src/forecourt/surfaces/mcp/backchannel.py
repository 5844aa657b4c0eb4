"""Requests to the client within a legacy (2025-11-25) call, and the routing of the client's answers.

The stateless transport that serves legacy sessions cannot send a request to the client: the answer
arrives as another POST it cannot route. A :class:`BackChannel` writes the request as one more event of the
call's own response stream; the answer, a POST of a JSON-RPC response with the same session id on any
replica, is taken out before the SDK sees it (``LegacySessions``) and handed to the waiting call by a
:class:`ReplyRouter` (Redis when configured, so the answer may reach any replica).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
from typing import Any, Protocol

import mcp_types as types
import redis.asyncio as aioredis
from mcp import MCPError
from starlette.types import Message, Send

from forecourt.gateway.backends.redis import UNAVAILABLE
from forecourt.surfaces.mcp.errors import NoBackChannel

logger = logging.getLogger(__name__)

REPLY_TTL_S = 660.0
"""How long an expected answer (and one that arrived early) is kept in Redis."""


class ReplyWaiter(Protocol):
    """One expected answer of the client."""

    async def wait(self) -> dict[str, Any]:
        """The JSON-RPC response the client POSTed (unbounded: the caller bounds it)."""

    def close(self) -> None:
        """Stop expecting it."""


class ReplyRouter(Protocol):
    """Hands the answers clients POST to the back channel requests that wait for them (on any replica)."""

    async def expect(self, session_id: str, request_id: str) -> ReplyWaiter:
        """Register an answer to wait for (before the request is sent)."""

    async def deliver(self, session_id: str, reply: dict[str, Any]) -> bool:
        """Hand over a JSON-RPC response; ``False`` when no request of that session waits for it."""


class _LocalWaiter:
    def __init__(self, waiting: dict[tuple[str, str], asyncio.Future[dict[str, Any]]], key: tuple[str, str]) -> None:
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting = waiting
        self._key = key
        waiting[key] = self.future

    async def wait(self) -> dict[str, Any]:
        return await self.future

    def close(self) -> None:
        if self._waiting.get(self._key) is self.future:
            del self._waiting[self._key]
        self.future.cancel()


class MemoryReplies:
    """One process: the answer reaches the replica that asked."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}

    async def expect(self, session_id: str, request_id: str) -> ReplyWaiter:
        return _LocalWaiter(self._waiting, (session_id, request_id))

    async def deliver(self, session_id: str, reply: dict[str, Any]) -> bool:
        request_id = reply.get("id")
        future = self._waiting.get((session_id, request_id)) if isinstance(request_id, str) else None
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True


class _RedisWaiter(_LocalWaiter):
    def __init__(self, replies: RedisReplies, key: tuple[str, str]) -> None:
        super().__init__(replies._waiting, key)
        self._client = replies._client
        self._list = replies._key(*key) + ":reply"

    async def _remote(self) -> dict[str, Any]:
        try:
            while True:  # short blocking pops: the client's socket timeout stays meaningful
                item = await self._client.blpop([self._list], timeout=1)
                if item is not None:
                    reply = json.loads(item[1])
                    if isinstance(reply, dict):
                        return reply
        except UNAVAILABLE:
            logger.warning("relay answers cannot be read from Redis; waiting for one on this replica")
            return await asyncio.shield(self.future)

    async def wait(self) -> dict[str, Any]:
        remote = asyncio.ensure_future(self._remote())
        try:
            done, _ = await asyncio.wait({self.future, remote}, return_when=asyncio.FIRST_COMPLETED)
            return (self.future if self.future in done else remote).result()
        finally:
            remote.cancel()


class RedisReplies(MemoryReplies):
    """Replicas sharing Redis: an answer POSTed to another replica is pushed to a list the asker pops."""

    def __init__(self, client: aioredis.Redis, prefix: str) -> None:
        super().__init__()
        self._client = client
        self._prefix = f"{prefix}mcp:relay:"

    def _key(self, session_id: str, request_id: str) -> str:
        digest = hashlib.sha256(f"{session_id}|{request_id}".encode()).hexdigest()
        return self._prefix + digest

    async def expect(self, session_id: str, request_id: str) -> ReplyWaiter:
        waiter = _RedisWaiter(self, (session_id, request_id))
        try:
            await self._client.set(self._key(session_id, request_id), b"1", ex=int(REPLY_TTL_S))
        except UNAVAILABLE:
            logger.warning("relay answers cannot be shared through Redis; only this replica will see them")
        return waiter

    async def deliver(self, session_id: str, reply: dict[str, Any]) -> bool:
        if await super().deliver(session_id, reply):
            return True
        request_id = reply.get("id")
        if not isinstance(request_id, str):
            return False
        key = self._key(session_id, request_id)
        try:
            if not await self._client.exists(key):
                return False
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(key + ":reply", json.dumps(reply, separators=(",", ":")))
                pipe.expire(key + ":reply", int(REPLY_TTL_S))
                pipe.delete(key)
                await pipe.execute()
        except UNAVAILABLE:
            return False
        return True


def _content_type(message: Message) -> bytes:
    for key, value in message.get("headers") or ():
        if key.lower() == b"content-type":
            return bytes(value).lower()
    return b""


class BackChannel:
    """Requests to the client on the event stream of one legacy POST (see the module docstring).

    Wraps the ASGI ``send`` of that POST: the SDK's own events and the requests written here go out one at a
    time, and a request is written only while the response is an open event stream.
    """

    def __init__(self, send: Send, session_id: str, replies: ReplyRouter) -> None:
        self._send = send
        self.session_id = session_id
        self._replies = replies
        self._lock = asyncio.Lock()
        self._started = asyncio.Event()
        self._stream = False
        self._ended = False

    async def send(self, message: Message) -> None:
        """The ``send`` given to the SDK."""
        async with self._lock:
            if message["type"] == "http.response.start":
                self._stream = _content_type(message).startswith(b"text/event-stream")
                self._started.set()
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                self._ended = True
            await self._send(message)

    def end(self) -> None:
        """The response is over (the app returned)."""
        self._ended = True
        self._started.set()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send ``method`` to the client and return its result (the caller bounds the wait).

        Raises:
            NoBackChannel: The response is not (or no longer) an event stream.
            MCPError: The client answered with a JSON-RPC error.
        """
        await self._started.wait()
        request_id = f"fc-{secrets.token_urlsafe(12)}"
        waiter = await self._replies.expect(self.session_id, request_id)
        try:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            event = b"event: message\r\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\r\n\r\n"
            async with self._lock:
                if not self._stream or self._ended:
                    raise NoBackChannel()
                await self._send({"type": "http.response.body", "body": event, "more_body": True})
            reply = await waiter.wait()
        finally:
            waiter.close()
        return _result_of(reply)


def _result_of(reply: dict[str, Any]) -> dict[str, Any]:
    error = reply.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        raise MCPError(
            code if isinstance(code, int) else types.INTERNAL_ERROR,
            message[:500] if isinstance(message, str) else "The client refused the request.",
            error.get("data"),
        )
    result = reply.get("result")
    if not isinstance(result, dict):
        raise MCPError(types.INVALID_REQUEST, "The client's answer has no result.")
    return result


def is_reply(body: dict[str, Any] | None) -> bool:
    return body is not None and "method" not in body and "id" in body and ("result" in body or "error" in body)
