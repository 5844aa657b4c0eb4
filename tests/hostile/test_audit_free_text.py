"""Probe: audit records never keep what a person wrote (issue 11, "audit args keep free text").

Appointment notes, consent text, messages and any other free text in a call's arguments are redacted in its
audit record by default, under whatever key they arrive; identifiers (dealership ids, VINs, codes) stay.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.support import TOYOTA, Rig

NOTE = "Please call my wife Jane at work, I am diabetic and will bring my dog"
CONSENT = "I authorize Demo Toyota to contact me about my divorce settlement car purchase"
MESSAGE = "My credit score is 512 after my bankruptcy last spring"


def _aap_lead() -> dict[str, Any]:
    return {
        "type": "lead.submit.request",
        "customer": {"first_name": "Probe", "last_name": "Writer", "email": "writer@example.com"},
        "consent": {
            "granted_at": "2026-11-01T11:05:00Z",
            "allowed_channels": ["email"],
            "consent_text": CONSENT,
            "source_agent": "probe-agent",
            "scope": ["lead_submission"],
        },
        "appointment": {
            "appointment_type": "test_drive",
            "requested_windows": [{"start": "2027-05-03T18:00:00Z", "end": "2027-05-03T19:00:00Z"}],
            "timezone": "America/Los_Angeles",
            "notes": NOTE,
        },
        "message": MESSAGE,
        "source_agent": "probe-agent",
    }


async def test_free_text_in_any_field_never_reaches_the_audit_record(rig: Rig) -> None:
    message = {
        "messageId": "m-free-text",
        "role": "ROLE_USER",
        "parts": [{"data": _aap_lead(), "mediaType": "application/vnd.autoagent.lead-submit-request+json"}],
    }
    response = await rig.client.post(
        f"/dealers/{TOYOTA}/a2a/message:send", json={"message": message}, headers={"A2A-Version": "1.0"}
    )
    assert response.status_code == 200, response.text[:300]
    rest = await rig.call(
        "leads.create",
        {
            "dealership_id": TOYOTA,
            "customer": {"first_name": "Probe", "email": "writer2@example.com"},
            "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
            "message": MESSAGE,
            "source": f"web form: {NOTE}",
        },
    )
    assert rest.status_code in (200, 422), rest.text[:300]
    rows = await rig.audit_rows()
    text = json.dumps([r["args_redacted"] for r in rows])
    for secret in (NOTE, CONSENT, MESSAGE, "diabetic", "bankruptcy", "divorce"):
        assert secret not in text, secret
    assert TOYOTA in text  # identifiers stay


def test_identifiers_codes_and_times_are_kept_while_sentences_are_not() -> None:
    from forecourt.gateway.redact import PII_KEYS, redact_for_audit

    schema = {
        "type": "object",
        "properties": {
            "vin": {"type": "string"},
            "status": {"type": "string", "enum": ["new", "contacted"]},
            "start": {"type": "string", "format": "date-time"},
            "service_codes": {"type": "array", "items": {"type": "string"}},
            "free": {"type": "string"},
        },
    }
    payload = {
        "vin": "1HGCY2F57RA000001",
        "status": "contacted",
        "start": "2027-01-01T10:00:00+00:00",
        "service_codes": ["OIL", "ROTATE"],
        "free": "brakes squeal when I drive my kids to school",
    }
    out = redact_for_audit(payload, schema, PII_KEYS)
    assert out == {**payload, "free": "[redacted]"}
