"""Per-turn restrictions and budgets through the REST door while Redis is unreachable (no mocks).

A dead Redis is a closed loopback port; an outage of a live one is a relay the test switches off. A side-effect
call of a restricted session never slips through on a guess (a retryable 503); untrusted output whose taint cannot
be shared is withheld; budgets fail as the rate limits do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from forecourt.domain.protections import AfterUntrusted, Budget, Budgets, Protections
from forecourt.domain.tenancy import Policy
from gateway.support import MOTOR, TOYOTA, Rig, Template, start_rig, stop_rig
from gateway_backends.support import TcpRelay
from hostile.protect_support import prepare_db

DEAD_URL = "redis://127.0.0.1:1/0"
RESTRICT = Policy(
    id="per-turn",
    company_id=MOTOR,
    protections=Protections(after_untrusted=AfterUntrusted(refuse=("leads.update",))),
)
SEARCH = {"dealership_id": TOYOTA, "limit": 1}


def _error(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["status"]["error"]
    return error


def _dir(tmp_path: Path, name: str) -> Path:
    made = tmp_path / name
    made.mkdir()
    return made


async def _rig(template: Template, tmp_path: Path, *policies: Policy, **overrides: Any) -> Rig:
    db = template.copy_to(tmp_path)
    await prepare_db(db, *policies)
    return await start_rig(template, tmp_path, db=db, **overrides)


async def _a_lead(template: Template, tmp_path: Path) -> str:
    rig = await start_rig(template, _dir(tmp_path, "lookup"))
    try:
        listed = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 1})
    finally:
        await stop_rig(rig)
    return str(listed.json()["result"]["output"]["items"][0]["id"])


async def test_with_redis_unreachable_a_restricted_sessions_side_effect_call_gets_a_retryable_503_not_a_pass(
    hostile_template: Template, tmp_path: Path
) -> None:
    lead_id = await _a_lead(hostile_template, tmp_path)
    rig = await _rig(hostile_template, tmp_path, RESTRICT, redis_url=DEAD_URL)
    update = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "contacted"}
    try:
        refused = await rig.call("leads.update", update)
        withheld = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 1})
        plain = await rig.call("inventory.search", SEARCH)
        records = await rig.audit(MOTOR)
    finally:
        await stop_rig(rig)
    assert refused.status_code == 503
    assert (_error(refused)["code"], _error(refused)["retryable"]) == ("overloaded", True)
    assert _error(refused)["details"]["reason"] == "session_state_unavailable"
    # Untrusted output whose taint no replica would know of is not handed over either.
    assert withheld.status_code == 503
    assert _error(withheld)["details"]["reason"] == "session_state_unavailable"
    # Calls the restriction does not concern are served (the rate limiter fails open).
    assert plain.status_code == 200
    update_records = [r for r in records if r.action == "leads.update"]
    assert [(r.status_code, r.error_code) for r in update_records] == [(503, "overloaded")]


async def test_with_redis_unreachable_a_company_without_restrictions_keeps_reading_untrusted_output(
    hostile_template: Template, tmp_path: Path
) -> None:
    rig = await _rig(hostile_template, tmp_path, redis_url=DEAD_URL)
    try:
        listed = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 1})
    finally:
        await stop_rig(rig)
    assert listed.status_code == 200
    assert listed.json()["result"]["metadata"]["provenance"]["sources"]


async def test_with_redis_unreachable_budgets_fail_open_by_default_and_closed_when_configured(
    hostile_template: Template, tmp_path: Path
) -> None:
    budget = Policy(id="budgets", company_id=MOTOR, protections=Protections(budgets=Budgets(member=Budget(calls=1))))
    opened = await _rig(hostile_template, _dir(tmp_path, "open"), budget, redis_url=DEAD_URL)
    try:
        served = [(await opened.call("inventory.search", SEARCH)).status_code for _ in range(3)]
        report = await opened.call("admin.budgets.usage", {"company_id": MOTOR}, key="admin")
    finally:
        await stop_rig(opened)
    closed = await _rig(
        hostile_template, _dir(tmp_path, "closed"), budget, redis_url=DEAD_URL, rate_limit_fail_mode="closed"
    )
    try:
        refused = await closed.call("inventory.search", SEARCH)
    finally:
        await stop_rig(closed)
    assert served == [200, 200, 200]  # unmetered, as the rate limits are
    assert report.status_code == 503  # never a report of zeros
    assert refused.status_code == 503
    assert _error(refused)["code"] == "overloaded"
    assert _error(refused)["retryable"] is True


@pytest.fixture
async def relay(redis_url: str) -> AsyncIterator[TcpRelay]:
    parts = urlsplit(redis_url)
    made = TcpRelay(parts.hostname or "127.0.0.1", parts.port or 6379)
    await made.start()
    try:
        yield made
    finally:
        if made._server is not None:
            await made.stop()


@pytest.mark.redis
async def test_a_session_tainted_before_an_outage_cannot_run_a_refused_tool_on_another_replica_during_it(
    hostile_template: Template, tmp_path: Path, relay: TcpRelay, redis_url: str, redis_prefix: str
) -> None:
    lead_id = await _a_lead(hostile_template, tmp_path)
    db = hostile_template.copy_to(tmp_path)
    await prepare_db(db, RESTRICT)
    shared = {"redis_url": relay.url_for(redis_url), "redis_prefix": redis_prefix}
    one = await start_rig(hostile_template, tmp_path, db=db, instance_name="replica-1", **shared)
    two = await start_rig(hostile_template, tmp_path, db=db, instance_name="replica-2", **shared)
    update = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "contacted"}
    try:
        assert (await one.call("leads.list", {"dealership_id": TOYOTA, "limit": 1})).status_code == 200
        await relay.stop()
        elsewhere = await two.call("leads.update", update)
        here = await one.call("leads.update", update)
        await relay.start()
        recovered = await two.call("leads.update", update)
    finally:
        await stop_rig(one)
        await stop_rig(two)
    assert elsewhere.status_code == 503
    assert _error(elsewhere)["details"]["reason"] == "session_state_unavailable"
    assert _error(here)["code"] == "policy.session_restricted"  # this replica saw the taint itself
    assert _error(recovered)["code"] == "policy.session_restricted"
