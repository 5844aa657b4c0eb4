"""A lead's e-mail address is checked once, in the one lead intake, by the people domain's rule: an address with a
CR/LF and a ``Bcc:`` header (which every door's ``format: email`` let through) is refused and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from forecourt.actions.lead_intake import checked_email
from forecourt.domain.people import EMAIL_MAX, email_problem
from forecourt.errors import ForecourtError, InvalidParams

from .conftest import Harness
from .test_leads_actions import lead_payload, stock

HOSTILE = {
    "ana@example.com\r\nBcc: everyone@example.net": "characters",
    "ana@example.com\nBcc:everyone@example.net": "characters",
    "ana@example.com\rX-Spam: no": "characters",
    "ana\x00@example.com": "characters",
    "ana lopez@example.com": "characters",
    "ana@example.com\u202e": "characters",
    "ana@@example.com": "at_sign",
    "ana@example.com,bob@example.net": "at_sign",
    "ana": "at_sign",
    '"ana"@example.com': "local_part",
    "<ana>@example.com": "local_part",
    ".ana@example.com": "local_part",
    "ana..lopez@example.com": "local_part",
    "a" * 65 + "@example.com": "local_part",
    "ana@example": "domain",
    "ana@[10.0.0.1]": "domain",
    "ana@192.168.0.1": "domain",
    "ana@-example.com": "domain",
    "ana@example..com": "domain",
    "ana@" + "b" * (EMAIL_MAX - 7) + ".com": "too_long",
}
ORDINARY = ["ana@example.com", "Ana.Lopez+cars@mail.example.co.uk", "o'brien@example.ie", "josé@exämple.de", "a@b.io"]


@pytest.mark.parametrize("address", sorted(HOSTILE))
def test_a_hostile_address_has_its_problem_named(address: str) -> None:
    assert email_problem(address) == HOSTILE[address]


def test_ordinary_addresses_have_no_problem() -> None:
    assert [a for a in ORDINARY if email_problem(a) is not None] == []


def test_the_intake_check_trims_and_lowercases_a_good_address_and_refuses_a_bad_one_without_echoing_it() -> None:
    assert checked_email("  Ana.Lopez@Example.COM ") == "ana.lopez@example.com"
    assert checked_email(None) is None
    with pytest.raises(InvalidParams) as caught:
        checked_email("ana@example.com\r\nBcc: everyone@example.net")
    error = caught.value
    assert error.http_status == 422
    assert error.details["errors"] == [
        {"path": "/customer/email", "rule": "format", "expected": "email", "problem": "characters"}
    ]
    assert "everyone" not in error.message + repr(error.details)


async def test_leads_create_refuses_a_header_in_the_email_and_writes_nothing(harness: Harness) -> None:
    await stock(harness)
    for address in ("ana@example.com\r\nBcc: everyone@example.net", "ana@example.com\nBcc:x@example.net"):
        with pytest.raises(ForecourtError) as caught:
            await harness.call("leads.create", lead_payload(customer={"first_name": "Ana", "email": address}))
        assert caught.value.code == "invalid_params"
    listed: Any = await harness.call("leads.list", {})
    assert listed["items"] == []
