"""JSON Schemas of the ``leads.*`` actions."""

from __future__ import annotations

from typing import Any

from forecourt.actions.common import (
    ID,
    MILEAGE_INPUT,
    NULLABLE_STRING,
    TIMESTAMP,
    input_schema,
    obj,
    output_schema,
    page_schema,
)
from forecourt.domain.people import Channel, LeadStatus

LEAD_STATUS: dict[str, Any] = {"enum": [s.value for s in LeadStatus]}
CHANNELS: dict[str, Any] = {
    "type": "array",
    "items": {"enum": [c.value for c in Channel]},
    "minItems": 1,
    "uniqueItems": True,
}
CONSENT_SCOPE: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"},
    "minItems": 1,
    "uniqueItems": True,
    "description": 'What the consent covers, e.g. ["lead_submission"].',
}

CUSTOMER_INPUT: dict[str, Any] = obj(
    {
        "first_name": {"type": "string", "minLength": 1, "maxLength": 100},
        "last_name": {"type": "string", "maxLength": 100},
        "email": {"type": "string", "format": "email", "maxLength": 254},
        "phone": {"type": "string", "minLength": 7, "maxLength": 32, "description": "E.164 preferred."},
        "postal_code": {"type": "string", "maxLength": 16},
        "preferred_channel": {"enum": [c.value for c in Channel]},
    },
    ["first_name"],
    anyOf=[{"required": ["email"]}, {"required": ["phone"]}],
    description="The buyer's contact details; an e-mail or a phone number is required.",
)
VEHICLE_OF_INTEREST: dict[str, Any] = obj(
    {
        "vehicle_id": {**ID, "description": "Server id of a unit in this dealership's inventory."},
        "vin": {"type": "string", "pattern": "^[A-HJ-NPR-Za-hj-npr-z0-9]{17}$"},
        "stock": {"type": "string", "minLength": 1, "maxLength": 64},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
        "make": {"type": "string", "maxLength": 60},
        "model": {"type": "string", "maxLength": 60},
        "trim": {"type": "string", "maxLength": 100},
        "condition": {"enum": ["new", "used", "cpo"]},
    },
    [],
    description="The vehicle the buyer wants: a vehicle_id, VIN or stock number, or just what they said.",
)
TRADE_IN: dict[str, Any] = obj(
    {
        "vin": {"type": "string", "pattern": "^[A-HJ-NPR-Za-hj-npr-z0-9]{17}$"},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
        "make": {"type": "string", "maxLength": 60},
        "model": {"type": "string", "maxLength": 60},
        "trim": {"type": "string", "maxLength": 100},
        "mileage": MILEAGE_INPUT,
        "condition": {"enum": ["excellent", "good", "fair", "poor"]},
    },
    [],
    description="The vehicle the buyer wants to trade in; any subset of fields.",
)
CONSENT_INPUT: dict[str, Any] = obj(
    {
        "scope": {**CONSENT_SCOPE, "default": ["lead_submission"]},
        "allowed_channels": CHANNELS,
        "granted_at": TIMESTAMP,
        "expires_at": TIMESTAMP,
        "consent_text": {"type": "string", "minLength": 1, "maxLength": 4000},
    },
    ["allowed_channels"],
    description="The buyer's consent to be contacted; recorded as a consent grant. Scope must include lead_submission.",
)

LEAD: dict[str, Any] = obj(
    {
        "id": ID,
        "status": LEAD_STATUS,
        "customer_id": NULLABLE_STRING,
        "vehicle_id": NULLABLE_STRING,
        "vehicle_of_interest": {"type": "object"},
        "trade_in": {"type": ["object", "null"]},
        "message": NULLABLE_STRING,
        "source": {"type": "string"},
        "source_agent": NULLABLE_STRING,
        "consent_id": NULLABLE_STRING,
        "appointment_id": NULLABLE_STRING,
        "duplicate_of": {**NULLABLE_STRING, "description": "The earlier lead this one duplicates."},
        "assigned_to": NULLABLE_STRING,
        "submitted_at": TIMESTAMP,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)

LIST_IN = input_schema({"status": LEAD_STATUS}, paged=True)
LIST_OUT = page_schema(LEAD)
GET_IN = input_schema({"lead_id": ID}, ["lead_id"])
LEAD_OUT = output_schema(LEAD)
CREATE_IN = input_schema(
    {
        "customer": CUSTOMER_INPUT,
        "vehicle_of_interest": VEHICLE_OF_INTEREST,
        "trade_in": TRADE_IN,
        "message": {"type": "string", "maxLength": 4000},
        "consent": CONSENT_INPUT,
        "source": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$", "default": "agent"},
        "source_agent": {"type": "string", "minLength": 1, "maxLength": 128},
        "submitted_at": TIMESTAMP,
        "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 128},
    },
    ["customer"],
)
UPDATE_IN = input_schema(
    {
        "lead_id": ID,
        "status": LEAD_STATUS,
        "assigned_to": {"type": ["string", "null"], "maxLength": 128},
        "message": {"type": "string", "maxLength": 4000},
    },
    ["lead_id"],
    anyOf=[{"required": ["status"]}, {"required": ["assigned_to"]}, {"required": ["message"]}],
)
