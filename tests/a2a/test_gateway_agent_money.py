"""The gateway agent's artifacts carry an action's integers as integers (money in minor units above all), on both
bindings and on the stream, though A2A DataParts hold every number as a protobuf double."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.support import TOYOTA, Rig, Template, build_template, start_rig, stop_rig

HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    path = tmp_path_factory.mktemp("agent-money") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def rig(template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    made = await start_rig(template, tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)


def _message() -> dict[str, Any]:
    data = {"action": "inventory.search", "payload": {"dealership_id": TOYOTA, "limit": 3}}
    return {"messageId": "m-money", "role": "ROLE_USER", "parts": [{"data": data, "mediaType": "application/json"}]}


def _floats_in_money(text: str) -> tuple[list[Any], list[float]]:
    """Every ``amount_minor`` in a JSON document, and those written as floats (``4463500.0``)."""
    amounts: list[Any] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if "amount_minor" in obj:
            amounts.append(obj["amount_minor"])
        return obj

    json.loads(text, object_pairs_hook=hook)
    return amounts, [a for a in amounts if isinstance(a, float)]


def _auth(rig: Rig) -> dict[str, str]:
    return {**HEADERS, "Authorization": f"Bearer {rig.keys['crm']}"}


async def test_a_json_rpc_task_artifact_writes_minor_units_as_integers(rig: Rig) -> None:
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": _message()}}
    response = await rig.client.post("/agent/a2a/jsonrpc", json=body, headers=_auth(rig))
    assert response.status_code == 200, response.text[:300]
    amounts, floats = _floats_in_money(response.text)
    assert amounts
    assert floats == []


async def test_an_http_json_task_artifact_writes_minor_units_as_integers(rig: Rig) -> None:
    response = await rig.client.post("/agent/a2a/message:send", json={"message": _message()}, headers=_auth(rig))
    assert response.status_code == 200, response.text[:300]
    amounts, floats = _floats_in_money(response.text)
    assert amounts
    assert floats == []


async def test_a_streamed_task_artifact_writes_minor_units_as_integers(rig: Rig) -> None:
    body = {"jsonrpc": "2.0", "id": "2", "method": "SendStreamingMessage", "params": {"message": _message()}}
    response = await rig.client.post("/agent/a2a/jsonrpc", json=body, headers=_auth(rig))
    assert response.status_code == 200, response.text[:300]
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    found = [_floats_in_money(event) for event in events]
    assert any(amounts for amounts, _ in found)
    assert [f for _, floats in found for f in floats] == []
