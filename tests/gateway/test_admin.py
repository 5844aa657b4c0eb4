"""The admin API (``/admin/v1/companies/{c}/...``): admin members only, own company only, and changes take effect."""

from __future__ import annotations

from typing import Any

import httpx

from .support import BAY, MOTOR, TOYOTA, Rig, error_code


def admin_headers(rig: Rig, key: str = "admin") -> dict[str, str]:
    return {"Authorization": f"Bearer {rig.keys[key]}"}


def admin_error(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


async def test_a_member_who_is_not_an_admin_cannot_use_the_admin_api(rig: Rig) -> None:
    response = await rig.client.get(f"/admin/v1/companies/{MOTOR}/keys", headers=admin_headers(rig, "crm"))
    assert response.status_code == 403
    assert admin_error(response) == "auth.insufficient_scope"
    assert "items" not in response.text


async def test_an_admin_cannot_administer_another_company(rig: Rig) -> None:
    for method, path in (("GET", "/keys"), ("GET", "/members"), ("GET", "/audit"), ("POST", "/keys")):
        response = await rig.client.request(
            method,
            f"/admin/v1/companies/{BAY}{path}",
            headers=admin_headers(rig),
            json={"member_id": "bay-crm-agent"} if method == "POST" else None,
        )
        assert (response.status_code, admin_error(response)) == (403, "auth.forbidden"), path


async def test_the_admin_api_without_credentials_is_unauthorized(rig: Rig) -> None:
    response = await rig.client.get(f"/admin/v1/companies/{MOTOR}/keys")
    assert (response.status_code, admin_error(response)) == (401, "auth.unauthorized")


async def test_an_admin_creates_lists_and_revokes_keys_over_http(rig: Rig) -> None:
    created = await rig.client.post(
        f"/admin/v1/companies/{MOTOR}/keys",
        headers=admin_headers(rig),
        json={"member_id": "crm-agent", "name": "from-http", "scopes": ["amcp:inventory:read"]},
    )
    assert created.status_code == 201, created.text
    assert created.headers["Cache-Control"] == "no-store"
    key, prefix = created.json()["key"], created.json()["prefix"]
    assert key.startswith(f"fck_{prefix}_")

    listed = await rig.client.get(f"/admin/v1/companies/{MOTOR}/keys", headers=admin_headers(rig))
    assert listed.status_code == 200
    mine = [k for k in listed.json()["items"] if k["prefix"] == prefix]
    assert mine
    assert mine[0]["scopes"] == ["amcp:inventory:read"]
    assert mine[0]["revoked_at"] is None
    assert key not in listed.text

    assert (await rig.call("inventory.search", {"dealership_id": TOYOTA}, key=key)).status_code == 200
    narrowed = await rig.call("leads.list", {"dealership_id": TOYOTA}, key=key)
    assert error_code(narrowed) == "auth.insufficient_scope"

    revoked = await rig.client.delete(f"/admin/v1/companies/{MOTOR}/keys/{prefix}", headers=admin_headers(rig))
    assert revoked.status_code == 200
    assert revoked.json() == {"prefix": prefix, "revoked": True}
    refused = await rig.call("inventory.search", {"dealership_id": TOYOTA}, key=key)
    assert (refused.status_code, error_code(refused)) == (401, "auth.unauthorized")


async def test_an_admin_cannot_revoke_another_companys_key(rig: Rig) -> None:
    bay_prefix = (await rig.gateway_keys(BAY))[0].prefix
    response = await rig.client.delete(f"/admin/v1/companies/{MOTOR}/keys/{bay_prefix}", headers=admin_headers(rig))
    assert (response.status_code, admin_error(response)) == (404, "not_found")
    assert (await rig.call("dealer.information", {"dealership_id": "demo-bay-sj"}, key="bay")).status_code == 200


async def test_a_narrowed_key_of_an_admin_cannot_administer(rig: Rig) -> None:
    created = await rig.client.post(
        f"/admin/v1/companies/{MOTOR}/keys",
        headers=admin_headers(rig),
        json={"member_id": "ops-admin", "scopes": ["amcp:inventory:read"]},
    )
    narrowed = created.json()["key"]
    response = await rig.client.get(
        f"/admin/v1/companies/{MOTOR}/keys", headers={"Authorization": f"Bearer {narrowed}"}
    )
    assert (response.status_code, admin_error(response)) == (403, "auth.insufficient_scope")


async def test_a_policy_upserted_through_the_admin_api_takes_effect_on_the_next_call(rig: Rig) -> None:
    assert (await rig.call("leads.list", {"dealership_id": TOYOTA})).status_code == 200
    policy: dict[str, Any] = {"name": "no leads", "denied_actions": ["leads.*"]}
    put = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/no-leads", headers=admin_headers(rig), json=policy
    )
    assert put.status_code == 200, put.text
    denied = await rig.call("leads.list", {"dealership_id": TOYOTA})
    assert (denied.status_code, error_code(denied)) == (403, "policy.denied")
    listed = await rig.client.get(f"/admin/v1/companies/{MOTOR}/policies", headers=admin_headers(rig))
    assert "no-leads" in {p["id"] for p in listed.json()["items"]}
    deleted = await rig.client.delete(f"/admin/v1/companies/{MOTOR}/policies/no-leads", headers=admin_headers(rig))
    assert deleted.status_code == 200
    assert (await rig.call("leads.list", {"dealership_id": TOYOTA})).status_code == 200


async def test_an_admin_cannot_grant_a_member_another_companys_dealership(rig: Rig) -> None:
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/members/sneaky",
        headers=admin_headers(rig),
        json={"name": "Sneaky", "dealership_ids": ["demo-bay-sj"], "scopes": ["amcp:leads:read"]},
    )
    assert (response.status_code, admin_error(response)) == (403, "auth.forbidden")


async def test_an_admin_cannot_move_another_companys_dealership_into_its_own(rig: Rig) -> None:
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/dealerships/demo-bay-sj",
        headers=admin_headers(rig),
        json={"name": "Mine now"},
    )
    assert (response.status_code, admin_error(response)) == (403, "auth.forbidden")


async def test_an_admin_reads_the_companys_audit_trail(rig: Rig) -> None:
    await rig.call("dealer.information", {"dealership_id": TOYOTA})
    await rig.services.audit.flush()
    response = await rig.client.get(f"/admin/v1/companies/{MOTOR}/audit?limit=10", headers=admin_headers(rig))
    assert response.status_code == 200
    actions = [item["action"] for item in response.json()["items"]]
    assert "dealer.information" in actions


async def test_admin_calls_are_audited_like_any_other(rig: Rig) -> None:
    await rig.client.get(f"/admin/v1/companies/{MOTOR}/members", headers=admin_headers(rig))
    await rig.client.get(f"/admin/v1/companies/{BAY}/members", headers=admin_headers(rig))
    rows = await rig.audit_rows()
    assert [(r["action"], r["status_code"], r["member_id"]) for r in rows] == [
        ("admin.members.list", 200, "ops-admin"),
        ("admin.members.list", 403, "ops-admin"),
    ]


async def test_an_invalid_admin_body_is_a_structured_error(rig: Rig) -> None:
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/p1", headers=admin_headers(rig), content=b"[1, 2"
    )
    assert (response.status_code, admin_error(response)) == (400, "invalid_request")
