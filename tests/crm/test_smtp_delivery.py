"""ADF leads by e-mail: the outbox delivers to every CRM inbox over STARTTLS or TLS with a login, retries, fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from forecourt.actions.crm_mail import CRM_SMTP_KIND, mail_delivery_id, queue_mail_deliveries
from forecourt.adapters.crm import OutboundPoster
from forecourt.adapters.crm.smtp import SmtpSender
from forecourt.delivery.crm_routes import get_mail_route, set_mail_route
from forecourt.delivery.worker import DeliveryWorker
from forecourt.errors import ForecourtError
from forecourt.settings import Settings
from forecourt.store import SqlStore

from .conftest import DEALER, LOGIN, PASSWORD, MailServer, start_mail_server

T0 = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
ADF = '<?xml version="1.0" encoding="UTF-8"?>\n<?adf version="1.0"?>\n<adf>\n  <prospect status="new" />\n</adf>\n'
SETTINGS = Settings(allow_private_targets=True, delivery_base_backoff_s=30.0, delivery_max_attempts=3)
INBOXES = ("leads@crm-one.example", "adf@crm-two.example")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _route(server: MailServer, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "dealership_id": DEALER, "recipients": INBOXES, "host": "127.0.0.1", "port": server.port,
        "security": "starttls", "sender": "forecourt@dealer.example", "username": LOGIN,
        "password": {"env": "CRM_SMTP_PASSWORD"}, "ca_file": server.cafile,
    }  # fmt: skip
    values.update(overrides)
    return values


@pytest.fixture
async def worker(store: SqlStore) -> AsyncIterator[tuple[DeliveryWorker, Clock]]:
    clock = Clock()
    poster = OutboundPoster(allow_private=True)
    mailer = SmtpSender(allow_private=True, timeout_s=10, environ={"CRM_SMTP_PASSWORD": PASSWORD})
    made = DeliveryWorker(store, SETTINGS, poster, mailer=mailer, clock=clock, jitter=lambda: 0.0)
    try:
        yield made, clock
    finally:
        await poster.aclose()


async def _queue(store: SqlStore, lead_id: str = "lead_1") -> None:
    async with store.transaction() as uow:
        assert await queue_mail_deliveries(uow, lead_id, DEALER, ADF, T0) == 2


async def _deliveries(store: SqlStore, lead_id: str = "lead_1") -> list[Any]:
    async with store.read() as uow:
        return sorted(await uow.deliveries.list_for(lead_id), key=lambda d: d.target)


async def test_a_lead_reaches_every_crm_inbox_as_an_adf_email_over_starttls_with_a_login(
    store: SqlStore, mail_server: MailServer, worker: tuple[DeliveryWorker, Clock]
) -> None:
    await set_mail_route(store, SETTINGS, _route(mail_server))
    await _queue(store)
    assert await worker[0].run_once() == 2
    assert mail_server.logins == [LOGIN, LOGIN]
    assert mail_server.tls_sessions == [True, True]
    assert sorted(r[0] for r in mail_server.recipients) == sorted(INBOXES)
    for message in mail_server.messages:
        delivery_id = mail_delivery_id("lead_1", str(message["To"]))
        assert message["Message-ID"] == f"<{delivery_id}@dealer.example>"
        assert message["X-Forecourt-Delivery-Id"] == delivery_id
        assert message["Subject"] == "ADF lead lead_1"
        assert message.get_content().replace("\r\n", "\n").strip() == ADF.strip()
    rows = await _deliveries(store)
    assert [(d.kind, d.status, d.attempts) for d in rows] == [(CRM_SMTP_KIND, "delivered", 1)] * 2


async def test_a_temporary_refusal_is_retried_with_backoff_and_the_retry_is_the_same_message(
    store: SqlStore, mail_server: MailServer, worker: tuple[DeliveryWorker, Clock]
) -> None:
    await set_mail_route(store, SETTINGS, _route(mail_server, recipients=(INBOXES[0],)))
    async with store.transaction() as uow:
        assert await queue_mail_deliveries(uow, "lead_2", DEALER, ADF, T0) == 1
    mail_server.temporary_failures = 1
    run, clock = worker
    assert await run.run_once() == 1
    [first] = await _deliveries(store, "lead_2")
    assert (first.status, first.attempts, first.last_error) == ("retrying", 1, "SMTP 451")
    assert first.next_attempt_at == T0 + timedelta(seconds=30)
    assert await run.run_once() == 0  # not due yet
    clock.now = T0 + timedelta(seconds=31)
    assert await run.run_once() == 1
    [done] = await _deliveries(store, "lead_2")
    assert (done.status, done.attempts) == ("delivered", 2)
    assert [m["Message-ID"] for m in mail_server.messages] == [f"<{done.id}@dealer.example>"]


class _KilledAfterSending:
    """A mailer whose worker dies (``kill -9``) right after the server took the message, before it is recorded."""

    def __init__(self, mailer: SmtpSender) -> None:
        self.mailer = mailer

    async def send(self, route: Any, message: Any) -> Any:
        await self.mailer.send(route, message)
        raise asyncio.CancelledError


async def test_a_delivery_resent_after_its_worker_died_is_the_same_message_with_the_same_key(
    store: SqlStore, mail_server: MailServer, worker: tuple[DeliveryWorker, Clock]
) -> None:
    """Delivery is at least once: the CRM inbox sees the message twice and de-duplicates on its key."""
    await set_mail_route(store, SETTINGS, _route(mail_server, recipients=(INBOXES[0],)))
    async with store.transaction() as uow:
        assert await queue_mail_deliveries(uow, "lead_3", DEALER, ADF, T0) == 1
    run, clock = worker
    assert run.mailer is not None
    dying = DeliveryWorker(store, SETTINGS, run.poster, mailer=_KilledAfterSending(run.mailer),  # type: ignore[arg-type]
                           clock=clock, jitter=lambda: 0.0)  # fmt: skip
    with pytest.raises(asyncio.CancelledError):
        await dying.run_once()
    [leased] = await _deliveries(store, "lead_3")
    assert (leased.status, leased.attempts) == ("retrying", 1)  # never recorded as delivered
    clock.now = leased.next_attempt_at + timedelta(seconds=1)  # the lease ran out
    assert await run.run_once() == 1
    [done] = await _deliveries(store, "lead_3")
    assert (done.status, done.attempts) == ("delivered", 2)
    first, second = mail_server.messages
    for header in ("Message-ID", "Idempotency-Key", "X-Forecourt-Delivery-Id"):
        assert first[header] == second[header], header
    assert first["Idempotency-Key"] == done.id
    assert first["Message-ID"] == f"<{done.id}@dealer.example>"


async def test_a_refused_login_fails_the_delivery_without_retrying(
    store: SqlStore, mail_server: MailServer, worker: tuple[DeliveryWorker, Clock]
) -> None:
    await set_mail_route(store, SETTINGS, _route(mail_server, username="someone-else"))
    await _queue(store)
    assert await worker[0].run_once() == 2
    assert [(d.status, d.attempts, d.last_error) for d in await _deliveries(store)] == [("failed", 1, "SMTP 535")] * 2
    assert mail_server.messages == []


async def test_a_mail_server_that_is_down_leaves_the_delivery_retrying(
    store: SqlStore, mail_server: MailServer, worker: tuple[DeliveryWorker, Clock]
) -> None:
    closed_port = mail_server.port
    await set_mail_route(store, SETTINGS, _route(mail_server, port=1 if closed_port != 1 else 2))
    await _queue(store)
    assert await worker[0].run_once() == 2
    assert {(d.status, d.attempts) for d in await _deliveries(store)} == {("retrying", 1)}


async def test_implicit_tls_delivers_too(store: SqlStore, tmp_path: Path, worker: tuple[DeliveryWorker, Clock]) -> None:
    state, server = await start_mail_server(tmp_path, implicit_tls=True)
    try:
        await set_mail_route(store, SETTINGS, _route(state, security="tls"))
        await _queue(store)
        assert await worker[0].run_once() == 2
    finally:
        server.close()
        await server.wait_closed()
    assert len(state.messages) == 2
    assert state.tls_sessions == [True, True]


async def _code(coro: Any) -> str:
    with pytest.raises(ForecourtError) as info:
        await coro
    return info.value.code


async def test_a_mail_route_is_validated_when_saved_and_keeps_only_where_the_password_is(
    store: SqlStore, mail_server: MailServer
) -> None:
    production = Settings(allow_private_targets=False)
    assert await _code(set_mail_route(store, production, _route(mail_server))) == "net.unsafe_target"
    assert await _code(set_mail_route(store, SETTINGS, _route(mail_server, recipients=()))) == "invalid_params"
    assert await _code(set_mail_route(store, SETTINGS, _route(mail_server, recipients=("not-an-address",)))) == (
        "invalid_params"
    )
    assert await _code(set_mail_route(store, SETTINGS, _route(mail_server, security="ssl3"))) == "invalid_params"
    assert await _code(set_mail_route(store, SETTINGS, _route(mail_server, password="s3cret"))) == "invalid_params"
    assert await _code(set_mail_route(store, SETTINGS, _route(mail_server, dealership_id="nope"))) == (
        "tenancy.dealership_not_found"
    )
    await set_mail_route(store, SETTINGS, _route(mail_server))
    route = await get_mail_route(store, DEALER)
    assert route.password is not None
    assert (route.password.env, route.recipients) == ("CRM_SMTP_PASSWORD", INBOXES)
    assert PASSWORD not in route.model_dump_json()
