"""Leads reach the dealer: ADF 1.0 to the CRM endpoint with retries, status visible, nothing lost."""

from __future__ import annotations

import asyncio
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from typer.testing import CliRunner

from forecourt.cli.main import app as cli

from .support import TOYOTA, Rig, fixture, payload_of, start_rig, stop_rig, wait_for


class FlakyCrm:
    """A loopback CRM that answers 503 to its first ``failures`` posts, then 200; dedupes on Idempotency-Key."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.posts: list[tuple[str, str, str]] = []
        self.accepted: dict[str, str] = {}
        crm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                key = self.headers.get("Idempotency-Key", "")
                crm.posts.append((key, self.headers.get("Content-Type", ""), body))
                if len(crm.posts) <= crm.failures:
                    self.send_response(503)
                else:
                    crm.accepted.setdefault(key, body)
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/adf"


@pytest.fixture
def crm() -> Iterator[FlakyCrm]:
    made = FlakyCrm(failures=5)
    made.thread.start()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


async def _point_crm(rig: Rig, url: str) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(TOYOTA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"crm_endpoint": url}))


def _lead(n: int) -> dict[str, Any]:
    body = fixture("lead-submit-request.example.json")
    body["customer"]["email"] = f"buyer{n}@example.com"
    body["customer"]["first_name"] = "Zoë <&> O'Brien" if n == 0 else f"Buyer{n}"
    body["idempotency_key"] = f"crm-test-{n}"
    del body["appointment"]
    return body


async def test_a_crm_that_is_down_receives_every_lead_exactly_once_in_adf_after_it_recovers(
    rig: Rig, crm: FlakyCrm
) -> None:
    await _point_crm(rig, crm.url)
    lead_ids = [payload_of(await rig.rpc("lead.submit", _lead(n)))["data"]["lead_id"] for n in range(3)]
    await wait_for(lambda: len(crm.accepted) == 3, timeout_s=20)
    assert len(crm.posts) >= 3 + 5  # the first five posts failed and were retried
    assert sorted(crm.accepted) == sorted(f"crm-adf-{lead_id}" for lead_id in lead_ids)
    for key, body in crm.accepted.items():
        root = ET.fromstring(body.split("?>", 2)[-1])
        assert root.tag == "adf"
        prospect = root.find("prospect")
        assert prospect is not None
        assert prospect.findtext("id") == key.removeprefix("crm-adf-")
        assert prospect.find("vehicle[@interest='buy'][@status='used']") is not None
        assert prospect.find("vehicle[@interest='trade-in']") is not None
        assert prospect.findtext("customer/contact/email", "").endswith("@example.com")
        assert prospect.findtext("vendor/vendorname") == "Demo Toyota San Francisco"
    names = {
        ET.fromstring(b.split("?>", 2)[-1]).findtext("prospect/customer/contact/name[@part='first']")
        for b in crm.accepted.values()
    }
    assert "Zoë <&> O'Brien" in names  # escaped on the wire, intact after parsing
    assert all(ctype.startswith("application/xml") for _, ctype, _ in crm.posts)

    async def delivered() -> bool:
        async with rig.services.store.transaction() as uow:
            rows = [d for lead_id in lead_ids for d in await uow.deliveries.list_for(lead_id)]
        return all(d.status == "delivered" for d in rows) and len(rows) == 3

    await wait_for(delivered)


async def test_delivery_status_is_visible_in_the_admin_api(rig: Rig, crm: FlakyCrm) -> None:
    crm.failures = 0
    await _point_crm(rig, crm.url)
    lead_id = payload_of(await rig.rpc("lead.submit", _lead(7)))["data"]["lead_id"]
    await wait_for(lambda: len(crm.accepted) == 1)
    url = f"/admin/v1/dealerships/{TOYOTA}/leads/{lead_id}/deliveries"
    headers = {"Authorization": f"Bearer {rig.keys['crm']}"}

    async def status() -> Any:
        body = (await rig.client.get(url, headers=headers)).json()
        return body if body["deliveries"][0]["status"] == "delivered" else None

    body = await wait_for(status)
    assert body["deliveries"][0]["kind"] == "crm_adf"
    assert body["deliveries"][0]["attempts"] == 1
    assert (await rig.client.get(url)).status_code == 401


async def test_crm_endpoints_on_private_networks_are_refused_unless_the_operator_allows_them(
    aap_template: Any, tmp_path: Any, crm: FlakyCrm
) -> None:
    rig = await start_rig(aap_template[0], aap_template[1], tmp_path, allow_private_targets=False)
    try:
        await _point_crm(rig, crm.url)
        lead_id = payload_of(await rig.rpc("lead.submit", _lead(8)))["data"]["lead_id"]

        async def failed() -> Any:
            async with rig.services.store.transaction() as uow:
                rows = await uow.deliveries.list_for(lead_id)
            return rows if rows and rows[0].status == "failed" else None

        rows = await wait_for(failed)
        assert "SSRF" in (rows[0].last_error or "")
        assert crm.posts == []
    finally:
        await stop_rig(rig)


def test_leads_show_and_leads_adf_print_status_and_the_adf_xml(aap_template: Any, tmp_path: Any) -> None:
    async def submit() -> tuple[str, str]:
        rig = await start_rig(aap_template[0], aap_template[1], tmp_path)
        try:
            lead_id = payload_of(await rig.rpc("lead.submit", _lead(9)))["data"]["lead_id"]
            return lead_id, rig.services.settings.database_url
        finally:
            await stop_rig(rig)

    lead_id, url = asyncio.run(submit())
    env = {"FORECOURT_DATABASE_URL": url, "FORECOURT_LOG_JSON": "false"}
    runner = CliRunner()
    shown = runner.invoke(cli, ["leads", "show", lead_id], env=env)
    assert shown.exit_code == 0, shown.output
    assert '"no_endpoint"' in shown.output  # the demo dealership has no CRM endpoint configured
    adf = runner.invoke(cli, ["leads", "adf", lead_id], env=env)
    assert adf.exit_code == 0, adf.output
    assert adf.output.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<?adf version="1.0"?>')
    assert ET.fromstring(adf.output.split("?>", 2)[-1]).findtext("prospect/id") == lead_id
    missing = runner.invoke(cli, ["leads", "show", "lead_nope"], env=env)
    assert missing.exit_code == 1  # refused: no such lead
