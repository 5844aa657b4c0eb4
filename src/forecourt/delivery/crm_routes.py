"""Setting where a dealership's leads go: its CRM's HTTP endpoint and its CRM lead inboxes by e-mail."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from forecourt.delivery.errors import MailRouteNotFound
from forecourt.domain.feeds import CrmMailRoute
from forecourt.domain.people import email_problem
from forecourt.domain.timeutil import utcnow
from forecourt.errors import DealershipNotFound, InvalidParams
from forecourt.netguard import check_url_async
from forecourt.settings import Settings
from forecourt.store.base import Store


async def set_http_endpoint(store: Store, settings: Settings, dealership_id: str, url: str) -> None:
    """Point the dealership's ADF HTTP delivery at ``url`` (SSRF-checked now and before every attempt).

    Raises:
        UnsafeTarget: not http(s), or a private address while private targets are not allowed.
        DealershipNotFound: no such dealership.
    """
    await check_url_async(url, allow_private=settings.allow_private_targets)
    async with store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(dealership_id)
        if dealer is None:
            raise DealershipNotFound(details={"dealership_id": dealership_id})
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"crm_endpoint": url}))


def _field_of(exc: ValidationError) -> str:
    loc = exc.errors()[0]["loc"]
    return ".".join(str(p) for p in loc) or "route"


async def set_mail_route(store: Store, settings: Settings, values: dict[str, Any]) -> CrmMailRoute:
    """Create or replace the dealership's e-mail route.

    Raises:
        InvalidParams: a value is invalid (``details.field`` names it): no inbox, a malformed address, an
            unknown security mode, a password given by value rather than by ``env``/``file``.
        UnsafeTarget: the mail server is on a private address while private targets are not allowed.
        DealershipNotFound: no such dealership.
    """
    try:
        route = CrmMailRoute.model_validate(values)
    except ValidationError as exc:
        raise InvalidParams(details={"field": _field_of(exc)}) from exc
    for field, address in [*(("recipients", r) for r in route.recipients), ("sender", route.sender)]:
        if email_problem(address) is not None:  # the rule every address Forecourt writes to is held to
            raise InvalidParams("Not an e-mail address.", details={"field": field})
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
