"""The operator: a bootstrap key made once, operator keys for admin actions only, every call audited as the operator.

Also: lead reports through the gateway, a single string where a list of strings is expected, and advertised
URLs that follow the serving address when no public URL is configured.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from forecourt.errors import ForecourtError
from forecourt.gateway.auth.operator import OperatorKeys, operator_principal
from forecourt.gateway.base import Invocation
from forecourt.gateway.validation import accept_single_strings

from .support import MOTOR, PEPPER, TOYOTA, Rig, error_code


async def _operator_key(rig: Rig) -> str:
    issued = await OperatorKeys(rig.services.store, PEPPER).bootstrap()
    assert issued is not None
    return issued.key


async def test_the_bootstrap_operator_key_is_made_once(rig: Rig) -> None:
    keys = OperatorKeys(rig.services.store, PEPPER)
    first = await keys.bootstrap()
    assert first is not None
    assert first.key.startswith("fco_")
    assert await keys.bootstrap() is None
    assert [r.name for r in await keys.list()] == ["bootstrap"]


async def test_replicas_starting_together_make_one_bootstrap_key(rig: Rig) -> None:
    replicas = [OperatorKeys(rig.services.store, PEPPER) for _ in range(4)]
    issued = await asyncio.gather(*(r.bootstrap() for r in replicas))
    assert sum(1 for i in issued if i is not None) == 1
    assert len(await replicas[0].list()) == 1


async def test_an_operator_key_creates_a_company_over_the_wire_and_is_audited_as_the_operator(rig: Rig) -> None:
    key = await _operator_key(rig)
    created = await rig.call("admin.companies.create", {"company_id": "acme-auto", "name": "Acme"}, key=key)
    assert created.status_code == 200, created.text
    rooftop = {"id": "acme-toyota", "name": "Acme Toyota", "timezone": "America/Chicago", "brands": "Toyota"}
    made = await rig.call("admin.dealerships.create", {"company_id": "acme-auto", "dealership": rooftop}, key=key)
    assert made.status_code == 200, made.text
    assert made.json()["result"]["output"]["brands"] == ["Toyota"]
    records = await rig.audit("acme-auto")
    assert [(r.action, r.member_id) for r in records] == [
        ("admin.companies.create", "operator"),
        ("admin.dealerships.create", "operator"),
    ]


async def test_an_operator_key_runs_admin_actions_only(rig: Rig) -> None:
    key = await _operator_key(rig)
    refused = await rig.call("inventory.search", {"dealership_id": TOYOTA}, key=key)
    assert refused.status_code == 403
    assert error_code(refused) == "auth.forbidden"
    listed = await rig.client.get(
        f"/admin/v1/companies/{MOTOR}/dealerships", headers={"Authorization": f"Bearer {key}"}
    )
    assert listed.status_code == 200
    assert TOYOTA in {d["id"] for d in listed.json()["items"]}


async def test_a_revoked_or_forged_operator_key_is_refused(rig: Rig) -> None:
    keys = OperatorKeys(rig.services.store, PEPPER)
    issued = await keys.bootstrap()
    assert issued is not None
    forged = issued.key[:-1] + ("a" if issued.key[-1] != "a" else "b")
    assert error_code(await rig.call("admin.companies.list", {}, key=forged)) == "auth.unauthorized"
    await keys.revoke(issued.record.prefix)
    assert error_code(await rig.call("admin.companies.list", {}, key=issued.key)) == "auth.unauthorized"


async def test_a_company_member_cannot_run_operator_actions(rig: Rig) -> None:
    response = await rig.call("admin.companies.create", {"company_id": "sneaky"}, key="admin")
    assert response.status_code == 403


async def test_admin_writes_under_an_unknown_company_name_the_command_that_creates_it(rig: Rig) -> None:
    principal = operator_principal("ghost")
    for action, payload in (
        ("admin.dealerships.upsert", {"company_id": "ghost", "dealership": {"id": "g1", "name": "G"}}),
        ("admin.policies.upsert", {"company_id": "ghost", "policy": {"id": "p"}}),
    ):
        with pytest.raises(ForecourtError) as caught:
            await rig.gateway.invoke(Invocation(action=action, payload=payload, surface="cli", principal=principal))
        assert caught.value.code == "tenancy.company_not_found"
        assert "forecourt companies create ghost" in caught.value.message


async def test_a_lead_report_runs_through_the_gateway_and_is_audited(rig: Rig) -> None:
    path = rig.services.settings.database_url.split("///", 1)[1]
    with sqlite3.connect(path) as conn:
        lead_id, dealership = conn.execute("SELECT id, dealership_id FROM leads ORDER BY id LIMIT 1").fetchone()
    outcome = await rig.gateway.invoke(
        Invocation(
            action="admin.leads.report",
            payload={"lead_id": lead_id, "dealership_id": dealership},
            surface="cli",
            principal=operator_principal(),
        )
    )
    assert outcome.output["lead_id"] == lead_id
    records = [r for r in await rig.audit() if r.action == "admin.leads.report"]
    assert [(r.member_id, r.dealership_id) for r in records] == [("operator", dealership)]


async def test_a_single_string_is_accepted_where_a_list_of_strings_is_expected(rig: Rig) -> None:
    one = await rig.call("inventory.search", {"dealership_id": TOYOTA, "make": "Toyota", "limit": 3})
    listed = await rig.call("inventory.search", {"dealership_id": TOYOTA, "make": ["Toyota"], "limit": 3})
    assert one.status_code == 200, one.text
    first, second = one.json()["result"], listed.json()["result"]
    # The page cursor carries its expiry (a timestamp): the two calls may fall in different seconds.
    assert (first["output"].pop("next_cursor") is None) == (second["output"].pop("next_cursor") is None)
    assert first == second


def test_single_strings_become_lists_only_where_the_schema_says_list_of_strings() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string"},
            "nested": {
                "type": "object",
                "properties": {"ids": {"anyOf": [{"type": "array", "items": {"type": "string"}}]}},
            },
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "array", "items": {"type": "string"}}}},
            },
        },
    }
    given = {"tags": "a", "name": "b", "nested": {"ids": "c"}, "rows": [{"k": "d"}, {"k": ["e"]}], "other": "f"}
    assert accept_single_strings(schema, given) == {
        "tags": ["a"],
        "name": "b",
        "nested": {"ids": ["c"]},
        "rows": [{"k": ["d"]}, {"k": ["e"]}],
        "other": "f",
    }
    untouched = {"tags": ["a"]}
    assert accept_single_strings(schema, untouched) is untouched


async def test_advertised_urls_follow_the_serving_address_without_a_public_url(
    make_rig: Callable[..., Awaitable[Rig]],
) -> None:
    rig = await make_rig(host="127.0.0.1", port=8123)
    manifest = (await rig.client.get("/.well-known/automotive-mcp.json", headers={"Host": "127.0.0.1:8123"})).json()
    assert manifest["automotive_mcp"]["server"]["url"] == "http://127.0.0.1:8123/mcp"
    metadata = await rig.client.get("/.well-known/oauth-protected-resource/mcp", headers={"Host": "127.0.0.1:8123"})
    assert metadata.json()["resource"] == "http://127.0.0.1:8123/mcp"
    proxied = await make_rig(public_base_url="https://dealers.example.com/")
    metadata = await proxied.client.get("/.well-known/oauth-protected-resource/mcp")
    assert metadata.json()["resource"] == "https://dealers.example.com/mcp"


async def test_the_admin_api_takes_a_single_string_for_a_members_lists(rig: Rig) -> None:
    body = {
        "name": "Reader",
        "allowed_tools": "inventory.search",
        "scopes": "amcp:inventory:read",
        "dealership_ids": TOYOTA,
    }
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/members/reader",
        json=body,
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert response.status_code == 200, response.text
    member = response.json()
    assert (member["allowed_tools"], member["scopes"], member["dealership_ids"]) == (
        ["inventory.search"],
        ["amcp:inventory:read"],
        [TOYOTA],
    )
