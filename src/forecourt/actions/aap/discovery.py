"""``aap.discover``: which dealer agent a discovery request is about — by id, or by the ``Host`` header's
configured domain (else the operator's default dealership) — with the records its agent card is built from.

It is a gateway action like any other, so the hottest public URL is rate-limited (per client address for
anonymous callers), audited and cached (60 s, per dealership or host) like every call. Agent cards are public
metadata: anyone may read the card of any dealership, private agents included (their card says a credential is
required); nothing else about the dealership is answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext
from forecourt.errors import DealershipNotFound

DISCOVER_ACTION = "aap.discover"
DISCOVER = Action(
    name=DISCOVER_ACTION,
    type="tool.run",
    title="Find a dealer agent",
    description=(
        "The dealership (and its company) whose agent card a discovery request asks for: by `dealer_id`, "
        "or by `host` (a configured dealership domain; otherwise the default dealership)."
    ),
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "dealer_id": {"type": "string", "minLength": 1, "maxLength": 128},
            "host": {"type": "string", "maxLength": 253},
        },
        "additionalProperties": False,
    },
    output_schema=None,
    adapter="aap",
    scope="amcp:inventory:read",
    cacheable=True,
    cache_ttl_s=60.0,
    pii=False,
    dealer_scoped=False,
    anonymous_allowed=True,
    public=True,
    domain="aap",
    tags=("aap", "discovery"),
    store_reads_only=True,
)


def _domain(host: str) -> str:
    return host.split(":", 1)[0].strip().lower().rstrip(".")


async def discover(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """The addressed dealership and its company, as records (the surface renders the documents)."""
    async with ctx.store.transaction() as uow:
        dealer = None
        if isinstance(payload.get("dealer_id"), str):
            dealer = await uow.tenancy.get_dealership(payload["dealer_id"])
        else:
            name = _domain(str(payload.get("host") or ""))
            dealer = await uow.tenancy.get_dealership_by_domain(name) if name else None
            if dealer is None:
                dealer = await uow.tenancy.get_dealership(ctx.settings.default_dealership)
        if dealer is None:
            raise DealershipNotFound()
        company = await uow.tenancy.get_company(dealer.company_id)
    output = {
        "dealership": dealer.model_dump(mode="json"),
        "company": company.model_dump(mode="json") if company is not None else None,
    }
    return AdapterResult(output=output)
