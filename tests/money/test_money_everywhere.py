"""Seed 002 §3.7: money is an integer of minor units plus an ISO 4217 currency, in every action's output.

Two walks: every action's output schema, and a real output of every action that has an example call (plus the
calls known to carry money: the named reports, a lead whose vehicle of interest came with AAP prices). AAP skills
answer in AAP's own money form (``{amount: <major units>, currency}``, SPEC-NOTES), so only their currency is
checked there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from forecourt.surfaces.openapi import self_contained
from gateway.support import TOYOTA, Rig

_CURRENCY = re.compile(r"[A-Z]{3}")
_MONEY_WORDS = re.compile(r"(^|_)(price|msrp|amount|total|cost|fee|payoff|payment)s?($|_)")


def _is_aap(action_name: str) -> bool:
    return action_name.startswith("aap.")


def _types(schema: Any) -> list[str]:
    types = schema.get("type") if isinstance(schema, Mapping) else None
    return [types] if isinstance(types, str) else list(types or [])


def _property_problems(properties: Mapping[str, Any], where: str, *, aap: bool) -> Iterator[str]:
    for name, sub in properties.items():
        path, types = f"{where}.{name}", _types(sub)
        if name == "amount_minor":
            if "number" in types or (types and "integer" not in types):
                yield f"{path}: amount_minor must be an integer, not {types}"
            if "currency" not in properties:
                yield f"{path}: amount_minor without a currency beside it"
        elif name.endswith("_minor") and ("number" in types or "integer" in types):
            yield f"{path}: a bare minor-unit number has no currency (use {{amount_minor, currency}})"
        elif name == "amount" and aap:
            if "currency" not in properties:
                yield f"{path}: AAP money without a currency beside it"
        elif name == "amount" and ("number" in types or "integer" in types):
            yield f"{path}: money in major units (use {{amount_minor, currency}})"
        elif _MONEY_WORDS.search(name) and "number" in types:
            yield f"{path}: money as a bare number"


def schema_problems(schema: Any, where: str, *, aap: bool) -> Iterator[str]:
    """Money rules broken by a JSON Schema (numbers where money should be, minor units without a currency)."""
    children: list[tuple[str, Any]] = []
    if isinstance(schema, list):
        children = [(f"{where}[{index}]", item) for index, item in enumerate(schema)]
    elif isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            yield from _property_problems(properties, where, aap=aap)
            children += [(f"{where}.{name}", sub) for name, sub in properties.items()]
        children += [(f"{where}/{key}", value) for key, value in schema.items() if key != "properties"]
    for path, child in children:
        yield from schema_problems(child, path, aap=aap)


def _money_object_problems(value: Mapping[str, Any], where: str, *, aap: bool) -> Iterator[str]:
    if "amount_minor" in value:
        if type(value["amount_minor"]) is not int:
            yield f"{where}.amount_minor is {value['amount_minor']!r}, not an integer"
        if not isinstance(value.get("currency"), str) or not _CURRENCY.fullmatch(value["currency"]):
            yield f"{where}: amount_minor without an ISO 4217 currency"
    elif "amount" in value and isinstance(value["amount"], int | float) and not isinstance(value["amount"], bool):
        if not aap:
            yield f"{where}: money in major units {value!r}"
        elif not isinstance(value.get("currency"), str) or not _CURRENCY.fullmatch(value["currency"]):
            yield f"{where}: money without an ISO 4217 currency"


def value_problems(value: Any, where: str, *, aap: bool) -> Iterator[str]:
    """Money rules broken by an output: floats, bare minor units, major units, missing currencies."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from value_problems(item, f"{where}[{index}]", aap=aap)
        return
    if not isinstance(value, Mapping):
        return
    yield from _money_object_problems(value, where, aap=aap)
    for key, item in value.items():
        path = f"{where}.{key}"
        if key.endswith("_minor") and key != "amount_minor" and not isinstance(item, Mapping) and item is not None:
            yield f"{path} is a bare {item!r} with no currency"
        elif _MONEY_WORDS.search(key) and isinstance(item, float):
            yield f"{path} is the float {item!r}"
        yield from value_problems(item, path, aap=aap)


async def test_no_action_declares_money_as_a_float_a_bare_number_or_without_a_currency(rig: Rig) -> None:
    problems = []
    for action in rig.services.catalogue.all():
        if action.output_schema is not None:
            schema = self_contained(action.output_schema)
            problems += list(schema_problems(schema, action.name, aap=_is_aap(action.name)))
    assert problems == []


async def _sample(rig: Rig, name: str, payload: dict[str, Any], key: str = "crm") -> Any:
    response = await rig.call(name, payload, key=key)
    if response.status_code != 200:
        return None
    return response.json()["result"]["output"]


async def test_every_actions_sample_output_carries_money_as_integer_minor_units_and_a_currency(rig: Rig) -> None:
    samples: dict[str, Any] = {}
    for action in rig.services.catalogue.all():
        if action.example is None:
            continue
        payload = dict(action.example)
        if action.dealer_scoped:
            payload.setdefault("dealership_id", TOYOTA)
        samples[action.name] = await _sample(rig, action.name, payload)
    for query_id in ("aged_inventory", "repair_orders_per_day"):
        samples[f"db.query {query_id}"] = await _sample(
            rig, "db.query", {"query_id": query_id, "dealership_id": TOYOTA}
        )
    vin = samples["inventory.search"]["items"][0]["vin"]
    samples["inventory.get"] = await _sample(rig, "inventory.get", {"dealership_id": TOYOTA, "vin": vin})
    answered = {name for name, output in samples.items() if output is not None}
    assert {
        "inventory.search",
        "inventory.get",
        "db.query aged_inventory",
        "db.query repair_orders_per_day",
    } <= answered
    assert len(answered) >= 20, sorted(set(samples) - answered)
    problems = []
    for name, output in samples.items():
        problems += list(value_problems(output, name, aap=_is_aap(name)))
    assert problems == []


async def test_a_lead_submitted_with_aap_prices_reads_back_in_minor_units(rig: Rig) -> None:
    vehicle = (await _sample(rig, "inventory.search", {"dealership_id": TOYOTA, "limit": 1}))["items"][0]
    submitted = await _sample(
        rig,
        "aap.lead.submit",
        {
            "type": "lead.submit.request",
            "dealership_id": TOYOTA,
            "customer": {"first_name": "Ana", "last_name": "Lopez", "email": "ana.money@example.com"},
            "consent": {
                "granted_at": "2026-11-24T10:00:00Z",
                "allowed_channels": ["email"],
                "consent_text": "I agree that the dealership may e-mail me about this vehicle.",
                "source_agent": "shopping-assistant",
                "scope": ["lead_submission"],
            },
            "vehicle_of_interest": {
                "vin": vehicle["vin"],
                "price": {"amount": 32635, "currency": "USD"},
                "list_price": {"amount": 31495.5, "currency": "USD"},
            },
            "source_agent": "shopping-assistant",
        },
    )
    assert submitted is not None
    lead_id = submitted["data"]["lead_id"] if "data" in submitted else submitted["lead_id"]
    lead = await _sample(rig, "leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id})
    assert lead is not None
    interest = lead["vehicle_of_interest"]
    assert interest["price"] == {"amount_minor": 3263500, "currency": "USD"}
    assert interest["list_price"] == {"amount_minor": 3149550, "currency": "USD"}
    assert list(value_problems(lead, "leads.get", aap=False)) == []
