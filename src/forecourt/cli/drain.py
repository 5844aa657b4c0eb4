"""SIGTERM under ``forecourt serve``: drain for ``drain_period_s`` while still serving, then let uvicorn stop.

uvicorn's own SIGTERM handling closes the listener at once, so a load balancer that has not yet seen the
replica go unready sends it connections that are refused. Instead, the first SIGTERM starts the app's drain
(``Services.begin_drain``: ``/readyz`` 503, SSE streams told to reconnect, background loops stop taking work)
and hands the signal to uvicorn only when the drain period is over; uvicorn then stops accepting, waits for
in-flight requests (``timeout_graceful_shutdown``) and runs the lifespan shutdown (``Services.close``: the
gateway drains, the audit writer flushes). A second SIGTERM, or SIGINT, skips what is left of the period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any

from starlette.applications import Starlette

logger = logging.getLogger(__name__)

Handler = Callable[[int, FrameType | None], Any]


def install_drain(app: Starlette) -> None:
    """Hook SIGTERM once the app has started (uvicorn's handlers are in place by then)."""
    services = app.state.services
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(started: Starlette) -> AsyncIterator[Any]:
        async with inner(started) as state:
            restore = hook_sigterm(services.begin_drain, services.settings.drain_period_s)
            try:
                yield state
            finally:
                restore()

    app.router.lifespan_context = lifespan


def hook_sigterm(begin_drain: Callable[[], None], period_s: float) -> Callable[[], None]:
    """Replace the running server's SIGTERM handler by one that drains first; returns the undo.

    Does nothing (and returns a no-op) unless the current handler is a server's bound ``handle_exit``
    (uvicorn's), i.e. outside ``forecourt serve`` the app's behaviour is unchanged.
    """
    previous = signal.getsignal(signal.SIGTERM)
    server = getattr(previous, "__self__", None)
    if not callable(previous) or server is None or not hasattr(server, "should_exit"):
        return lambda: None
    hand_over: Handler = previous
    loop = asyncio.get_running_loop()
    received = [0]

    def stop_now(sig: int) -> None:
        hand_over(sig, None)

    def on_sigterm(sig: int, _frame: FrameType | None) -> None:
        received[0] += 1
        if received[0] > 1:
            logger.info("second SIGTERM: stopping without waiting for the rest of the drain period")
            loop.call_soon_threadsafe(stop_now, sig)
            return
        logger.info("SIGTERM: draining for %.1f s before closing the listener", period_s)
        loop.call_soon_threadsafe(begin_drain)
        loop.call_soon_threadsafe(loop.call_later, max(period_s, 0.0), stop_now, sig)

    signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        with contextlib.suppress(ValueError):  # not on the main thread any more: nothing to restore
            if signal.getsignal(signal.SIGTERM) is on_sigterm:
                signal.signal(signal.SIGTERM, hand_over)

    return restore
