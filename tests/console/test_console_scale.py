"""The console at the size of a group: tables read a page at a time on the server, a company picker that refuses
an unknown id, forms that keep their input when refused, approvals that show what they approve, feed uploads past
1 MiB, and the "try a tool" panel. (Timings are measured in bench/console_pages.py, never asserted here.)"""

from __future__ import annotations

import re
from typing import Any

import httpx

from console.conftest import OPERATOR_KEY, csrf_of, sign_in
from forecourt.domain.tenancy import Dealership
from gateway.support import BAY, MOTOR, TOYOTA, Rig

DEFAULT_POLICY = f"{MOTOR}-default"


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def _add_rooftops(rig: Rig, count: int) -> None:
    async with rig.services.store.transaction() as uow:
        for n in range(count):
            await uow.tenancy.upsert_dealership(
                Dealership(id=f"zz-rooftop-{n:03d}", company_id=MOTOR, name=f"Scale Rooftop {n:03d}")
            )


def _rows(html: str, marker: str) -> list[str]:
    return re.findall(rf"<code>({marker}[^<]*)</code>", html)


async def test_rooftops_are_searched_sorted_and_paged_on_the_server(rig: Rig) -> None:
    await _add_rooftops(rig, 60)
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        first = await client.get("/console/tenants")
        shown = _rows(first.text, "zz-rooftop-")
        assert 0 < len(shown) <= 25
        assert "of 62" in first.text  # 60 added, and the demo's two
        second = await client.get("/console/tenants", params={"r_offset": 25})
        assert set(_rows(second.text, "zz-rooftop-")).isdisjoint(shown)
        found = await client.get("/console/tenants", params={"r_q": "ROOFTOP 04"})
        assert _rows(found.text, "zz-rooftop-") == [f"zz-rooftop-{n:03d}" for n in range(40, 50)]
        backwards = await client.get("/console/tenants", params={"r_sort": "id", "r_order": "desc"})
        assert _rows(backwards.text, "zz-rooftop-")[0] == "zz-rooftop-059"
        assert 'aria-sort="descending"' in backwards.text
    pages = [r for r in await rig.audit(MOTOR) if r.action == "console.rooftops.page"]
    assert len(pages) >= 4  # each page is its own audited gateway call


async def test_leads_are_one_page_of_the_whole_company_filtered_by_rooftop_and_status(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        everything = await client.get("/console/leads")
        assert everything.status_code == 200
        assert "demo-honda-oak" in everything.text
        assert TOYOTA in everything.text
        toyota = await client.get("/console/leads", params={"dealership_id": TOYOTA, "limit": 5})
        assert "demo-honda-oak</code>" not in toyota.text
        assert "<option selected>new</option>" not in toyota.text
        new_only = await client.get("/console/leads", params={"status": "new"})
        statuses = re.findall(r"</td><td>([a-z_]+)</td><td>[a-z_]+</td><td>", new_only.text)
        assert statuses
        assert set(statuses) == {"new"}
        searched = await client.get("/console/leads", params={"q": "zzzz-nobody"})
        assert "No rows match." in searched.text
    records = [r for r in await rig.audit(MOTOR) if r.action == "console.leads.page"]
    assert any(r.args_redacted.get("q") == "[11 characters]" for r in records)  # a search is never in the log


async def test_the_operator_picks_a_company_from_the_list_and_an_unknown_id_is_refused_with_a_message(
    rig: Rig,
) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, OPERATOR_KEY)
        overview = await client.get("/console/")
        assert f'<option value="{MOTOR}"' in overview.text
        assert f'<option value="{BAY}"' in overview.text
        refused = await client.post(
            "/console/company", data={"csrf": csrf, "company_id": "no-such-group", "form": "company"}
        )
        assert refused.status_code == 422
        assert "There is no company &#39;no-such-group&#39;" in refused.text
        assert '{"error"' not in refused.text  # the page's own message, not a JSON error
        switched = await client.post("/console/company", data={"csrf": csrf, "company_id": BAY, "form": "company"})
        assert switched.status_code == 303
        assert f"Now viewing {BAY}" in (await client.get("/console/")).text


async def test_a_refused_form_keeps_what_was_typed_and_says_why_on_its_own_page(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        refused = await client.post(
            "/console/tenants/members",
            data={
                "csrf": csrf,
                "form": "member",
                "id": "Not A Slug!",
                "name": "Typed Name",
                "scopes": "amcp:leads:read",
            },
        )
        assert refused.status_code == 422
        assert "A member id is lower-case letters" in refused.text
        assert 'value="Not A Slug!"' in refused.text
        assert 'value="Typed Name"' in refused.text
        assert '<details class="form-toggle" id="add-member" open>' in refused.text
        assert '<details class="form-toggle" id="add-rooftop">' in refused.text  # the other forms stay closed
        assert ">amcp:leads:read</textarea>" in refused.text


async def _hold_lead_update(rig: Rig) -> str:
    rule = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}", json={"require_approval": [rule]}, headers=headers
    )
    listing = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 5})
    items = listing.json()["result"]["output"]["items"]
    lead_id: str = next(item["id"] for item in items if item["status"] in ("new", "contacted"))
    held = await rig.call("leads.update", {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "lost"})
    assert held.json()["status"]["error"]["code"] == "approval.pending"
    return lead_id


