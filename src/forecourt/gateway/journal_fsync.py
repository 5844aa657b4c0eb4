"""Where the audit journal's fsync runs: in a helper process (the default), or in a worker thread.

A journal round (:meth:`~forecourt.gateway.audit_journal.AuditJournal.sync`) hands its segments to one of these
and awaits the answer; the event loop never waits on the disk.

- :class:`HelperFsync` sends the round to a small helper process (:mod:`.fsync_helper`) over a socket pair and
  learns of the end from the event loop's own poll of that socket. No Python thread is involved, so no
  thread has to take the interpreter lock back from the serving thread after each fsync: on one core under
  load a round costs about a tenth of the context switches of a worker thread's, and the serving thread's
  calls are answered about 12 % faster (docs/benchmarks.md). The helper has its own descriptor of each segment
  (passed with ``SCM_RIGHTS``); an fsync through it flushes the same file. If the helper cannot start or goes
  away, a WARNING says so and the rounds continue in a worker thread: no round is lost or left waiting.
- :class:`ThreadFsync` runs a flush function (``os.fsync``) in a worker thread; tests count with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

logger = logging.getLogger(__name__)

HELPER_SCRIPT = Path(__file__).with_name("fsync_helper.py")


class Fsync(Protocol):
    """fsyncs journal segments (``key -> descriptor``) off the event loop."""

    async def __call__(self, segments: dict[int, int]) -> int:
        """fsync every segment; returns how many failed."""
        ...

    def forget(self, key: int) -> None:
        """The segment ``key`` was drained and its descriptor is about to be closed."""
        ...

    def close(self) -> None:
        """Release what this holds (a helper process ends)."""
        ...


class ThreadFsync:
    """``flush`` (``os.fsync``) on each segment, in a worker thread."""

    def __init__(self, flush: Callable[[int], None] = os.fsync) -> None:
        self._flush = flush

    async def __call__(self, segments: dict[int, int]) -> int:
        return await asyncio.to_thread(_fsync_all, self._flush, list(segments.values()))

    def forget(self, key: int) -> None:
        return None

    def close(self) -> None:
        return None


def _fsync_all(flush: Callable[[int], None], descriptors: list[int]) -> int:
    """fsync each descriptor; returns how many failed (a segment closed meanwhile was drained: nothing to keep)."""
    failed = 0
    for fd in descriptors:
        try:
            flush(fd)
        except OSError:
            failed += 1
    return failed


class HelperFsync:
    """fsync in a helper process, one per event loop; a worker thread takes over if the helper goes away."""

    def __init__(self, fallback: ThreadFsync | None = None) -> None:
        self._fallback = fallback or ThreadFsync()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sent: set[int] = set()
        self._waiting: deque[asyncio.Future[int]] = deque()  # one per round sent, answered in order
        self._failed = False

    @property
    def pid(self) -> int | None:
        """The running helper's process id (None before the first round, or after it went away)."""
        return self._proc.pid if self._proc is not None and self._sock is not None else None

    async def __call__(self, segments: dict[int, int]) -> int:
        if not segments:
            return 0
        loop = asyncio.get_running_loop()
        if not self._failed and (self._sock is None or self._loop is not loop):
            self._start(loop)
        sock = self._sock
        if sock is None:
            return await self._fallback(segments)
        waiter: asyncio.Future[int] = loop.create_future()
        self._waiting.append(waiter)  # answered by _on_answer, or with -1 by _stop if the helper goes away
        try:
            for key, fd in segments.items():
                if key not in self._sent:
                    socket.send_fds(sock, [b"O%d" % key], [fd])
                    self._sent.add(key)
            sock.send(b"S" + b",".join(b"%d" % key for key in segments))
        except OSError:
            self._give_up("could not be reached")
        failed = await waiter
        if failed < 0:  # the helper went away before answering: this round runs in the thread
            return await self._fallback(segments)
        return failed

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._stop()
        try:  # a platform without Unix datagram-sequence sockets (or descriptor passing) keeps the thread
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except (AttributeError, OSError):
            self._cannot_start()
            return
        try:
            proc = subprocess.Popen(  # noqa: S603 - this interpreter running Forecourt's own helper file
                [sys.executable, "-I", "-S", str(HELPER_SCRIPT), str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            ours.close()
            self._cannot_start()
            return
        finally:
            theirs.close()
        ours.setblocking(False)
        loop.add_reader(ours.fileno(), self._on_answer)
        self._loop, self._sock, self._proc = loop, ours, proc
        self._sent = set()

    def _cannot_start(self) -> None:
        self._failed = True
        logger.warning("audit journal fsync helper could not start; fsync runs in a worker thread")

    def _on_answer(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            answer = sock.recv(64)
        except BlockingIOError:
            return
        except OSError:
            answer = b""
        if not answer.startswith(b"D"):
            self._give_up("stopped")
            return
        if self._waiting:  # the oldest round's answer (even if the task that sent it is gone)
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(int(answer[1:] or b"0"))

    def _give_up(self, how: str) -> None:
        logger.warning("audit journal fsync helper %s; fsync continues in a worker thread", how)
        self._failed = True
        self._stop()

    def _stop(self) -> None:
        sock, proc, loop = self._sock, self._proc, self._loop
        self._sock = self._proc = self._loop = None
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(-1)
        if sock is not None:
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(Exception):
                    loop.remove_reader(sock.fileno())
            sock.close()  # the helper reads the end of its socket and exits
        if proc is not None:
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def forget(self, key: int) -> None:
        if key in self._sent and self._sock is not None:
            self._sent.discard(key)
            try:
                self._sock.send(b"C%d" % key)
            except OSError:
                self._give_up("could not be reached")

    def close(self) -> None:
        self._stop()
