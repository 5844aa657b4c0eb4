"""Scripted failures shared by the fake servers: error responses, rate limits and hanging requests."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

HANG_CAP_S = 30.0


@dataclass
class Scripted:
    """One canned response."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class Faults:
    """What the next requests should suffer; each scripted response is used once, in order."""

    def __init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.hang = False
        self._release = threading.Event()
        self.hung = 0

    def fail(self, status: int, body: Any, headers: dict[str, str] | None = None, *, times: int = 1) -> None:
        with self._lock:
            for _ in range(times):
                self._queue.append(Scripted(status, body, dict(headers or {})))

    def take(self) -> Scripted | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    async def maybe_hang(self) -> None:
        """Block this request until :meth:`release` (or a cap), when hanging is switched on."""
        if self.hang:
            self.hung += 1
            await asyncio.to_thread(self._release.wait, HANG_CAP_S)

    def release(self) -> None:
        self.hang = False
        self._release.set()
