"""The tour's last step: a lead sent to the AAP agent arrives as ADF at `forecourt crm sink`, by HTTP and e-mail."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from forecourt.delivery.crm_routes import set_http_endpoint, set_mail_route
from forecourt.delivery.sink import CrmSink, ReceivedLead, format_lead

from .support import TOYOTA, Rig, fixture, payload_of, wait_for


@pytest.fixture
async def sink() -> AsyncIterator[tuple[CrmSink, list[ReceivedLead]]]:
    received: list[ReceivedLead] = []
    receiver = CrmSink(received.append, http_port=0, smtp_port=0)
    await receiver.start()
    try:
        yield receiver, received
    finally:
        await receiver.stop()


async def test_a_lead_submitted_to_the_dealer_agent_arrives_at_the_crm_sink_over_http_and_smtp(
    rig: Rig, sink: tuple[CrmSink, list[ReceivedLead]]
) -> None:
    receiver, received = sink
    store, settings = rig.services.store, rig.services.settings
    await set_http_endpoint(store, settings, TOYOTA, f"http://127.0.0.1:{receiver.http_port}/adf")
    await set_mail_route(store, settings, {
        "dealership_id": TOYOTA, "recipients": ["leads@crm.example"], "host": "127.0.0.1",
        "port": receiver.smtp_port, "security": "none", "sender": "forecourt@dealer.example",
    })  # fmt: skip
    body = fixture("lead-submit-request.example.json")
    body["idempotency_key"] = "sink-tour-1"
    del body["appointment"]
    lead_id = payload_of(await rig.rpc("lead.submit", body))["data"]["lead_id"]
    await wait_for(lambda: len(received) == 2, timeout_s=20)
    by_channel = {lead.channel: lead for lead in received}
    assert by_channel["http"].delivery_id == f"crm-adf-{lead_id}"
    assert by_channel["http"].where == "/adf"
    assert by_channel["smtp"].where == "leads@crm.example"
    for lead in received:
        assert f'<id sequence="1" source="forecourt">{lead_id}</id>' in lead.adf
        assert "\n    <requestdate>" in lead.adf  # indented
        assert format_lead(lead).startswith("--- ADF lead via ")


async def test_the_sink_answers_posts_and_mail_it_did_not_expect(sink: tuple[CrmSink, list[ReceivedLead]]) -> None:
    import aiosmtplib

    receiver, received = sink
    async with httpx.AsyncClient() as client:
        response = await client.post(f"http://127.0.0.1:{receiver.http_port}/any/path", content=b"<adf/>",
                                     headers={"Idempotency-Key": "k1"})  # fmt: skip
    assert response.json() == {"received": True, "delivery_id": "k1"}
    await aiosmtplib.send("Subject: x\r\n\r\n<adf/>\r\n", sender="a@b.example", recipients=["c@d.example"],
                          hostname="127.0.0.1", port=receiver.smtp_port, start_tls=False)  # fmt: skip
    assert [(r.channel, r.adf.strip(), r.where) for r in received] == [
        ("http", "<adf/>", "/any/path"), ("smtp", "<adf/>", "c@d.example"),
    ]  # fmt: skip


def test_the_crm_sink_command_refuses_a_negative_port() -> None:
    result = CliRunner().invoke(cli, ["crm", "sink", "--port", "-5"])
    assert result.exit_code == 2
