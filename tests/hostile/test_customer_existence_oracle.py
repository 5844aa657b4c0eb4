"""Probe: no anonymous or buyer-agent caller can learn whether a phone or e-mail is already a customer (issue 11,
item 3).

The same lead is submitted twice: once with the contact details of an existing customer of the dealership
(under another name), once with details nobody has used. Whatever the caller sees (status, body shape,
status words, messages) must be the same in both cases once the new lead's own ids are set aside, and no
response may carry the existing customer's id. Tried on the public AAP ``lead.submit`` (anonymous and with a
buyer agent's key, both bindings) and on ``leads.create`` with a buyer agent's key.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from gateway.support import TOYOTA, Rig

_VOLATILE = re.compile(r"^(lead|cons|cust|appt|req|msg|task|ctx)[-_]?[0-9a-zA-Z_-]{6,}$|^[0-9a-f-]{32,36}$")
_VOLATILE_KEYS = frozenset(
    {
        "lead_id",
        "id",
        "messageId",
        "message_id",
        "consent_id",
        "created_at",
        "updated_at",
        "submitted_at",
        "trace",
        "durationMs",
        "inResponseTo",
        "contextId",
        "taskId",
    }
)


async def _existing_customer(rig: Rig) -> tuple[str, str, str]:
    async with rig.services.store.transaction() as uow:
        customers, _ = await uow.customers.page(TOYOTA, 0, 50)
    for customer in customers:
        if customer.email and customer.phone:
            return customer.id, customer.email, customer.phone
    raise AssertionError("the demo dealership has no customer with both an e-mail and a phone")


def _fresh_contact() -> tuple[str, str]:
    tail = uuid.uuid4().int % 10_000_000
    # A valid San Francisco number: an exchange of 200-999 (0xx and 1xx are refused as no number at all).
    return f"nobody-{uuid.uuid4().hex[:10]}@example.net", f"+1415{200 + tail % 800:03d}{tail % 10_000:04d}"


def _shape(value: Any) -> Any:
    """``value`` with the new lead's own ids and times set aside (they differ by construction)."""
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in _VOLATILE_KEYS else _shape(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, str) and _VOLATILE.match(value):
        return "<id>"
    return value


def _aap_lead(email: str, phone: str) -> dict[str, Any]:
    return {
        "type": "lead.submit.request",
        "customer": {"first_name": "Probe", "last_name": "Stranger", "email": email, "phone": phone},
        "consent": {
            "granted_at": "2026-11-01T11:05:00Z",
            "allowed_channels": ["email", "phone"],
            "consent_text": "I agree to be contacted about this vehicle.",
            "source_agent": "probe-agent",
            "scope": ["lead_submission"],
        },
        "message": "Is this still available?",
        "source_agent": "probe-agent",
    }


def _a2a(binding: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"data": data, "mediaType": "application/vnd.autoagent.lead-submit-request+json"}],
    }
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": message}}
        return f"/dealers/{TOYOTA}/a2a/jsonrpc", body
    return f"/dealers/{TOYOTA}/a2a/message:send", {"message": message}


async def _submit_aap(rig: Rig, binding: str, key: str | None, email: str, phone: str) -> httpx.Response:
    path, body = _a2a(binding, _aap_lead(email, phone))
    headers = {"A2A-Version": "1.0"}
    if key:
        headers["Authorization"] = f"Bearer {rig.keys[key]}"
    return await rig.client.post(path, json=body, headers=headers)


def _assert_no_oracle(existing_id: str, known: httpx.Response, unknown: httpx.Response) -> None:
    assert existing_id not in known.text, "the response names the existing customer"
    assert known.status_code == unknown.status_code, (known.text[:400], unknown.text[:400])
    assert _shape(known.json()) == _shape(unknown.json())


# Which of the existing customer's details the stranger's lead reuses (each case on a fresh database, so a
# case never meets the previous case's lead as a legitimate 24-hour duplicate).
_REUSED = ["email", "phone", "both"]


def _contact(reused: str, email: str, phone: str) -> tuple[str, str]:
    fresh_email, fresh_phone = _fresh_contact()
    return (
        email if reused in ("email", "both") else fresh_email,
        phone if reused in ("phone", "both") else fresh_phone,
    )


@pytest.mark.parametrize("reused", _REUSED)
@pytest.mark.parametrize("key", [None, "shopper"], ids=["anonymous", "buyer-agent"])
@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_the_public_lead_submission_never_tells_whether_a_contact_is_already_a_customer(
    rig: Rig, binding: str, key: str | None, reused: str
) -> None:
    existing_id, email, phone = await _existing_customer(rig)
    known = await _submit_aap(rig, binding, key, *_contact(reused, email, phone))
    unknown = await _submit_aap(rig, binding, key, *_fresh_contact())
    assert known.status_code < 500, known.text[:400]
    _assert_no_oracle(existing_id, known, unknown)


@pytest.mark.parametrize("reused", _REUSED)
async def test_leads_create_by_a_buyer_agent_never_tells_whether_a_contact_is_already_a_customer(
    rig: Rig, reused: str
) -> None:
    existing_id, email, phone = await _existing_customer(rig)

    async def submit(mail: str, tel: str) -> httpx.Response:
        payload = {
            "dealership_id": TOYOTA,
            "customer": {"first_name": "Probe", "last_name": "Stranger", "email": mail, "phone": tel},
            "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
        }
        return await rig.call("leads.create", payload, key="shopper")

    known = await submit(*_contact(reused, email, phone))
    unknown = await submit(*_fresh_contact())
    assert known.status_code == 200, known.text[:400]
    _assert_no_oracle(existing_id, known, unknown)
