"""The ``dealer-data`` adapter: runs the dealer actions against the store, dispatching by action name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import AdapterResult, ExecutionContext, Handler
from forecourt.errors import UnknownAction


class DealerDataAdapter:
    """Runs ``dealer.information``, ``inventory.*``, ``leads.*``, ``customers.*``, ``consent.*``,
    ``service.*``, ``deals.request_trade_value`` and ``events.list``.

    The gateway has already validated the payload against the action's input schema and resolved and
    authorized ``context.dealership_id``; every handler scopes its reads and writes to that dealership.
    """

    id = "dealer-data"

    def __init__(self, handlers: Mapping[str, Handler] | None = None) -> None:
        if handlers is None:
            from forecourt.actions.dealer import dealer_handlers

            handlers = dealer_handlers()
        self._handlers = dict(handlers)

    @property
    def actions(self) -> frozenset[str]:
        """Names of the actions this adapter runs."""
        return frozenset(self._handlers)

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the handler of ``context.action``.

        Raises:
            UnknownAction: The action is not a dealer action.
        """
        handler = self._handlers.get(context.action.name)
        if handler is None:
            raise UnknownAction(details={"action": context.action.name})
        return await handler(payload, context)
