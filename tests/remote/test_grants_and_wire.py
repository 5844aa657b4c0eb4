"""The nested-call grant and the host's answer, without sockets."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from forecourt.adapters.remote.wire import result_body
from forecourt.contract import AdapterResult, Principal
from forecourt.contract.grants import grant_key, sign_grant, verify_grant
from forecourt.errors import Unauthorized

KEY = grant_key("grant-tests-pepper-0123456789abcdef")
MEMBER = Principal(
    method="api_key",
    company_id="demo-motor-group",
    member_id="crm-agent",
    profile_id="demo",
    scopes=frozenset({"amcp:leads:read", "amcp:inventory:read"}),
    dealership_ids=frozenset({"demo-toyota-sf"}),
    key_prefix="fck_abc",
)


def test_a_grant_names_the_caller_as_the_gateway_authenticated_it() -> None:
    token = sign_grant(KEY, MEMBER, trace_id="a" * 32, session_id="s-1", writes=False, depth=2, expires_at=4e9)
    grant, _ = verify_grant(token, KEY)
    assert grant.principal == MEMBER
    assert (grant.trace_id, grant.session_id, grant.writes, grant.depth) == ("a" * 32, "s-1", False, 2)


def test_a_grant_ends_with_the_callers_credential_when_that_comes_before_the_deadline() -> None:
    soon = datetime.now(UTC) + timedelta(seconds=30)
    caller = Principal(method="oidc", company_id="c", member_id="m", expires_at=soon)
    token = sign_grant(KEY, caller, trace_id="", session_id=None, writes=True, depth=1, expires_at=time.time() + 600)
    grant, _ = verify_grant(token, KEY)
    assert grant.expires_at <= soon.timestamp() + 1


def test_a_grant_signed_with_another_key_is_refused() -> None:
    token = sign_grant(
        grant_key("another-pepper-0123456789abcdefgh"),
        MEMBER,
        trace_id="",
        session_id=None,
        writes=True,
        depth=1,
        expires_at=4e9,
    )
    with pytest.raises(Unauthorized):
        verify_grant(token, KEY)


def test_a_hosts_answer_writes_datetimes_and_decimals_as_json() -> None:
    at = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
    body = result_body(AdapterResult(output={"at": at, "price": Decimal("19.99")}, metadata={"when": at}))
    assert json.loads(json.dumps(body))["result"]["output"] == {"at": "2026-03-02T15:00:00Z", "price": "19.99"}
