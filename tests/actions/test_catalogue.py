"""The dealer actions in the catalogue: names, scopes, flags, and valid Draft 2020-12 schemas."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from forecourt.actions.catalogue import dealer_actions, dealer_handlers, register_dealer_actions
from forecourt.contract import Action, Catalogue

EXPECTED_SCOPES = {
    "dealer.information": "amcp:inventory:read",
    "inventory.search": "amcp:inventory:read",
    "inventory.get": "amcp:inventory:read",
    "inventory.facets": "amcp:inventory:read",
    "leads.list": "amcp:leads:read",
    "leads.get": "amcp:leads:read",
    "leads.create": "amcp:leads:write",
    "leads.update": "amcp:leads:write",
    "customers.list": "amcp:leads:read",
    "customers.get": "amcp:leads:read",
    "consent.list": "amcp:consent:read",
    "consent.get": "amcp:consent:read",
    "consent.create": "amcp:consent:write",
    "consent.update": "amcp:consent:write",
    "service.list_repair_orders": "amcp:service:read",
    "service.get_repair_order": "amcp:service:read",
    "service.book_appointment": "amcp:service:write",
    "service.get_appointment": "amcp:service:read",
    "service.list_appointments": "amcp:service:read",
    "service.update_appointment": "amcp:service:write",
    "deals.request_trade_value": "amcp:deals:write",
    "events.list": "amcp:events:read",
}
PAGED = {
    "inventory.search",
    "leads.list",
    "customers.list",
    "consent.list",
    "service.list_repair_orders",
    "service.list_appointments",
    "events.list",
}
ACTIONS = dealer_actions()


def ids(action: Action) -> str:
    return action.name


def test_every_expected_action_is_registered_with_its_scope_and_handler() -> None:
    catalogue = Catalogue()
    register_dealer_actions(catalogue)
    assert {a.name: a.scope for a in catalogue.all()} == EXPECTED_SCOPES
    assert all(catalogue.handler_for(a) is not None for a in catalogue.all())
    assert set(EXPECTED_SCOPES) == set(dealer_handlers())


@pytest.mark.parametrize("action", ACTIONS, ids=ids)
def test_input_and_output_schemas_are_valid_draft_2020_12(action: Action) -> None:
    Draft202012Validator.check_schema(action.input_schema)
    assert action.output_schema is not None
    Draft202012Validator.check_schema(action.output_schema)


@pytest.mark.parametrize("action", ACTIONS, ids=ids)
def test_inputs_are_closed_objects_that_take_an_optional_dealership_id(action: Action) -> None:
    schema: dict[str, Any] = dict(action.input_schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["properties"]["dealership_id"]["type"] == "string"
    assert "dealership_id" not in schema.get("required", [])
    validator = Draft202012Validator(schema)
    assert not validator.is_valid({**_minimal(action), "unexpected": 1})


@pytest.mark.parametrize("action", ACTIONS, ids=ids)
def test_list_actions_take_a_cursor_and_a_limit_of_one_to_a_hundred(action: Action) -> None:
    props = action.input_schema["properties"]
    assert ("cursor" in props) == (action.name in PAGED)
    if action.name in PAGED:
        assert props["cursor"]["type"] == "string"
        assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 100)


@pytest.mark.parametrize("action", ACTIONS, ids=ids)
def test_mutating_actions_need_a_write_scope_and_reads_a_read_scope(action: Action) -> None:
    assert action.scope.endswith(":write") == action.side_effect
    assert action.type == "tool.run"
    assert action.adapter == "dealer-data"
    assert action.domain == action.scope.split(":")[1]
    assert len(action.description) > 60


def test_only_the_non_pii_profile_and_inventory_reads_are_cacheable() -> None:
    cacheable = {a.name for a in ACTIONS if a.cacheable}
    assert cacheable == {"dealer.information", "inventory.search", "inventory.get", "inventory.facets"}
    assert all(not a.pii and a.read_only for a in ACTIONS if a.cacheable)


def test_inventory_reads_are_cached_until_the_inventory_changes_with_a_30_second_safety_net() -> None:
    follows = {a.name: a.cache_ttl_s for a in ACTIONS if a.cache_follows_changes}
    assert follows == {"inventory.search": 30.0, "inventory.get": 30.0, "inventory.facets": 30.0}
    # The dealership profile is not in the outbox: it keeps a plain TTL.
    profile = next(a for a in ACTIONS if a.name == "dealer.information")
    assert (profile.cache_follows_changes, profile.cache_ttl_s) == (False, 60.0)


def test_actions_holding_customer_data_are_flagged_pii() -> None:
    pii = {a.name for a in ACTIONS if a.pii}
    assert {"leads.get", "leads.create", "customers.list", "customers.get", "consent.list"} <= pii
    assert not pii & {"inventory.search", "inventory.get", "events.list", "dealer.information"}


def test_only_consent_revocation_is_destructive() -> None:
    assert {a.name for a in ACTIONS if a.destructive} == {"consent.update"}


def _minimal(action: Action) -> dict[str, Any]:
    """A smallest valid payload, used to show that unknown keys are rejected on top of it."""
    samples: dict[str, dict[str, Any]] = {
        "inventory.get": {"vin": "4T1BF1FK0KU000001"},
        "leads.get": {"lead_id": "l1"},
        "leads.create": {"customer": {"first_name": "Ana", "email": "ana@example.com"}},
        "leads.update": {"lead_id": "l1", "status": "contacted"},
        "customers.get": {"customer_id": "c1"},
        "consent.get": {"consent_id": "c1"},
        "consent.create": {"customer_id": "c1", "scope": ["marketing"], "allowed_channels": ["email"]},
        "consent.update": {"consent_id": "c1", "status": "revoked"},
        "service.get_repair_order": {"ro_number": "RO-1"},
        "service.get_appointment": {"appointment_id": "a1"},
        "service.update_appointment": {"appointment_id": "a1", "status": "cancelled"},
        "service.book_appointment": {
            "vehicle_id": "v1",
            "start": "2026-05-05T09:00:00-07:00",
            "service_codes": ["OIL"],
        },
        "deals.request_trade_value": {
            "year": 2020,
            "make": "Toyota",
            "model": "Camry",
            "mileage": {"value": 40000},
            "condition": "good",
        },
    }
    payload = samples.get(action.name, {})
    assert Draft202012Validator(dict(action.input_schema)).is_valid(payload), action.name
    return payload
