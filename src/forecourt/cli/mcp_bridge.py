"""``forecourt mcp --stdio --url URL``: a desktop host's stdio relayed to a remote Forecourt's Streamable HTTP.

A desktop host (Claude Desktop, ...) speaks MCP over a child process's stdin/stdout. This bridge is that child:
it needs no database, no key pepper and no cursor secret, only the MCP URL of a Forecourt (``https://.../mcp``)
and a credential (``FORECOURT_MCP_TOKEN`` or the file named by ``FORECOURT_MCP_TOKEN_FILE``; never argv, which
other users of the machine can read). The remote server authenticates, authorizes and audits every call, exactly
as for a host that connects over HTTP itself.

The relay is message by message and era-transparent, so it carries whatever the host speaks:

- 2025-11-25 (handshake era): ``initialize`` is POSTed without a session; the ``Mcp-Session-Id`` and the
  negotiated version it answers are sent with every later message (notifications and the host's answers to the
  server's requests too); after ``notifications/initialized`` a ``GET`` stream carries the server's own
  notifications (resource updates, list changes); the session is deleted when the host closes stdin.
- 2026-07-28 (stateless era): each request carries its version in ``params._meta``; it is POSTed with the routing
  headers that era asks for (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``). That wire has no
  client-to-server notifications: ``notifications/cancelled`` aborts the request's POST, others are dropped.

A 2025-11-25 response stream that drops before its answer (a replica draining, a proxy's timeout) is resumed
with ``GET`` and ``Last-Event-ID`` after the server's ``retry``, as the SDK's HTTP client does; a stream that
cannot be resumed (or a 2026-07-28 one) is answered with ``-32603`` for that request, so the host never waits
for ever. Each request is POSTed on its own task, so a long stream (``subscriptions/listen``, a legacy SSE answer) never
holds up the next request. A JSON answer or each SSE ``data`` event becomes one line on stdout. A refused
credential (HTTP 401/403) is answered as the JSON-RPC error the server sent (its AutomotiveMCP ``data``, e.g.
``auth.expired``), with a message that says what to fix; an unreachable server as ``-32603`` naming the URL.
Nothing but JSON-RPC is written to stdout; one line per refusal goes to stderr.

Start-up stays light (no store, no SDK import): the host's ``initialize`` goes out as soon as it is read.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""Methods whose named parameter the 2026-07-28 era mirrors in the ``Mcp-Name`` header."""
AUTH_FAILED = -32001
INTERNAL_ERROR = -32603
PARSE_ERROR = -32700
RESUME_ATTEMPTS = 3
"""Reconnections (``GET`` with ``Last-Event-ID``) to a dropped 2025-11-25 response stream before giving up."""
MAX_RETRY_S = 10.0
MAX_LISTEN_BACKOFF_S = 30.0
_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")

Write = Callable[[bytes], None]


def header_value(value: str) -> str:
    """``value`` as an HTTP field value, base64-wrapped (``=?base64?...?=``) where it would not survive as is."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def auth_advice(url: str, body: dict[str, Any] | None) -> tuple[str, Any]:
    """The message a host shows its user when ``url`` refused the credential, and the server's error ``data``."""
    data = None
    reason = "the credential was refused"
    if body is not None and isinstance(body.get("error"), dict):
        data = body["error"].get("data")
        code = data.get("code") if isinstance(data, dict) else None
        reason = f"the credential was refused ({code})" if code else reason
        if code == "auth.expired":
            reason = "the credential has expired (auth.expired)"
    return (
        f"Forecourt at {url}: {reason}. Set FORECOURT_MCP_TOKEN (or FORECOURT_MCP_TOKEN_FILE) in this MCP server's "
        "environment to a valid API key or JWT (an operator makes a key with `forecourt keys create --company C "
        "--member M`), then restart the host",
        data,
    )


