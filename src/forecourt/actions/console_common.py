"""What the console's actions share: how they are described and who may run them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, ExecutionContext
from forecourt.domain.tenancy import Dealership
from forecourt.errors import Forbidden, TenancyDenied
from forecourt.store.base import Store

COMPANY: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 128}
SHORT: dict[str, Any] = {"type": "string", "maxLength": 200}
DEALERSHIP: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 128}


def console_action(
    name: str,
    description: str,
    props: dict[str, Any],
    required: list[str],
    *,
    adapter: str,
    write: bool,
    company: bool = True,
    domain: str = "admin",
    scope: str | None = None,
    title: str | None = None,
    example: dict[str, Any] | None = None,
) -> Action:
    """An admin-domain action (an MCP tool only outside the admin domain) run by one of the console's adapters."""
    properties = {"company_id": COMPANY, **props} if company else props
    return Action(
        name=name,
        type="tool.run",
        title=title or name,
        description=description,
        input_schema={
            "type": "object",
            "properties": properties,
            "required": (["company_id"] if company else []) + required,
            "additionalProperties": False,
        },
        output_schema=None,
        adapter=adapter,
        scope=scope if scope is not None else ("amcp:admin:write" if write else "amcp:admin:read"),
        side_effect=write,
        idempotent=not write,
        dealer_scoped=False,
        domain=domain,
        tags=("admin", "console"),
        timeout_s=60.0,
        example=example,
    )


def is_operator(ctx: ExecutionContext) -> bool:
    """Whether the caller is the platform operator (an internal principal: console operator, CLI)."""
    return ctx.principal.method == "internal"


def require_admin(ctx: ExecutionContext, company_id: str) -> None:
    """The caller administers ``company_id`` (or is the operator); else :class:`Forbidden`."""
    if is_operator(ctx):
        return
    member = ctx.principal.member
    if member is None or not member.is_admin or ctx.principal.company_id != company_id:
        raise Forbidden("Only the company's administrators may do this.")


async def company_dealerships(store: Store, ctx: ExecutionContext, company_id: str) -> list[Dealership]:
    """The company's dealerships the caller may see (an admin key bound to some rooftops sees only those)."""
    async with store.read() as uow:
        items = await uow.tenancy.list_dealerships(company_id)
    if is_operator(ctx):
        return items
    granted = ctx.principal.dealership_ids
    return [d for d in items if d.id in granted]


async def one_dealership(store: Store, ctx: ExecutionContext, company_id: str, dealership_id: str) -> Dealership:
    """One of the company's dealerships the caller may see; else :class:`TenancyDenied` (no probing)."""
    for d in await company_dealerships(store, ctx, company_id):
        if d.id == dealership_id:
            return d
    raise TenancyDenied()


def text(payload: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string argument, or ``None``."""
    value = payload.get(key)
    return str(value) if isinstance(value, str) and value else None
