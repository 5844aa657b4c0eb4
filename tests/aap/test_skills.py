"""The five skills over both bindings: examples, response schemas, media types and the AAP error table."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from forecourt.demo.bulk import iter_bulk_vehicles
from forecourt.domain.aap_spec import SKILLS_BY_ID, errors
from forecourt.domain.vehicle import TOTAL_COUNTED_UP_TO

from .support import HEADERS, TOYOTA, LiveServer, Rig, error_of, fixture, jsonrpc, message, payload_of

EXAMPLES = [
    ("dealer.information", "dealer-information-request.example.json"),
    ("inventory.facets", "inventory-facets-request.example.json"),
    ("inventory.search", "inventory-search-request.example.json"),
    ("inventory.vehicle", "vehicle-detail-request.example.json"),
    ("lead.submit", "lead-submit-request.example.json"),
    ("lead.submit", "lead-submit-request.minimal.example.json"),
    ("lead.submit", "lead-submit-request.vehicle-only.example.json"),
    ("lead.submit", "lead-submit-request.appointment.example.json"),
]


def _send(live: LiveServer, binding: str, skill_id: str, data: dict[str, Any]) -> httpx.Response:
    base = f"{live.url}/dealers/{TOYOTA}/a2a"
    if binding == "jsonrpc":
        return httpx.post(base + "/jsonrpc", json=jsonrpc(skill_id, data), headers=HEADERS)
    return httpx.post(base + "/message:send", json={"message": message(skill_id, data)}, headers=HEADERS)


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
@pytest.mark.parametrize(("skill_id", "example"), EXAMPLES)
def test_every_request_example_gets_a_schema_valid_reply_on_both_bindings(
    live: LiveServer, binding: str, skill_id: str, example: str
) -> None:
    data = fixture(example)
    if skill_id == "inventory.vehicle":  # the example VIN is not in the demo inventory
        found = payload_of(_send(live, binding, "inventory.search", {"type": "inventory.search.request"}))
        data["vin"] = found["data"]["vehicles"][0]["vin"]
    response = _send(live, binding, skill_id, data)
    assert response.status_code == 200, response.text
    body = response.json()
    part = (body["result"]["message"] if binding == "jsonrpc" else body["message"])["parts"][0]
    skill = SKILLS_BY_ID[skill_id]
    assert part["mediaType"] == skill.response_media_type
    assert errors(skill.response_schema, part["data"]) == []
    assert part["data"]["type"] == skill.response_type


async def test_integers_come_back_as_json_integers_not_doubles(rig: Rig) -> None:
    response = await rig.rpc("inventory.search", {"type": "inventory.search.request", "pagination": {"limit": 2}})
    data = payload_of(response)["data"]
    assert isinstance(data["total"], int)
    assert isinstance(data["vehicles"][0]["year"], int)


async def test_float_integers_in_requests_are_accepted_as_integers(rig: Rig) -> None:
    body = {"type": "inventory.search.request", "filters": {"year_min": 2000.0}, "pagination": {"limit": 3.0}}
    response = await rig.rpc("inventory.search", body)
    assert payload_of(response)["data"]["limit"] == 3


@pytest.mark.parametrize(
    ("data", "code", "status", "rpc"),
    [
        ({"type": "inventory.search.request", "filters": {"colour": ["red"]}}, "SCHEMA_VALIDATION_FAILED", 422, -32602),
        ({"type": "inventory.vehicle.request"}, "MISSING_REQUIRED_FIELD", 422, -32602),
        ({"type": "inventory.vehicle.request", "vin": "1HGCM82633A004352"}, "VEHICLE_NOT_FOUND", 404, -32000),
        ({"type": "vehicle.teleport.request"}, "UNSUPPORTED_SKILL", 404, -32601),
    ],
)
async def test_errors_use_the_aap_error_payload_and_code_table_on_both_bindings(
    rig: Rig, data: dict[str, Any], code: str, status: int, rpc: int
) -> None:
    skill_id = "inventory.vehicle" if "vehicle" in data["type"] else "inventory.search"
    over_rpc = await rig.rpc(skill_id, data)
    assert over_rpc.status_code == 200
    assert over_rpc.json()["error"]["code"] == rpc
    err = error_of(over_rpc)
    assert err["code"] == code
    assert errors("error.schema.json", err) == []
    over_rest = await rig.rest(skill_id, data)
    assert over_rest.status_code == status
    assert error_of(over_rest)["code"] == code


async def test_an_error_stores_no_task_with_the_customers_message(rig: Rig) -> None:
    lead = fixture("lead-submit-request.minimal.example.json")
    lead["consent"]["scope"] = ["marketing"]
    response = await rig.rpc("lead.submit", lead)
    assert error_of(response)["code"] == "INVALID_CONSENT"
    store: Any = rig.services.aap.task_store
    assert all(not tasks for tasks in store.inner._impl.tasks.values())  # no FAILED task holds the lead


async def test_a_private_dealer_agent_requires_a_bearer_token(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership("demo-honda-oak")
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"public_agent": False}))
    rig.services.gateway.tenancy.invalidate()
    anonymous = await rig.rest("inventory.search", {"type": "inventory.search.request"}, dealer="demo-honda-oak")
    assert anonymous.status_code == 401
    assert error_of(anonymous)["code"] == "AUTH_REQUIRED"
    with_key = await rig.rest(
        "inventory.search", {"type": "inventory.search.request"}, dealer="demo-honda-oak", key="crm"
    )
    assert with_key.status_code == 200


async def test_rate_limits_answer_rate_limited_with_retry_after_ms(aap_template: Any, tmp_path: Any) -> None:
    from .support import start_rig, stop_rig

    rig = await start_rig(aap_template[0], aap_template[1], tmp_path, rate_anonymous_per_minute=2)
    try:
        for _ in range(2):
            assert (await rig.rpc("dealer.information", {"type": "dealer.information.request"})).status_code == 200
        limited = await rig.rest("dealer.information", {"type": "dealer.information.request"})
        assert limited.status_code == 429
        err = error_of(limited)
        assert err["code"] == "RATE_LIMITED"
        assert err["retryable"] is True
        assert err["details"]["retry_after_ms"] > 0
    finally:
        await stop_rig(rig)


async def test_the_skills_are_gateway_actions_callable_with_aap_payloads(rig: Rig) -> None:
    from forecourt.gateway.base import Invocation

    outcome = await rig.services.gateway.invoke(
        Invocation(
            action="aap.inventory.facets",
            payload={"type": "inventory.facets.request", "filters": {"condition": ["used"]}},
            anonymous_dealership="demo-toyota-sf",
        )
    )
    assert errors("inventory-facets-response.schema.json", outcome.output) == []
    assert outcome.output["data"]["conditions"][0]["value"] == "used"


async def test_a_search_matching_more_units_than_are_counted_answers_a_valid_lower_bound_and_says_so(rig: Rig) -> None:
    store = rig.services.store
    async with store.read() as uow:
        dealer = await uow.tenancy.get_dealership(TOYOTA)
    assert dealer is not None
    for batch in iter_bulk_vehicles([dealer], TOTAL_COUNTED_UP_TO + 30, seed=11):
        await store.bulk_load_vehicles(batch)
    request = {"type": "inventory.search.request", "pagination": {"limit": 5}}
    body = payload_of(await rig.rpc("inventory.search", request))
    assert errors(SKILLS_BY_ID["inventory.search"].response_schema, body) == []
    assert (body["data"]["total"], len(body["data"]["vehicles"])) == (TOTAL_COUNTED_UP_TO, 5)
    assert body["message"].startswith(f"At least {TOTAL_COUNTED_UP_TO} vehicles match.")
