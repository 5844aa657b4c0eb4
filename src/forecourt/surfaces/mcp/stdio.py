"""``forecourt mcp --stdio`` on the wire: the host's ``initialize`` answered at once, then the SDK's server.

A desktop host spawns the command and sends ``initialize`` straight away; many give up when no answer comes
within seconds. Building what serves the rest (the MCP SDK, the catalogue, the store, the token's principal)
takes seconds on a busy machine, and the answer to ``initialize`` needs none of it (:mod:`.handshake`). So:

1. :meth:`EarlyHandshake.start` (called once the command's settings are checked) reads the host's first line on
   a thread, a byte at a time so that nothing after that line is taken from stdin, and answers it on stdout
   when :func:`.handshake.early_answer` can; any other first message waits for the SDK.
2. When the app is built, :meth:`EarlyHandshake.serve` runs the SDK's server on stdio with that first message
   put back in front of what it reads, so the SDK handles the same conversation from its first message (its
   connection state, the ``initialized`` notification and every request after it), and drops the SDK's own
   answer to an ``initialize`` that was already answered, logging a warning if the two differ (a test keeps
   them equal, tests/mcp/test_mcp_stdio_handshake.py).

If the token is refused once the app is built, the command still stops with the refusal on stderr and exit
code 2, as before; a host that already had its ``initialize`` answered sees the server end there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from forecourt.surfaces.mcp.handshake import early_answer

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)


class EarlyHandshake:
    """The host's first line, read and (when it is an ``initialize`` it can answer) answered on a thread."""

    def __init__(self, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self.line: bytes | None = None
        """The first line (without its newline); ``None`` when stdin closed first."""
        self.answered: dict[str, Any] | None = None
        """The answer already written to stdout, if any."""
        self._lock = threading.Lock()
        self._done = False
        self._waiters: list[Callable[[], None]] = []

    @classmethod
    def start(cls, stdin_fd: int = 0, stdout_fd: int = 1) -> EarlyHandshake:
        """Start reading the first line (a daemon thread: a host that never writes keeps no process alive)."""
        early = cls(stdin_fd, stdout_fd)
        threading.Thread(target=early._run, name="forecourt-stdio-handshake", daemon=True).start()
        return early

    def _run(self) -> None:
        try:
            self.line = self._read_line()
            answer = early_answer(self.line) if self.line is not None else None
            if answer is not None:
                self._write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
                self.answered = answer
        except OSError as exc:  # stdin or stdout gone: the SDK meets the same and ends the session
            logger.warning("stdio handshake: %s", type(exc).__name__)
        finally:
            with self._lock:
                self._done = True
                waiters, self._waiters = self._waiters, []
            for wake in waiters:
                wake()

    def _read_line(self) -> bytes | None:
        chunks = bytearray()
        while True:
            byte = os.read(self._stdin_fd, 1)
            if not byte:
                return bytes(chunks) if chunks else None
            if byte == b"\n":
                return bytes(chunks)
            chunks += byte

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._stdout_fd, view) :]

    async def opening(self) -> bytes | None:
        """Wait for the first line (or the end of stdin) without holding the event loop."""
        loop = asyncio.get_running_loop()
        arrived = loop.create_future()

        def arrive() -> None:
            if not arrived.done():
                arrived.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(arrive)

        with self._lock:
            if not self._done:
                self._waiters.append(wake)
            else:
                arrived.set_result(None)
        await arrived
        return self.line

    async def serve(self, server: Server[Any]) -> None:
        """Run ``server`` on stdio from the host's first message on (call once the app is built)."""
        from mcp.server.stdio import stdio_server

        first = await self.opening()  # the SDK reads stdin only after this thread has stopped reading it
        async with stdio_server() as (stdin, stdout):
            read: ReadStream[SessionMessage | Exception] = stdin if first is None else _Replayed(_parsed(first), stdin)
            write: WriteStream[SessionMessage] = (
                stdout if self.answered is None else _WithoutEarlyAnswer(stdout, self.answered)
            )
            unwatch = _announce_tool_changes(server, write)
            try:
                await server.run(read, write, server.create_initialization_options())
            finally:
                unwatch()


def _announce_tool_changes(server: Server[Any], write: WriteStream[SessionMessage]) -> Callable[[], None]:
    """Write ``notifications/tools/list_changed`` to stdout when an upstream change alters the caller's tools."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from forecourt.surfaces.mcp.listchanged import ForecourtServer

    if not isinstance(server, ForecourtServer) or server.tool_changes is None or server.stdio_company is None:
        return lambda: None
    pending: set[asyncio.Task[None]] = set()

    async def send() -> None:
        note = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed")
        try:
            await write.send(SessionMessage(note))
        except Exception:  # stdout gone: the session is ending
            logger.debug("stdio: a tool list change could not be announced", exc_info=True)

    def sink() -> None:
        task = asyncio.get_running_loop().create_task(send())
        pending.add(task)
        task.add_done_callback(pending.discard)

    return server.tool_changes.watch(server.stdio_company, sink)


def _parsed(line: bytes) -> SessionMessage | Exception:
    """``line`` as the SDK's stdio reader makes it: a message, or the exception it hands the server."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line.decode(errors="replace"), by_name=False))
    except Exception as exc:  # handed to the server, as the SDK's reader does
        return exc


class _Replayed:
    """A read stream that yields ``first``, then what ``inner`` yields (with the sender context it carries)."""

    def __init__(self, first: SessionMessage | Exception, inner: ReadStream[SessionMessage | Exception]) -> None:
        self._first: SessionMessage | Exception | None = first
        self._inner = inner
        self.last_context: Any = None

    async def receive(self) -> SessionMessage | Exception:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        item = await self._inner.receive()
        self.last_context = getattr(self._inner, "last_context", None)
        return item

    def __aiter__(self) -> _Replayed:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Replayed:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _WithoutEarlyAnswer:
    """A write stream that drops the SDK's answer to the ``initialize`` already answered (compared first)."""

    def __init__(self, inner: WriteStream[SessionMessage], answered: dict[str, Any]) -> None:
        self._inner = inner
        self._answered: dict[str, Any] | None = answered

    async def send(self, item: SessionMessage, /) -> None:
        answered = self._answered
        message = item.message
        if answered is not None and getattr(message, "id", None) == answered["id"] and not hasattr(message, "method"):
            self._answered = None
            sdk_answer = json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))
            if sdk_answer != answered:
                logger.warning("stdio handshake: the SDK's initialize answer differs from the one sent early")
            return
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WithoutEarlyAnswer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
