"""``build_catalogue()``: every action Forecourt offers, registered from ``actions/`` before the gateway is built.

Dealer actions (inventory, leads, customers and consent, service, appointments, deals, events) carry their
handlers; families run by an outbound integration (model runtimes, the BPMN runner's admin, knowledge, named
queries, upstream MCP servers) are registered with the adapter that runs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from forecourt.actions import appointments, customers, deals, events, inventory, leads, service
from forecourt.actions.base import Action, Catalogue, Handler

if TYPE_CHECKING:
    from forecourt.actions.admin_data import DemoLoader
    from forecourt.adapters.workflow.runner import WorkflowRunner
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.auth.operator import OperatorKeys
    from forecourt.gateway.pipeline import Gateway

DEALER_MODULES: tuple[ModuleType, ...] = (inventory, leads, customers, service, appointments, deals, events)


def dealer_actions() -> list[Action]:
    """Every dealer action, sorted by name."""
    return sorted((a for m in DEALER_MODULES for a in m.ACTIONS), key=lambda a: a.name)


def dealer_handlers() -> dict[str, Handler]:
    """The handler of every dealer action, by action name."""
    handlers: dict[str, Handler] = {}
    for module in DEALER_MODULES:
        handlers.update(module.HANDLERS)
    return handlers


def register_dealer_actions(catalogue: Catalogue) -> None:
    """Add the dealer actions with their handlers; reads get a read-only store view (SQLite readers never queue)."""
    handlers = dealer_handlers()
    for action in dealer_actions():
        catalogue.add(action if action.side_effect else replace(action, store_reads_only=True), handlers[action.name])


TenancyChanged = Callable[[tuple[str, ...]], Awaitable[None]]
"""``await changed(company_ids)`` after a change to tenants (members, keys, policies, rooftops) committed."""


@dataclass
class CatalogueParts:
    """What some action families need from the rest of the process."""

    adapter_defaults: Mapping[str, Mapping[str, Any]]
    """The operator's adapter configurations (model runtimes)."""
    gateway: Callable[[], Gateway]
    """The gateway, once built (``model.invoke`` routes its calls through it)."""
    api_keys: ApiKeyService | None = None
    """The API-key service the admin actions use (``None``: no admin actions)."""
    on_tenancy_change: TenancyChanged | None = None
    """Told, after a change to tenants committed, which companies it touched (``"*"``: any)."""
    operator_keys: OperatorKeys | None = None
    """The operator-key service the operator's tenant actions use (``None``: no operator actions)."""
    demo_loader: DemoLoader | None = None
    """What ``admin.demo.load`` runs (the demo generators sit above the actions; ``None``: it is refused)."""


@dataclass
class BuiltCatalogue:
    """The catalogue and the long-lived parts its registration made."""

    catalogue: Catalogue
    workflows: WorkflowRunner
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


def build_catalogue(parts: CatalogueParts) -> BuiltCatalogue:
    """Every action Forecourt offers, with what runs each."""
    from forecourt.actions.aap.skills import register_aap_actions
    from forecourt.actions.admin import AdminAdapter, register_admin_actions
    from forecourt.actions.knowledge import register_knowledge
    from forecourt.actions.models import register_model_actions
    from forecourt.actions.queries import register_named_queries
    from forecourt.actions.upstreams import register_upstream_actions
    from forecourt.actions.workflows import register_workflows

    catalogue = Catalogue()
    register_dealer_actions(catalogue)
    register_aap_actions(catalogue)
    runner = register_workflows(catalogue)
    register_knowledge(catalogue)
    from forecourt.actions.agents import register_agent_actions
    from forecourt.actions.vectors import register_vector_actions

    register_vector_actions(catalogue)
    register_agent_actions(catalogue)
    register_named_queries(catalogue)
    register_upstream_actions(catalogue)
    closers = register_model_actions(catalogue, parts.adapter_defaults, parts.gateway)
    if parts.api_keys is not None:
        register_admin_actions(catalogue)
        catalogue.add_adapter(AdminAdapter(parts.api_keys, on_change=parts.on_tenancy_change))
    if parts.operator_keys is not None:
        from forecourt.actions.admin_tenants import TenantsAdapter, register_tenant_actions

        register_tenant_actions(catalogue)
        catalogue.add_adapter(TenantsAdapter(parts.operator_keys, on_change=parts.on_tenancy_change))
        from forecourt.actions.admin_data import register_data_actions

        register_data_actions(catalogue, parts.demo_loader, parts.on_tenancy_change)
    return BuiltCatalogue(catalogue=catalogue, workflows=runner, closers=closers)
