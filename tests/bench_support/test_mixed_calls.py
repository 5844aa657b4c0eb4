"""bench/mixed_calls.py: the mixed-traffic benchmark's calls are ones the catalogue accepts (no timing here)."""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from forecourt.actions.aap.skills import register_aap_actions
from forecourt.actions.catalogue import register_dealer_actions
from forecourt.contract import Catalogue
from forecourt.domain.aap_spec import SKILLS_BY_ID

CALLS_PY = Path(__file__).resolve().parents[2] / "bench" / "mixed_calls.py"
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
WORLD = {
    "rooftops": [
        {
            "id": f"bench-{n:04d}",
            "makes": ["Honda", "Toyota"][: 1 + n % 2],
            "bodies": ["sedan", "suv"],
            "years": [2015, 2026],
            "prices": [1_190_000, 2_040_000, 3_540_000],
            "vehicles": [[f"veh_{n}_{k}", f"1HGCY2F57RA{n:03d}{k:03d}"] for k in range(5)],
        }
        for n in range(1, 8)
    ]
}


@pytest.fixture(scope="module")
def calls() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mixed_calls", CALLS_PY)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    found = Catalogue()
    register_dealer_actions(found)
    register_aap_actions(found)
    return found


def _fake_answer(call: Any) -> dict[str, Any]:
    """What a search answer carries that the mix reads: a next page exists."""
    if call.door == "a2a":
        return {"total": 500, "vehicles": []}
    return {"items": [], "next_cursor": f"cursor-{call.payload.get('limit')}"}


def _run(calls: ModuleType, n: int, seed: int = 7) -> list[Any]:
    traffic = calls.Traffic(calls.rooftops_from(WORLD), seed=seed, tag="t", now=lambda: NOW)
    made = []
    for _ in range(n):
        call = traffic.next_call()
        traffic.answered(call, _fake_answer(call))
        made.append(call)
    return made


def test_every_call_of_the_mix_validates_against_its_actions_input_schema(
    calls: ModuleType, catalogue: Catalogue
) -> None:
    validators: dict[str, Draft202012Validator] = {}
    for call in _run(calls, 3000):
        action = catalogue.get(call.catalogue_name)
        assert action is not None, call.catalogue_name
        if call.catalogue_name not in validators:
            validators[call.catalogue_name] = Draft202012Validator(
                action.input_schema, format_checker=Draft202012Validator.FORMAT_CHECKER
            )
        errors = [e.message for e in validators[call.catalogue_name].iter_errors(call.payload)]
        assert errors == [], (call.action, call.door, call.payload)


def test_the_mix_reaches_every_action_on_every_door_with_about_five_percent_leads(calls: ModuleType) -> None:
    made = _run(calls, 4000)
    seen = {(c.action, c.door) for c in made}
    assert seen == {(a, d) for a in calls.DEALER_ACTION for d in calls.DOORS}
    leads = [c for c in made if c.action == "leads.create"]
    assert 0.035 < len(leads) / len(made) < 0.065
    emails = [c.payload["customer"]["email"] for c in leads]
    assert len(set(emails)) == len(emails)


def test_the_same_seed_makes_the_same_calls(calls: ModuleType) -> None:
    first = [(c.action, c.door, c.payload) for c in _run(calls, 500, seed=3)]
    again = [(c.action, c.door, c.payload) for c in _run(calls, 500, seed=3)]
    assert first == again


def test_a2a_calls_carry_the_skills_media_types_and_answers_are_judged_by_door(calls: ModuleType) -> None:
    made = _run(calls, 600)
    a2a = next(c for c in made if c.door == "a2a" and c.action == "inventory.get/vin")
    path, headers, body = calls.wire(a2a, "key", "m-1")
    skill = SKILLS_BY_ID["inventory.vehicle"]
    assert path == f"/dealers/{a2a.dealership}/a2a/jsonrpc"
    assert "Authorization" not in headers
    assert body["params"]["message"]["parts"][0]["mediaType"] == skill.request_media_type
    assert body["params"]["configuration"]["acceptedOutputModes"] == [skill.response_media_type]
    good = {"result": {"message": {"parts": [{"data": {"type": "inventory.vehicle.response", "data": {}}}]}}}
    bad = {"jsonrpc": "2.0", "id": "m-1", "error": {"code": -32000, "data": {"code": "VEHICLE_NOT_FOUND"}}}
    assert calls.verdict(a2a, 200, json.dumps(good).encode())[0]
    assert not calls.verdict(a2a, 200, json.dumps(bad).encode())[0]
    mcp = next(c for c in made if c.door == "mcp")
    assert calls.wire(mcp, "key", "m-2")[1]["Mcp-Name"] == calls.DEALER_ACTION[mcp.action]
    assert not calls.verdict(mcp, 200, b'{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}')[0]
    rest = next(c for c in made if c.door == "rest")
    refused = {"status": {"code": 400, "message": "x", "error": {"code": "invalid_params"}}, "result": None}
    assert not calls.verdict(rest, 200, json.dumps(refused).encode())[0]
    assert not calls.verdict(rest, 503, b"")[0]
