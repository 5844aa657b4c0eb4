"""``POST /mcp/db.query`` and the admin routes through the real app."""

from __future__ import annotations

from knowledge.support import App


async def test_db_query_answers_through_the_rest_envelope_with_the_crm_agent_key(app: App) -> None:
    payload = {"query_id": "service_lane_load", "dealership_id": "demo-toyota-sf"}
    response = await app.call("db.query", payload)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["type"] == "db.rows"
    assert result["output"]["query_id"] == "service_lane_load"


async def test_db_query_needs_the_reports_scope(app: App) -> None:
    response = await app.call(
        "db.query", {"query_id": "aged_inventory", "dealership_id": "demo-toyota-sf"}, key="crm_inventory_only"
    )
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.insufficient_scope"


async def test_db_query_at_another_companys_dealership_is_denied(app: App) -> None:
    response = await app.call("db.query", {"query_id": "aged_inventory", "dealership_id": "demo-bay-sj"})
    assert response.status_code == 403
    assert response.json()["status"]["error"]["code"] == "auth.tenancy_denied"


async def test_raw_sql_is_not_an_accepted_input(app: App) -> None:
    response = await app.call("db.query", {"sql": "SELECT * FROM customers", "dealership_id": "demo-toyota-sf"})
    assert response.status_code == 422


async def test_admin_api_defines_and_lists_named_queries(app: App) -> None:
    definition = {"base": "leads", "group_by": [{"column": "status"}], "aggregates": [{"fn": "count", "as": "n"}]}
    put = await app.admin("PUT", "/queries/leads_by_status", definition)
    assert put.status_code == 200, put.text
    listed = (await app.admin("GET", "/queries")).json()["items"]
    assert "leads_by_status" in {q["id"] for q in listed}
    run = await app.call("db.query", {"query_id": "leads_by_status", "dealership_id": "demo-honda-oak"})
    assert run.json()["result"]["output"]["rows"]
    assert (await app.admin("DELETE", "/queries/leads_by_status")).status_code == 200
    assert (await app.admin("PUT", "/queries/x", definition, key="crm")).status_code == 403