async def test_a_held_call_shows_its_redacted_arguments_its_rooftop_and_the_lead_it_touches(rig: Rig) -> None:
    lead_id = await _hold_lead_update(rig)
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/approvals", params={"status": "pending"})
    assert page.status_code == 200
    assert f"<code>{TOYOTA}</code>" in page.text
    assert f'lead <a href="/console/leads/{TOYOTA}/{lead_id}">{lead_id}</a>' in page.text
    assert '"status": "lost"' in page.text  # the held arguments, as the audit log keeps them
    customer = re.search(r"<br>customer ([^<]*)</td>", page.text)
    assert customer is not None
    assert "***@" in customer.group(1)  # who it touches, masked


async def test_a_feed_over_one_mebibyte_is_uploaded_and_imported(rig: Rig) -> None:
    from forecourt.domain.vin import with_check_digit

    lines = ["vin,stock,year,make,model,trim,condition,price,mileage,status,description"]
    padding = "x" * 400
    for n in range(3_000):
        vin = with_check_digit(f"4T1DAACK0SU{n:06d}")
        lines.append(f"{vin},P{n},2025,Toyota,Camry,LE,used,24995,{1000 + n},available,{padding}")
    feed = ("\n".join(lines) + "\n").encode()
    assert len(feed) > 1_048_576
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        form = await client.get(f"/console/inventory/{TOYOTA}/upload")
        assert form.status_code == 200
        assert "data-upload" in form.text
        response = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf, "form": "upload"},
            files={"feed": ("big.csv", feed, "text/csv")},
        )
    assert response.status_code == 200, response.text[:500]
    assert "3000 rows: 3000 created" in response.text


async def test_an_upload_refused_by_the_gateway_is_the_upload_pages_own_message(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        refused = await client.post(
            f"/console/inventory/{TOYOTA}/upload",
            data={"csrf": csrf, "form": "upload", "full": "on"},
            files={"feed": ("", b"", "text/csv")},
        )
    assert refused.status_code == 422
    assert "Choose a feed file." in refused.text
    assert "<h1>Upload a feed to" in refused.text
    assert 'id="full" checked' in refused.text
    assert not refused.text.lstrip().startswith("{")


async def test_try_a_tool_runs_as_the_member_and_shows_the_answer_and_its_audit_record(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        tools = await client.get("/console/tools", params={"member_id": "crm-agent"})
        form: dict[str, Any] = {
            "csrf": csrf_of(tools.text),
            "form": "try",
            "member_id": "crm-agent",
            "tool": "inventory.search",
            "arguments": f'{{"dealership_id": "{TOYOTA}", "limit": 2}}',
        }
        tried = await client.post("/console/tools/try", data=form)
        assert tried.status_code == 200, tried.text[-800:]
        assert "inventory.search as crm-agent: answered" in tried.text
        assert "&#34;items&#34;" in tried.text
        assert "&#34;member_id&#34;: &#34;crm-agent&#34;" in tried.text  # the audit record, as the member
        denied = await client.post(
            "/console/tools/try", data={**form, "member_id": "shopper-agent", "tool": "leads.update"}
        )
        assert denied.status_code == 422
        assert "shopper-agent may not call" in denied.text
        assert 'value="leads.update"' in denied.text  # the form keeps what was typed
    records = [r for r in await rig.audit(MOTOR) if r.action == "inventory.search" and r.member_id == "crm-agent"]
    assert any(r.surface == "console" for r in records)


async def test_the_newest_leads_are_the_same_whether_found_in_a_recent_window_or_the_whole_table(rig: Rig) -> None:
    from datetime import UTC, datetime, timedelta

    from forecourt.domain.people import Lead

    now = datetime.now(UTC)
    # 30 leads in the last day, 30 a few days old (the next window), and the demo's, months old.
    ages = [timedelta(minutes=10 * n + 1) for n in range(30)] + [timedelta(days=3, minutes=n) for n in range(30)]
    async with rig.services.store.transaction() as uow:
        for n, age in enumerate(ages):
            at = now - age
            lead = Lead(id=f"lead_win_{n:03d}", dealership_id=TOYOTA, submitted_at=at, created_at=at, updated_at=at)
            await uow.leads.add(lead)
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        first = await client.get("/console/leads")
        second = await client.get("/console/leads", params={"offset": 25})
        oldest_first = await client.get("/console/leads", params={"sort": "created_at", "order": "asc"})
    ids = re.findall(r'/console/leads/[^/]+/(lead_[a-z0-9_]+)"', first.text + second.text)
    assert ids[:50] == [f"lead_win_{n:03d}" for n in range(50)]  # across the one-day window's edge, in order
    assert "lead_win_" not in oldest_first.text  # the demo's months-old leads come first that way


async def test_a_refused_upstream_keeps_what_was_typed_on_the_upstreams_page(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, rig.keys["admin"])
        refused = await client.post(
            "/console/upstreams",
            data={"csrf": csrf, "form": "upstream", "id": "Bad Id!", "url": "ftp://x.example", "description": "typed"},
        )
    assert refused.status_code == 422
    assert '<p class="error" role="alert">' in refused.text
    assert 'value="ftp://x.example"' in refused.text
    assert 'value="typed"' in refused.text
    assert "<h1>That did not work</h1>" not in refused.text  # the upstreams page itself, not the error page
