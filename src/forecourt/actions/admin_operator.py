"""The operator's data actions: what the command line writes (inventory feeds, where leads go, example queries) and
the customer data it reads (a lead's ADF), as gateway actions.

``forecourt inventory import``, ``forecourt crm http``, ``forecourt crm mail set|remove``, ``forecourt inventory feed
set|run|remove``, ``forecourt queries install-examples`` and ``forecourt leads adf`` each run one of these through
``Gateway.invoke`` as the operator, so each is checked and audited like any other call: the record names the
operator, the surface ``cli`` and the rooftop (hence the company) it touched. Only the operator may run them (the
command line, or an operator key over the wire); the rules of where a dealership's leads go live here, once.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError

from forecourt.actions.base import Action, ExecutionContext
from forecourt.domain.feeds import CrmMailRoute
from forecourt.domain.people import email_problem
from forecourt.domain.timeutil import utcnow
from forecourt.errors import CompanyNotFound, DealershipNotFound, InvalidParams, MailRouteNotFound
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import check_saved_urls
from forecourt.settings import Settings
from forecourt.store.base import Store

ADAPTER_ID = "tenants"
_ID = {"type": "string", "minLength": 1, "maxLength": 128}
_TEXT = {"type": "string", "maxLength": 500}
_OPTIONAL_TEXT = {"type": ["string", "null"], "maxLength": 500}
FEED_MAX_CHARACTERS = 1_400_000_000
"""The largest feed (base64) the command line sends: a 1 GiB file. Over HTTP the body limit comes first."""


def operator_action(
    name: str,
    description: str,
    props: dict[str, Any],
    required: list[str],
    *,
    write: bool,
    timeout_s: float = 60.0,
    adapter: str = ADAPTER_ID,
) -> Action:
    """An operator-only admin tool (``adapter`` runs it): a write is ``amcp:admin:write`` and not idempotent."""
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description + " Operator only.",
        input_schema={"type": "object", "properties": props, "required": required, "additionalProperties": False},
        output_schema=None,
        adapter=adapter,
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        idempotent=not write,
        dealer_scoped=False,
        domain="admin",
        tags=("admin", "operator"),
        timeout_s=timeout_s,
    )


OPERATOR_ACTIONS: list[Action] = [
    operator_action(
        "admin.inventory.import",
        "Import an inventory feed (CSV or JSON, base64) into one rooftop; answers the import report.",
        {
            "dealership_id": _ID,
            "feed_base64": {"type": "string", "maxLength": FEED_MAX_CHARACTERS, "x-audit": "size"},
            "filename": _TEXT,
            "format": {"enum": ["csv", "json"]},
            "full": {"type": "boolean"},
            "dry_run": {"type": "boolean"},
        },
        ["dealership_id", "feed_base64"],
        write=True,
        timeout_s=3600.0,
    ),
    operator_action(
        "admin.inventory.feed.set",
        "Pull the rooftop's feed from a URL on an interval (checked against the SSRF guard now).",
        {
            "dealership_id": _ID,
            "url": {"type": "string", "minLength": 1, "maxLength": 2000},
            "interval_s": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
            "full": {"type": "boolean"},
            "enabled": {"type": "boolean"},
        },
        ["dealership_id", "url"],
        write=True,
    ),
    operator_action(
        "admin.inventory.feed.run",
        "Pull the rooftop's feed now (unless another replica is pulling it); answers the feed and its report.",
        {"dealership_id": _ID},
        ["dealership_id"],
        write=True,
        timeout_s=3600.0,
    ),
    operator_action(
        "admin.inventory.feed.remove",
        "Stop pulling the rooftop's feed.",
        {"dealership_id": _ID},
        ["dealership_id"],
        write=True,
    ),
    operator_action(
        "admin.crm.endpoint.set",
        "Post every lead of the rooftop as ADF XML to this CRM endpoint (SSRF-checked now and before every post).",
        {"dealership_id": _ID, "url": {"type": "string", "minLength": 1, "maxLength": 2000}},
        ["dealership_id", "url"],
        write=True,
    ),
    operator_action(
        "admin.crm.mail.set",
        "E-mail every lead of the rooftop as ADF to its CRM lead inboxes (the password only by reference).",
        {
            "dealership_id": _ID,
            "recipients": {"type": "array", "items": _TEXT, "minItems": 1, "maxItems": 20},
            "host": _TEXT,
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "security": {"enum": ["starttls", "tls", "none"]},
            "sender": _TEXT,
            "username": _OPTIONAL_TEXT,
            "password": {
                "type": ["object", "null"],
                "properties": {"env": _OPTIONAL_TEXT, "file": _OPTIONAL_TEXT},
                "additionalProperties": False,
            },
            "ca_file": _OPTIONAL_TEXT,
            "enabled": {"type": "boolean"},
        },
        ["dealership_id", "recipients", "host", "sender"],
        write=True,
    ),
    operator_action(
        "admin.crm.mail.show",
        "The rooftop's e-mail route (the password only as where it is read from).",
        {"dealership_id": _ID},
        ["dealership_id"],
        write=False,
    ),
    operator_action(
        "admin.crm.mail.remove",
        "Stop e-mailing the rooftop's leads (deliveries already queued are still attempted).",
        {"dealership_id": _ID},
        ["dealership_id"],
        write=True,
    ),
    operator_action(
        "admin.leads.adf",
        "A lead as ADF 1.0 XML, as the rooftop's CRM receives it (a read of customer data).",
        {"lead_id": _ID, "dealership_id": _ID},
        ["lead_id"],
        write=False,
    ),
    operator_action(
        "admin.queries.install_examples",
        "Define the shipped example named queries for a company (existing ids are kept).",
        {"company_id": _ID},
        ["company_id"],
        write=True,
    ),
]

NOT_TENANCY = frozenset(a.name for a in OPERATOR_ACTIONS)
"""None of these changes companies, rooftops, members or policies: no tenancy cache needs to forget anything."""


# ---------------------------------------------------------------------------------------------- where leads go


async def set_http_endpoint(store: Store, settings: Settings, dealership_id: str, url: str) -> None:
    """Point the dealership's ADF HTTP delivery at ``url`` (SSRF-checked now and before every attempt).

    Checked as every door checks a rooftop's ``crm_endpoint`` (the admin API, the console, ``forecourt apply``).

    Raises:
        InvalidParams: not http(s), or a private address while private targets are not allowed (rule
            ``unsafe_url`` at ``/url``).
        DealershipNotFound: no such dealership.
    """
    problems = await check_saved_urls([("/url", url)], allow_private=settings.allow_private_targets)
    if problems:
        raise InvalidParams("The URL is not an allowed fetch target.", details={"errors": problems})
    async with store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(dealership_id)
        if dealer is None:
            raise DealershipNotFound(details={"dealership_id": dealership_id})
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"crm_endpoint": url}))


def _field_of(exc: ValidationError) -> str:
    loc = exc.errors()[0]["loc"]
    return ".".join(str(p) for p in loc) or "route"


async def set_mail_route(store: Store, settings: Settings, values: Mapping[str, Any]) -> CrmMailRoute:
    """Create or replace the dealership's e-mail route.

    Raises:
        InvalidParams: a value is invalid (``details.field`` names it): no inbox, a malformed address, an
            unknown security mode, a password given by value rather than by ``env``/``file``.
        UnsafeTarget: the mail server is on a private address while private targets are not allowed.
        DealershipNotFound: no such dealership.
    """
    try:
        route = CrmMailRoute.model_validate(dict(values))
    except ValidationError as exc:
        raise InvalidParams(details={"field": _field_of(exc)}) from exc
    for field, address in [*(("recipients", r) for r in route.recipients), ("sender", route.sender)]:
        if email_problem(address) is not None:  # the rule every address Forecourt writes to is held to
            problem = {"path": f"/{field}", "rule": "format", "expected": "email"}
            raise InvalidParams("Not an e-mail address.", details={"field": field, "errors": [problem]})
    if route.password is not None and not (route.password.env or route.password.file):
        raise InvalidParams(details={"field": "password"})
    await check_url_async(f"https://{route.host}:{route.port}/", allow_private=settings.allow_private_targets)
    async with store.transaction() as uow:
        if await uow.tenancy.get_dealership(route.dealership_id) is None:
            raise DealershipNotFound(details={"dealership_id": route.dealership_id})
        await uow.crm_mail.upsert(route, utcnow())
    return route


async def get_mail_route(store: Store, dealership_id: str) -> CrmMailRoute:
    """The dealership's e-mail route; raises ``MailRouteNotFound``."""
    async with store.read() as uow:
        route = await uow.crm_mail.get(dealership_id)
    if route is None:
        raise MailRouteNotFound(details={"dealership_id": dealership_id})
    return route


