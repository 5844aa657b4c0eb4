"""The direct path of a read skill's JSON-RPC ``SendMessage`` answers exactly what the SDK's handler answers.

A request with ``params.metadata`` is one the direct path leaves to the SDK, so the same message sent with and
without it compares the two paths; what the direct path must not take (a lead, a task id, another version, two
parts, another method) keeps the SDK's own answer.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from forecourt.domain.aap_spec import SKILLS_BY_ID

from .support import HEADERS, TOYOTA, LiveServer, Rig, fixture, jsonrpc, payload_of

READS = [
    ("dealer.information", "dealer-information-request.example.json"),
    ("inventory.facets", "inventory-facets-request.example.json"),
    ("inventory.search", "inventory-search-request.example.json"),
    ("inventory.vehicle", "vehicle-detail-request.example.json"),
]


def _direct(app: Any) -> Any:
    for route in app.routes:
        if getattr(route, "path", "").endswith("/a2a/jsonrpc"):
            return route.endpoint.direct
    raise AssertionError("no JSON-RPC route")


def _via_sdk(body: dict[str, Any]) -> dict[str, Any]:
    forced = copy.deepcopy(body)
    forced["params"]["metadata"] = {"path": "sdk"}  # the direct path leaves messages with metadata to the SDK
    return forced


def _stable(body: dict[str, Any]) -> dict[str, Any]:
    """The answer without what differs per call (message, context, error and trace ids, an error's time)."""
    out = copy.deepcopy(body)
    error = (out.get("error") or {}).get("data")
    if isinstance(error, dict):
        error["error_id"], error["created_at"] = "<id>", "<time>"
        if isinstance(error.get("details"), dict) and "trace_id" in error["details"]:
            error["details"]["trace_id"] = "<trace>"
    message = (out.get("result") or {}).get("message")
    if isinstance(message, dict):
        message["messageId"] = "<id>"
        message["contextId"] = "<context>"
    return out


async def _post(rig: Rig, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return await rig.client.post(f"/dealers/{TOYOTA}/a2a/jsonrpc", json=body, headers=headers or HEADERS)


async def _data(rig: Rig, skill_id: str, example: str) -> dict[str, Any]:
    data = fixture(example)
    if skill_id == "inventory.vehicle":  # the example VIN is not in the demo inventory
        found = payload_of(await rig.rpc("inventory.search", {"type": "inventory.search.request"}))
        data["vin"] = found["data"]["vehicles"][0]["vin"]
    return data


@pytest.mark.parametrize(("skill_id", "example"), READS)
async def test_a_direct_answer_equals_the_sdk_answer(rig: Rig, skill_id: str, example: str) -> None:
    body = jsonrpc(skill_id, await _data(rig, skill_id, example))
    direct = _direct(rig.client._transport.app)  # type: ignore[attr-defined]
    before = direct.answered
    fast = await _post(rig, body)
    assert direct.answered == before + 1
    slow = await _post(rig, _via_sdk(body))
    assert direct.answered == before + 1
    assert (fast.status_code, fast.headers["content-type"]) == (slow.status_code, slow.headers["content-type"])
    assert _stable(fast.json()) == _stable(slow.json())
    message = fast.json()["result"]["message"]
    assert message["role"] == "ROLE_AGENT"
    assert message["parts"][0]["mediaType"] == SKILLS_BY_ID[skill_id].response_media_type
    assert message["messageId"] != slow.json()["result"]["message"]["messageId"]


@pytest.mark.parametrize(
    "data",
    [
        {"type": "inventory.search.request", "filters": {"colour": ["red"]}},
        {"type": "inventory.vehicle.request"},
        {"type": "inventory.vehicle.request", "vin": "1HGCM82633A004352"},
    ],
)
async def test_a_direct_error_equals_the_sdk_error(rig: Rig, data: dict[str, Any]) -> None:
    skill_id = "inventory.vehicle" if "vehicle" in data["type"] else "inventory.search"
    body = jsonrpc(skill_id, data)
    fast, slow = await _post(rig, body), await _post(rig, _via_sdk(body))
    assert fast.status_code == slow.status_code == 200
    assert _stable(fast.json()) == _stable(slow.json())
    assert fast.json()["error"]["data"]["type"] == "aap.error"


async def test_a_context_id_sent_is_the_context_id_answered(rig: Rig) -> None:
    body = jsonrpc("dealer.information", {"type": "dealer.information.request"})
    body["params"]["message"]["contextId"] = "ctx-buyer-7"
    response = await _post(rig, body)
    assert response.json()["result"]["message"]["contextId"] == "ctx-buyer-7"


async def test_numbers_sent_as_integral_doubles_are_read_as_integers(rig: Rig) -> None:
    body = jsonrpc("inventory.search", {"type": "inventory.search.request", "pagination": {"limit": 3.0}})
    data = payload_of(await _post(rig, body))["data"]
    assert data["limit"] == 3
    assert len(data["vehicles"]) == 3


def _variants() -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    search = jsonrpc("inventory.search", {"type": "inventory.search.request"})
    with_task = copy.deepcopy(search)
    with_task["params"]["message"]["taskId"] = "t-1"
    two_parts = copy.deepcopy(search)
    two_parts["params"]["message"]["parts"].append({"text": "and a second part"})
    streaming = copy.deepcopy(search)
    streaming["method"] = "SendStreamingMessage"
    lead = jsonrpc("lead.submit", fixture("lead-submit-request.minimal.example.json"))
    return [
        ("a lead (a side effect)", lead, HEADERS),
        ("a task id", with_task, HEADERS),
        ("two parts", two_parts, HEADERS),
        ("another method", streaming, HEADERS),
        ("no A2A-Version header", search, {}),
    ]


@pytest.mark.parametrize(("why", "body", "headers"), _variants(), ids=lambda v: v if isinstance(v, str) else "")
async def test_what_the_direct_path_does_not_own_goes_to_the_sdk(
    rig: Rig, why: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    direct = _direct(rig.client._transport.app)  # type: ignore[attr-defined]
    before = direct.answered
    response = await rig.client.post(f"/dealers/{TOYOTA}/a2a/jsonrpc", json=body, headers=headers)
    assert direct.answered == before, why
    assert response.status_code in (200, 400), response.text


def test_the_direct_path_answers_over_a_socket_as_the_sdk_does(live: LiveServer) -> None:
    body = jsonrpc("inventory.search", {"type": "inventory.search.request", "pagination": {"limit": 2}})
    url = f"{live.url}/dealers/{TOYOTA}/a2a/jsonrpc"
    fast = httpx.post(url, json=body, headers=HEADERS)
    slow = httpx.post(url, json=_via_sdk(body), headers=HEADERS)
    assert _stable(fast.json()) == _stable(slow.json())
    assert len(fast.json()["result"]["message"]["parts"][0]["data"]["data"]["vehicles"]) == 2
