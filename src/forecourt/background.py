"""Work that lives as long as the app: loops started with it and closers run when it stops.

Bootstrap hands one :class:`BackgroundTasks` to the parts that need it (the MCP session manager, delivery
loops, upstream sync) instead of the whole process wiring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class BackgroundTasks:
    """Loops to start with the app and closers to run at shutdown, in registration order."""

    def __init__(
        self,
        loops: list[Callable[[], Any]],
        closers: list[Callable[[], Any]],
        drainers: list[Callable[[], Any]] | None = None,
    ) -> None:
        self.loops = loops
        self.closers = closers
        self.drainers = drainers if drainers is not None else []

    def run(self, loop: Callable[[], Any]) -> None:
        """Start ``loop()`` (a coroutine function) with the app; it is cancelled at shutdown."""
        self.loops.append(loop)

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Call ``closer()`` (sync or async) when the app stops."""
        self.closers.append(closer)

    def on_drain(self, stop: Callable[[], Any]) -> None:
        """Call ``stop()`` when the process starts draining (SIGTERM): a loop that takes work stops taking it."""
        self.drainers.append(stop)
