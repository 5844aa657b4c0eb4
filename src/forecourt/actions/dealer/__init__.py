"""The dealer actions (AutomotiveMCP domains inventory, leads, consent, service, deals, plus events).

``register_dealer_actions(catalogue)`` adds every action and the ``dealer-data`` adapter that runs them.
"""

from __future__ import annotations

from dataclasses import replace

from forecourt.actions.base import Action, Catalogue, Handler
from forecourt.actions.dealer import deals, events, inventory, leads, people, service
from forecourt.actions.dealer.common import ADAPTER_ID

_MODULES = (inventory, leads, people, service, deals, events)

__all__ = ["ADAPTER_ID", "dealer_actions", "dealer_handlers", "register_dealer_actions"]


def dealer_actions() -> list[Action]:
    """Every dealer action, sorted by name."""
    return sorted((a for m in _MODULES for a in m.ACTIONS), key=lambda a: a.name)


def dealer_handlers() -> dict[str, Handler]:
    """The handler of every dealer action, by action name."""
    handlers: dict[str, Handler] = {}
    for module in _MODULES:
        handlers.update(module.HANDLERS)
    return handlers


def register_dealer_actions(catalogue: Catalogue, *, with_adapter: bool = True) -> None:
    """Add the dealer actions to ``catalogue`` (and, unless told otherwise, the ``dealer-data`` adapter).

    Args:
        catalogue: The catalogue to fill; action names must not be taken yet.
        with_adapter: Also register :class:`~forecourt.adapters.dealer_data.DealerDataAdapter`.
    """
    for action in dealer_actions():
        # Dealer reads never write, so they may run outside the write lock (SQLite readers never queue).
        catalogue.add(action if action.side_effect else replace(action, store_reads_only=True))
    if with_adapter:
        from forecourt.adapters.dealer_data import DealerDataAdapter

        catalogue.add_adapter(DealerDataAdapter())
