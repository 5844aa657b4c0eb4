"""The console's sign-in, session, CSRF, tenancy and audit rules, driven through the ASGI app."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from console.conftest import OPERATOR_KEY, csrf_of, sign_in
from gateway.support import BAY, BAY_SJ, MOTOR, TOYOTA, Rig


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def test_pages_need_a_session_and_sign_in_refuses_a_non_admin_key(rig: Rig) -> None:
    async with _client(rig) as client:
        assert (await client.get("/console/tenants")).headers["location"].endswith("/console/signin")
        refused = await client.post("/console/signin", data={"api_key": rig.keys["crm"]})
        assert refused.status_code == 403
        assert "(auth." in refused.text
        bad = await client.post("/console/signin", data={"api_key": "fc_nope"})
        assert bad.status_code == 401


async def test_session_cookie_is_httponly_lax_and_pages_carry_a_strict_csp(rig: Rig) -> None:
    async with _client(rig) as client:
        response = await client.post("/console/signin", data={"api_key": rig.keys["admin"]})
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=lax" in cookie
        assert "secure" not in cookie  # plain HTTP here; over TLS the cookie is Secure
        page = await client.get("/console/")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "<script>" not in page.text
        assert " style=" not in page.text


async def test_forms_without_the_csrf_token_are_refused_and_change_nothing(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        response = await client.post("/console/tenants/dealerships", data={"id": "csrf-rooftop", "name": "x"})
        assert response.status_code == 403
        assert "console.csrf_rejected" in response.text
        tenants = await client.get("/console/tenants")
        assert "csrf-rooftop" not in tenants.text


async def test_a_company_admin_never_sees_or_changes_another_company(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        await client.post("/console/company", data={"csrf": csrf, "company_id": BAY})
        tenants = await client.get("/console/tenants")
        assert MOTOR in tenants.text
        assert BAY_SJ not in tenants.text
        leads = await client.get("/console/leads", params={"dealership_id": BAY_SJ})
        assert leads.status_code == 403
        assert "auth.tenancy_denied" in leads.text
        upload = await client.post(
            f"/console/inventory/{BAY_SJ}/upload",
            data={"csrf": csrf},
            files={"feed": ("feed.csv", b"vin,price\n", "text/csv")},
        )
        assert upload.status_code == 403
    # The gateway refuses the same reads when asked directly with the admin's key.
    response = await rig.call("console.audit.search", {"company_id": BAY}, key="admin")
    assert response.json()["status"]["error"]["code"] == "auth.forbidden"


async def test_every_console_change_leaves_an_audit_record_with_surface_console(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        created = await client.post(
            "/console/tenants/dealerships",
            data={"csrf": csrf, "id": "demo-new-rooftop", "name": "New Rooftop", "public_agent": "on"},
        )
        assert created.status_code == 303
        key_page = await client.post("/console/tenants/keys", data={"csrf": csrf, "member_id": "crm-agent"})
        assert key_page.status_code == 200
        assert "only time the key is shown" in key_page.text
        tenants = await client.get("/console/tenants")
        assert "demo-new-rooftop" in tenants.text
    records = [r for r in await rig.audit(MOTOR) if r.surface == "console"]
    actions = {r.action for r in records}
    assert {"admin.dealerships.upsert", "admin.keys.create", "console.rooftops.page"} <= actions
    assert all(r.member_id == "ops-admin" for r in records)


async def test_operator_sees_every_company_and_acts_as_the_operator(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, OPERATOR_KEY)
        await client.post("/console/company", data={"csrf": csrf, "company_id": BAY})
        tenants = await client.get("/console/tenants")
        assert BAY_SJ in tenants.text
    records = [r for r in await rig.audit(BAY) if r.surface == "console"]
    assert records
    assert all(r.member_id == "operator" for r in records)


async def test_an_operator_key_from_the_command_line_signs_in_as_the_operator(rig: Rig) -> None:
    from forecourt.gateway.auth.operator import OperatorKeys

    keys = OperatorKeys(rig.services.store, rig.services.settings.api_key_pepper)
    issued = await keys.create("console-test")
    assert issued is not None
    async with _client(rig) as client:
        csrf = await sign_in(client, issued.key)
        await client.post("/console/company", data={"csrf": csrf, "company_id": BAY})
        assert BAY_SJ in (await client.get("/console/tenants")).text
    await keys.revoke(issued.record.prefix)
    async with _client(rig) as client:
        refused = await client.post("/console/signin", data={"api_key": issued.key})
        assert refused.status_code == 401


async def test_revealing_a_lead_is_audited_and_masked_otherwise(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        listing = await client.get("/console/leads", params={"dealership_id": TOYOTA})
        assert listing.status_code == 200
        assert "***@" in listing.text
        lead_path = listing.text.split(f"/console/leads/{TOYOTA}/", 1)[1].split('"', 1)[0]
        masked = await client.get(f"/console/leads/{TOYOTA}/{lead_path}")
        assert "Reveal contact details" in masked.text
        shown = await client.post(
            f"/console/leads/{TOYOTA}/{lead_path}", data={"csrf": csrf_of(masked.text), "reveal": "1"}
        )
        assert shown.status_code == 200
        assert "Reveal contact details" not in shown.text
    reveals = [r for r in await rig.audit(MOTOR) if r.action == "console.leads.show" and r.args_redacted.get("reveal")]
    assert len(reveals) == 1
    assert reveals[0].surface == "console"


async def test_a_session_ends_after_the_idle_timeout_and_is_secure_over_tls(rig: Rig) -> None:
    from forecourt.surfaces.console.session import COOKIE, Session, Sessions

    sessions = Sessions(rig.services.settings)
    idle = Session("key", rig.keys["admin"], MOTOR, "ops-admin", "Operations admin")
    idle.last -= rig.services.settings.console_idle_timeout_s + 1
    async with _client(rig) as client:
        client.cookies.set(COOKIE, sessions.dump(idle), domain="forecourt.test", path="/console/")
        response = await client.get("/console/tenants")
        assert response.status_code == 303
        assert response.headers["location"].endswith("/console/signin")
    tls = httpx.AsyncClient(transport=rig.client._transport, base_url="https://forecourt.test")
    async with tls:
        signed_in = await tls.post("/console/signin", data={"api_key": rig.keys["admin"]})
        assert "secure" in signed_in.headers["set-cookie"].lower()


async def test_a_cross_origin_post_is_refused_even_with_the_token(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        response = await client.post(
            "/console/tenants/dealerships",
            data={"csrf": csrf, "id": "cross-origin-rooftop", "name": "x"},
            headers={"Origin": "https://evil.example"},
        )
        assert response.status_code == 403
        assert "console.csrf_rejected" in response.text


async def test_audit_export_is_filtered_jsonl_and_csv_without_formulas(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        await client.get("/console/tenants")
        assert await rig.services.audit.flush()
        jsonl = await client.get("/console/audit/export.jsonl", params={"surface": "console", "action": "admin.*"})
        lines = [line for line in jsonl.text.splitlines() if line]
        assert lines
        assert all('"surface":"console"' in line for line in lines)
        csv_body = await client.get("/console/audit/export.csv", params={"surface": "console"})
        assert csv_body.headers["content-type"].startswith("text/csv")
        assert csv_body.text.splitlines()[0].startswith("id,occurred_at,company_id")


async def test_inventory_shows_counts_freshness_and_the_last_scheduled_import(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    @dataclass
    class Source:
        dealership_id: str
        url: str = "https://feeds.example.com/toyota.csv?token=secret"
        enabled: bool = True
        last_run_at: datetime | None = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
        last_status: str = "ok"
        next_run_at: datetime | None = None
        last_report: dict[str, int] = field(default_factory=lambda: {"rejected": 2})

    async def list_sources(store: object) -> list[Source]:
        return [Source(TOYOTA), Source(BAY_SJ)]

    schedule = types.ModuleType("forecourt.inventory_import.schedule")
    schedule.list_sources = list_sources  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "forecourt.inventory_import.schedule", schedule)
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/inventory")
    assert page.status_code == 200
    assert "2026-03-02T14:00:00 ok, 2 rows rejected" in page.text
    assert "feeds.example.com" in page.text
    assert "token=secret" not in page.text
    assert BAY_SJ not in page.text


async def test_a_feed_uploaded_in_the_console_is_imported_with_its_row_errors(rig: Rig) -> None:
    feed = (Path(__file__).parents[1] / "fixtures" / "feeds" / "bad_rows.csv").read_bytes()
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        response = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf},
            files={"feed": ("feed.csv", feed, "text/csv")},
            headers={"X-Console-Fragment": "1"},
        )
    assert response.status_code == 200
    assert " rejected" in response.text
    assert "invalid_vin" in response.text
    assert "<html" not in response.text
    records = [r for r in await rig.audit(MOTOR) if r.action == "console.inventory.import"]
    assert [r.surface for r in records] == ["console"]
    assert records[0].args_redacted["upload"].startswith("upl_")  # a one-time handle, never the feed
    assert "feed" not in records[0].args_redacted


def _feed(rows: int) -> bytes:
    """A CSV feed of ``rows`` valid used Camrys with distinct VINs."""
    from forecourt.domain.vin import with_check_digit

    lines = ["vin,stock,year,make,model,trim,condition,price,mileage,status"]
    for n in range(rows):
        vin = with_check_digit(f"4T1DAACK0SU{n:06d}")
        lines.append(f'{vin},P{n},2025,Toyota,Camry,LE,used,"$24,995",{1000 + n},available')
    return ("\n".join(lines) + "\n").encode()


async def test_a_console_upload_streams_the_imports_progress_batch_by_batch_then_its_report(rig: Rig) -> None:
    feed = _feed(4_500)
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        response = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf},
            files={"feed": ("feed.csv", feed, "text/csv")},
            headers={"X-Console-Fragment": "1", "X-Console-Progress": "1"},
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    lines = [json.loads(line) for line in response.text.splitlines()]
    steps = [(line["done"], line["total"]) for line in lines if line["phase"] == "import"]
    assert steps[0] == (0, 4_500)
    assert steps[-1] == (4_500, 4_500)
    assert len(steps) >= 4  # before the first batch, after each of three batches of 2,000 rows, at the end
    assert [done for done, _ in steps] == sorted(done for done, _ in steps)
    assert lines[-1]["phase"] == "done"
    assert "4500 rows: 4500 created" in lines[-1]["html"]


async def test_a_refused_console_import_streams_an_error_line_and_writes_nothing(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        response = await client.post(
            f"/console/inventory/{BAY_SJ}/upload",
            data={"csrf": csrf},
            files={"feed": ("feed.csv", _feed(10), "text/csv")},
            headers={"X-Console-Fragment": "1", "X-Console-Progress": "1"},
        )
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines[-1]["phase"] == "error"
    assert lines[-1]["code"].startswith("auth.")
    assert not [line for line in lines if line["phase"] == "import"]


async def test_revoking_the_key_a_session_signed_in_with_ends_that_session_at_once(rig: Rig) -> None:
    async with _client(rig) as admin, _client(rig) as other:
        csrf = await sign_in(admin, rig.keys["admin"])
        page = await admin.post("/console/tenants/keys", data={"csrf": csrf, "member_id": "ops-admin"})
        new_key = page.text.split('id="new_key" class="mono" readonly value="', 1)[1].split('"', 1)[0]
        await sign_in(other, new_key)
        assert (await other.get("/console/tenants")).status_code == 200
        prefix = new_key.split("_")[1]
        revoked = await admin.post(f"/console/tenants/keys/{prefix}/revoke", data={"csrf": csrf})
        assert revoked.status_code == 303, revoked.text
        after = await other.get("/console/tenants")
        assert after.status_code == 303
        assert after.headers["location"].endswith("/console/signin")