async def remove_mail_route(store: Store, dealership_id: str) -> None:
    """Forget the dealership's e-mail route; raises ``MailRouteNotFound``."""
    async with store.transaction() as uow:
        if not await uow.crm_mail.delete(dealership_id):
            raise MailRouteNotFound(details={"dealership_id": dealership_id})


# ---------------------------------------------------------------------------------------------- handlers

Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]


def _feed_bytes(payload: Mapping[str, Any]) -> bytes:
    try:
        return base64.b64decode(str(payload["feed_base64"]), validate=True)
    except (binascii.Error, ValueError):
        problem = {"path": "/feed_base64", "rule": "format", "expected": "base64"}
        raise InvalidParams("feed_base64 is not base64.", details={"errors": [problem]}) from None


async def _import(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.inventory_import import import_feed
    from forecourt.inventory_import.watch import reporter

    report = await import_feed(
        ctx.store,
        _feed_bytes(payload),
        str(payload["dealership_id"]),
        full=bool(payload.get("full", False)),
        fmt=payload.get("format"),
        now=ctx.now,
        filename=payload.get("filename"),
        dry_run=bool(payload.get("dry_run", False)),
        progress=reporter(),
    )
    return report.model_dump(mode="json")


def _source_view(source: Any) -> dict[str, Any]:
    data: dict[str, Any] = source.model_dump(mode="json", exclude={"lease_owner"})
    return data


async def _feed_set(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.inventory_import.schedule import save_source

    source = await save_source(
        ctx.store,
        ctx.settings,
        str(payload["dealership_id"]),
        str(payload["url"]),
        interval_s=int(payload.get("interval_s", 3600)),
        full=bool(payload.get("full", False)),
        enabled=bool(payload.get("enabled", True)),
    )
    return _source_view(source)


async def _feed_run(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.inventory_import.schedule import FeedPuller

    puller = FeedPuller(ctx.store, ctx.settings)
    try:
        return _source_view(await puller.run_now(str(payload["dealership_id"])))
    finally:
        await puller.aclose()


async def _feed_remove(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.inventory_import.schedule import remove_source

    await remove_source(ctx.store, str(payload["dealership_id"]))
    return {"dealership_id": str(payload["dealership_id"]), "removed": True}


async def _endpoint_set(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    dealership_id, url = str(payload["dealership_id"]), str(payload["url"])
    await set_http_endpoint(ctx.store, ctx.settings, dealership_id, url)
    return {"dealership_id": dealership_id, "crm_endpoint": url}


async def _mail_set(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    values = {**payload, "recipients": tuple(payload["recipients"])}
    return (await set_mail_route(ctx.store, ctx.settings, values)).model_dump(mode="json")


async def _mail_show(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    return (await get_mail_route(ctx.store, str(payload["dealership_id"]))).model_dump(mode="json")


async def _mail_remove(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    await remove_mail_route(ctx.store, str(payload["dealership_id"]))
    return {"dealership_id": str(payload["dealership_id"]), "removed": True}


async def _lead_adf(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.actions.lead_delivery import lead_adf

    dealership = payload.get("dealership_id")
    adf = await lead_adf(ctx.store, str(payload["lead_id"]), str(dealership) if dealership else None)
    return {"lead_id": str(payload["lead_id"]), "adf": adf}


async def _install_examples(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    from forecourt.adapters.named_queries.examples import install_examples

    company_id = str(payload["company_id"])
    async with ctx.store.read() as uow:
        if await uow.tenancy.get_company(company_id) is None:
            raise CompanyNotFound(
                f"company {company_id} does not exist; create it with `forecourt companies create {company_id}`",
                details={"company_id": company_id},
            )
    return {"company_id": company_id, "added": await install_examples(ctx.store, company_id, now=ctx.now)}


OPERATOR_HANDLERS: dict[str, Handler] = {
    "admin.inventory.import": _import,
    "admin.inventory.feed.set": _feed_set,
    "admin.inventory.feed.run": _feed_run,
    "admin.inventory.feed.remove": _feed_remove,
    "admin.crm.endpoint.set": _endpoint_set,
    "admin.crm.mail.set": _mail_set,
    "admin.crm.mail.show": _mail_show,
    "admin.crm.mail.remove": _mail_remove,
    "admin.leads.adf": _lead_adf,
    "admin.queries.install_examples": _install_examples,
}
