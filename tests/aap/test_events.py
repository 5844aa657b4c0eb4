"""AAP events: lead.status_changed / appointment.status_changed as A2A push notifications, at least once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import text

from forecourt.domain.aap_spec import EVENT_MEDIA_TYPE, errors
from forecourt.domain.people import LeadStatus
from forecourt.domain.service import AppointmentStatus

from .support import TOYOTA, Rig, fixture, payload_of, start_rig, stop_rig, wait_for
from .test_rules import appointment, next_local


class Webhook:
    """A buyer agent's webhook on loopback that fails its first ``failures`` posts."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.calls: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.accepted: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                hook.calls.append(({k.lower(): v for k, v in self.headers.items()}, body))
                ok = len(hook.calls) > hook.failures
                if ok:
                    hook.accepted.append(body)
                self.send_response(200 if ok else 500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def events(self) -> dict[str, dict[str, Any]]:
        """Delivered aap.events by message id (receivers dedupe on it)."""
        out = {}
        for body in self.accepted:
            msg = body["message"]
            out[msg["messageId"]] = msg["parts"][0]["data"]
        return out


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook(failures=2)
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


async def test_status_changes_reach_the_registered_webhook_as_aap_events_at_least_once(
    rig: Rig, webhook: Webhook
) -> None:
    body = fixture("lead-submit-request.minimal.example.json")
    body["appointment"] = appointment(next_local(3, 12))
    push = {"url": webhook.url, "token": "buyer-token-1"}
    data = payload_of(await rig.rpc("lead.submit", body, push=push))["data"]
    lead_id, appt_id = data["lead_id"], data["appointment"]["appointment_id"]
    now = datetime.now(UTC)
    async with rig.services.store.transaction() as uow:
        lead = await uow.leads.get(TOYOTA, lead_id)
        appt = await uow.service.get_appointment(TOYOTA, appt_id)
        assert lead is not None
        assert appt is not None
        await uow.leads.update(lead.model_copy(update={"status": LeadStatus.CONTACTED, "updated_at": now}))
        await uow.service.update_appointment(
            appt.model_copy(update={"status": AppointmentStatus.COMPLETED, "updated_at": now})
        )

    await wait_for(lambda: len(webhook.events()) == 2, timeout_s=20)
    events = webhook.events()
    assert len(webhook.calls) >= 4  # two failed attempts were retried
    kinds = {(e["event_kind"], e["entity_id"], e["status"]) for e in events.values()}
    assert kinds == {("lead.status_changed", lead_id, "working"), ("appointment.status_changed", appt_id, "completed")}
    for event in events.values():
        assert errors("event.schema.json", event) == []
    headers, sent = webhook.calls[-1]
    assert headers["x-a2a-notification-token"] == "buyer-token-1"
    assert headers["x-forecourt-delivery-id"].startswith("push-")
    assert sent["message"]["parts"][0]["mediaType"] == EVENT_MEDIA_TYPE


async def test_push_configs_live_in_the_shared_database(rig: Rig, webhook: Webhook) -> None:
    body = fixture("lead-submit-request.minimal.example.json")
    await rig.rpc("lead.submit", body, push={"url": webhook.url, "token": "t"})
    async with rig.services.store.engine.connect() as conn:  # type: ignore[attr-defined]
        configs = (await conn.execute(text("SELECT count(*) FROM a2a_push_configs"))).scalar_one()
        follows = (await conn.execute(text("SELECT count(*) FROM aap_subscriptions"))).scalar_one()
    assert configs == 1
    assert follows == 1


async def test_webhooks_on_private_networks_are_refused_unless_the_operator_allows_them(
    aap_template: Any, tmp_path: Any, webhook: Webhook
) -> None:
    rig = await start_rig(aap_template[0], aap_template[1], tmp_path, allow_private_targets=False)
    try:
        body = fixture("lead-submit-request.minimal.example.json")
        response = await rig.rpc("lead.submit", body, push={"url": webhook.url, "token": "t"})
        assert response.json()["error"]["code"] == -32602
        async with rig.services.store.transaction() as uow:
            leads, _ = await uow.leads.page(TOYOTA, 0, 500)
        assert not [lead for lead in leads if lead.source_agent == "chatgpt-shopping-agent"]
    finally:
        await stop_rig(rig)
