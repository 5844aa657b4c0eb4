"""``tools.listChanged``: declared in ``initialize``, and announced when an upstream change alters a list.

A company's upstream MCP servers add tools to its members' ``tools/list``; when an upstream announces a change
(its own ``notifications/tools/list_changed``), is registered, removed, reconnected, or a held tool is approved,
the hub rebuilds its actions and tells its ``tool_listeners`` (``adapters/upstream/hub.py``). Every replica runs
its own hub with its own upstream sessions, so each one hears the change and tells its own clients:

- 2025-11-25 HTTP sessions: ``notifications/tools/list_changed`` on the session's standalone ``GET`` stream
  (:class:`~.sessions.LegacySessions`), for every open stream of a member of the upstream's company;
- stdio (``forecourt mcp --stdio``): the same notification on the session's stdout (:mod:`.stdio`);
- 2026-07-28: on ``subscriptions/listen`` streams that asked for ``toolsListChanged``, of that company only.

A POST's own response stream carries no change of someone else's doing. ``find_tools`` with ``load`` announces
its change on the call's stream (``server.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import ListenHandler, ServerEvent, SubscriptionBus, ToolsListChanged

if TYPE_CHECKING:
    from mcp.server.models import InitializationOptions

    from forecourt.adapters.upstream.hub import UpstreamHub

logger = logging.getLogger(__name__)

Sink = Callable[[], None]
MAX_LISTENS = 4096
"""Open ``subscriptions/listen`` streams per company on one replica."""


class ForecourtServer(Server[Any]):
    """The SDK's server declaring ``tools.listChanged: true`` in the 2025-11-25 handshake.

    (In the 2026-07-28 era the SDK derives every ``listChanged`` from ``subscriptions/listen`` being served.)
    """

    tool_changes: ToolListChanges | None = None
    """Set by the surface: where stdio registers its session (see :mod:`.stdio`)."""
    stdio_company: str | None = None
    """The company of the stdio caller (``None`` over HTTP)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


class _CompanyBus:
    """One company's view of the shared subscription bus: all of it, plus that company's tool list changes."""

    def __init__(self, shared: SubscriptionBus) -> None:
        self.shared = shared
        self._own: dict[object, Callable[[ServerEvent], None]] = {}

    async def publish(self, event: ServerEvent) -> None:
        self.deliver(event)

    def deliver(self, event: ServerEvent) -> None:
        """Hand ``event`` to this company's listen streams only."""
        for listener in list(self._own.values()):
            try:
                listener(event)
            except Exception:  # one stream must not keep the others from hearing it
                logger.debug("a listen stream refused an event", exc_info=True)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        undo_shared = self.shared.subscribe(listener)
        token = object()
        self._own[token] = listener

        def unsubscribe() -> None:
            undo_shared()
            self._own.pop(token, None)

        return unsubscribe


class ToolListChanges:
    """Who to tell, per company, that its members' tool lists changed (this replica's open streams)."""

    def __init__(self, hub: UpstreamHub | None, shared_bus: SubscriptionBus | None = None) -> None:
        self._sinks: dict[str, set[Sink]] = {}
        self._hub = hub
        self._shared_bus = shared_bus
        self._listen: dict[str, tuple[_CompanyBus, ListenHandler]] = {}
        if hub is not None:
            hub.tool_listeners.append(self.changed)

    def listener_for(self, company_id: str) -> ListenHandler | None:
        """The ``subscriptions/listen`` handler of ``company_id``'s callers (``None`` without a shared bus)."""
        if self._shared_bus is None:
            return None
        found = self._listen.get(company_id)
        if found is None:
            bus = _CompanyBus(self._shared_bus)
            found = self._listen[company_id] = (bus, ListenHandler(bus, max_subscriptions=MAX_LISTENS))
        return found[1]

    def close(self) -> None:
        """Stop listening to the hub; end the companies' listen streams gracefully."""
        if self._hub is not None and self.changed in self._hub.tool_listeners:
            self._hub.tool_listeners.remove(self.changed)
        self._sinks.clear()
        for _, handler in self._listen.values():
            handler.close()

    def watch(self, company_id: str, sink: Sink) -> Callable[[], None]:
        """Call ``sink`` whenever a change alters the tools of ``company_id``'s members; returns the undo."""
        self._sinks.setdefault(company_id, set()).add(sink)

        def unwatch() -> None:
            sinks = self._sinks.get(company_id)
            if sinks is not None:
                sinks.discard(sink)
                if not sinks:
                    del self._sinks[company_id]

        return unwatch

    def changed(self, upstream_key: str) -> None:
        """A hub listener: the upstream ``company/id`` changed its tools."""
        company_id = upstream_key.split("/", 1)[0]
        listen = self._listen.get(company_id)
        if listen is not None:
            listen[0].deliver(ToolsListChanged())
        for sink in list(self._sinks.get(company_id, ())):
            try:
                sink()
            except Exception:  # one closed stream must not keep the others from hearing it
                logger.debug("a tool list change could not be announced on one stream", exc_info=True)

    def watching(self, company_id: str) -> int:
        """How many streams of ``company_id`` are told (for tests and diagnostics)."""
        return len(self._sinks.get(company_id, ()))