class Bridge:
    """Relays JSON-RPC messages between a host's stdio and one Streamable HTTP endpoint."""

    def __init__(self, url: str, token: str, client: httpx.AsyncClient, write: Write) -> None:
        self.url = url
        self._client = client
        self._write = write
        self._auth = {"Authorization": f"Bearer {token}"}
        self.session_id: str | None = None
        self.legacy_version: str | None = None
        """The version a 2025-11-25-era ``initialize`` negotiated (``None``: no handshake, or not yet)."""
        self._posts: dict[Any, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._told: set[str] = set()

    def emit(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message on stdout."""
        self._write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _tell(self, line: str) -> None:
        """One line on stderr (each distinct line once: hosts show it in their MCP log)."""
        if line not in self._told:
            self._told.add(line)
            print(f"forecourt mcp: {line}", file=sys.stderr, flush=True)

    async def handle_line(self, line: bytes) -> None:
        """Relay one line the host wrote."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            self.emit(_error(None, PARSE_ERROR, "Parse error: not a JSON-RPC message"))
            return
        if not isinstance(message, dict):
            self._start(None, self._post(message, self._headers(None, None)))
            return
        method = message.get("method")
        request_id = message.get("id")
        version = _modern_version(message)
        if method is None or request_id is None:
            await self._notify_or_answer(message, method, version)
            return
        self._start(request_id, self._post(message, self._headers(method, version, message)))

    async def _notify_or_answer(self, message: dict[str, Any], method: Any, version: str | None) -> None:
        """A notification or the host's answer to a server request."""
        if self.legacy_version is None or version is not None:
            # 2026-07-28 over HTTP has no client-to-server notifications: a cancellation aborts the POST.
            if method == "notifications/cancelled":
                params = message.get("params")
                task = self._posts.get(params.get("requestId")) if isinstance(params, dict) else None
                if task is not None:
                    task.cancel()
            return
        await self._post(message, self._headers(method, None))
        if method == "notifications/initialized":
            self._start(None, self._listen())

    def _start(self, request_id: Any, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if request_id is not None:
            self._posts[request_id] = task
            task.add_done_callback(lambda _t: self._posts.pop(request_id, None))

    def _headers(self, method: Any, version: str | None, message: dict[str, Any] | None = None) -> dict[str, str]:
        headers = {**self._auth, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if version is not None:
            headers |= {"MCP-Protocol-Version": version, "Mcp-Method": str(method)}
            params = message.get("params") if message else None
            name = params.get(NAME_PARAMS.get(str(method), "")) if isinstance(params, dict) else None
            if isinstance(name, str):
                headers["Mcp-Name"] = header_value(name)
            return headers
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.legacy_version is not None:
            headers["MCP-Protocol-Version"] = self.legacy_version
        return headers

    async def _post(self, message: Any, headers: dict[str, str]) -> None:
        request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
        import httpx

        stream = _Stream(request_id)
        try:
            async with self._client.stream("POST", self.url, json=message, headers=headers) as response:
                await self._relay(response, message, stream)
        except httpx.HTTPError as exc:
            if not stream.opened:
                line = f"cannot reach Forecourt at {self.url} ({type(exc).__name__}): check --url and the network"
                self._tell(line)
                if request_id is not None:
                    self.emit(_error(request_id, INTERNAL_ERROR, line))
                return
        if request_id is not None and stream.opened and not stream.answered:
            await self._resume(stream)

    async def _relay(self, response: httpx.Response, message: Any, stream: _Stream) -> None:
        if response.status_code >= 400:
            stream.answered = True
            await self._refused(response, stream.request_id)
            return
        stream.opened = True
        initialize = isinstance(message, dict) and message.get("method") == "initialize"
        if initialize:
            self.session_id = response.headers.get("mcp-session-id")
        async for answer in _messages(response, stream):
            if initialize and isinstance(answer, dict) and "id" in answer:
                result = answer.get("result")
                if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                    self.legacy_version = result["protocolVersion"]
            self.emit(answer)

    async def _resume(self, stream: _Stream) -> None:
        """A response stream ended before the answer: resume it (2025-11-25, ``Last-Event-ID``), else say so.

        The host would otherwise wait for that answer for ever.
        """
        import httpx

        for _ in range(RESUME_ATTEMPTS):
            if stream.last_id is None or self.session_id is None:
                break
            await asyncio.sleep(stream.retry_s)  # the server's own ``retry:`` before reconnecting
            headers = {**self._headers(None, None), "Accept": "text/event-stream", "Last-Event-ID": stream.last_id}
            headers.pop("Content-Type")
            try:
                async with self._client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        break
                    async for answer in _messages(response, stream):
                        self.emit(answer)
            except httpx.HTTPError:
                continue
            if stream.answered:
                return
        self.emit(
            _error(
                stream.request_id,
                INTERNAL_ERROR,
                f"Forecourt at {self.url} closed the response stream before answering; the call may have run: "
                "check before retrying it",
            )
        )

    async def _refused(self, response: httpx.Response, request_id: Any) -> None:
        body = await _json_body(response)
        if response.status_code in (401, 403):
            text, data = auth_advice(self.url, body)
            self._tell(text)
            code = body["error"].get("code", AUTH_FAILED) if body and isinstance(body.get("error"), dict) else None
            if request_id is not None:
                self.emit(_error(request_id, code if isinstance(code, int) else AUTH_FAILED, text, data))
            return
        if request_id is None:
            return
        if body is not None and isinstance(body.get("error"), dict):
            self.emit({**body, "id": request_id})
            return
        self.emit(_error(request_id, INTERNAL_ERROR, f"Forecourt at {self.url} answered HTTP {response.status_code}"))

    async def _listen(self) -> None:
        """The 2025-11-25 era's ``GET`` stream: the server's own notifications, for as long as the session lives.

        A stream that ends (a replica draining, a proxy's timeout) is opened again after the server's ``retry``
        (doubling while it keeps failing, up to :data:`MAX_LISTEN_BACKOFF_S`); a server that has no such stream
        or refuses it (any 4xx) is not asked again.
        """
        import httpx

        stream = _Stream(None)
        backoff = 0.0
        while True:
            headers = {**self._headers(None, None), "Accept": "text/event-stream"}
            headers.pop("Content-Type")
            if stream.last_id is not None:
                headers["Last-Event-ID"] = stream.last_id
            try:
                async with self._client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        if stream.last_id is None:
                            return
                        stream.last_id = None  # that point is gone: follow the stream from now on
                        continue
                    backoff = 0.0
                    async for message in _messages(response, stream):
                        self.emit(message)
            except httpx.HTTPError:
                pass
            backoff = min(max(backoff * 2, stream.retry_s), MAX_LISTEN_BACKOFF_S)
            await asyncio.sleep(backoff)  # the server's retry, then backing off while it stays away

    async def close(self) -> None:
        """Stop relaying; end a 2025-11-25 session (the server would expire it later anyway)."""
        import httpx

        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.session_id is not None:
            headers = {**self._headers(None, None)}
            headers.pop("Content-Type")
            with contextlib.suppress(httpx.HTTPError):
                await self._client.request("DELETE", self.url, headers=headers, timeout=3.0)


def _modern_version(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


async def _json_body(response: httpx.Response) -> dict[str, Any] | None:
    if not response.headers.get("content-type", "").lower().startswith("application/json"):
        return None
    try:
        body = json.loads(await response.aread())
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


@dataclass
class _Stream:
    """What one request's response stream has delivered so far."""

    request_id: Any
    opened: bool = False
    """The server accepted the request (2xx): an error after that is a dropped stream, not an unreachable server."""
    answered: bool = False
    last_id: str | None = None
    retry_s: float = 1.0

    def saw(self, message: Any) -> None:
        if isinstance(message, dict) and "method" not in message and message.get("id") == self.request_id:
            self.answered = True


async def _messages(response: httpx.Response, stream: _Stream) -> AsyncIterator[Any]:
    """The JSON-RPC messages of a response: its JSON body, or the ``data`` of each SSE ``message`` event.

    Records on ``stream`` the last SSE event id and ``retry``, and whether the request's answer came.
    """
    kind = response.headers.get("content-type", "").lower()
    if kind.startswith("application/json"):
        with contextlib.suppress(ValueError):
            message = json.loads(await response.aread())
            stream.saw(message)
            yield message
        return
    if not kind.startswith("text/event-stream"):
        return
    event, data = "message", list[str]()
    async for line in response.aiter_lines():
        if line == "":
            if data and event == "message" and "".join(data).strip():
                with contextlib.suppress(ValueError):
                    message = json.loads("\n".join(data))
                    stream.saw(message)
                    yield message
            event, data = "message", []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("id:"):
            stream.last_id = line[3:].strip() or stream.last_id
        elif line.startswith("retry:") and line[6:].strip().isdigit():
            stream.retry_s = min(int(line[6:].strip()) / 1000, MAX_RETRY_S)


async def _stdin_lines() -> AsyncIterator[bytes]:
    """Lines of stdin, read on a thread (works for pipes, files and terminals alike)."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.buffer.readline)
        if not line:
            return
        yield line


def _stdout_write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


async def run_bridge(url: str, token: str) -> None:
    """Relay stdin/stdout to ``url`` until the host closes stdin."""
    import httpx

    timeout = httpx.Timeout(30.0, read=None)  # SSE streams and long tool calls: no read limit
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
        bridge = Bridge(url, token, client, _stdout_write)
        try:
            async for line in _stdin_lines():
                await bridge.handle_line(line)
        finally:
            await bridge.close()
