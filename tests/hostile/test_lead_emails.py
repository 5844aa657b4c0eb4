"""Probe: a lead's e-mail address smuggling mail headers (issue 12, item 10).

Every door's schema said ``format: email``, which only asks for an ``@``: ``ana@example.com\\r\\nBcc: ...`` was
accepted, stored and handed to CRMs. The one lead intake now holds every address to the people domain's rule, so
``leads.create`` and ``aap.lead.submit`` (here on the REST envelope; tests/contract runs every door) refuse it
with ``invalid_params`` at ``/customer/email``, write nothing, echo nothing and log nothing at ERROR.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.support import TOYOTA, Rig

from .support import assert_clean_refusal, error_code_of

HOSTILE = [
    "ana@example.com\r\nBcc: everyone@victims.example",
    "ana@example.com\nBcc:everyone@victims.example",
    "ana@example.com\r\n\r\n<adf>forged</adf>",
    "everyone@victims.example, ana@example.com",
    "Ana <ana@example.com>",
    "ana@example.com\x00",
]


def _aap_lead(email: str) -> dict[str, Any]:
    granted = (datetime.now(UTC) - timedelta(minutes=1)).replace(microsecond=0).isoformat()
    return {
        "dealership_id": TOYOTA,
        "type": "lead.submit.request",
        "source_agent": "hostile-suite",
        "customer": {"first_name": "Ana", "last_name": "Lopez", "email": email},
        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"], "granted_at": granted,
                    "consent_text": "You may contact me.", "source_agent": "hostile-suite"},
    }  # fmt: skip


def _lead(email: str) -> dict[str, Any]:
    return {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Ana", "last_name": "Lopez", "email": email},
        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"], "consent_text": "You may."},
    }


async def _customers_with(rig: Rig, fragment: str) -> int:
    async with rig.services.store.read() as uow:
        customers, _ = await uow.customers.page(TOYOTA, 0, 100_000)
    return sum(1 for c in customers if c.email and fragment in c.email)


@pytest.mark.parametrize("action", ["leads.create", "aap.lead.submit"])
async def test_a_lead_email_carrying_headers_is_refused_cleanly_and_nothing_is_written(
    rig: Rig, action: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for email in HOSTILE:
        payload = _aap_lead(email) if action.startswith("aap.") else _lead(email)
        response = await rig.call(action, payload)
        assert_clean_refusal(response, echoed=["victims.example", "forged"])
        assert response.status_code == 422, (email, response.text[:300])
        assert error_code_of(response.json()) == "invalid_params"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert await _customers_with(rig, "victims") == 0
