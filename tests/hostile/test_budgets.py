"""Budgets per member and per API key: one meter across every door, a structured ``budget.exceeded``, a reset
at the next period, shared by replicas through Redis."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types import Message, Role, SendMessageRequest, TaskState

from forecourt.domain.protections import Budget, Budgets, Protections
from forecourt.domain.tenancy import Member, Policy
from forecourt.errors import ForecourtError
from forecourt.gateway.backends.protections import RedisBudgetMeters
from forecourt.gateway.base import Principal
from forecourt.gateway.budgets import BudgetGuard, period_of, price_minor
from forecourt.redis_client import connect_redis
from gateway.support import MOTOR, TOYOTA, Template, start_rig, stop_rig
from hostile.protect_support import Live, mcp_client, prepare_db

SEARCH = {"dealership_id": TOYOTA, "limit": 1}


def _budget_policy(budgets: Budgets) -> Policy:
    return Policy(id="budgets", company_id=MOTOR, protections=Protections(budgets=budgets))


async def test_a_members_call_budget_is_one_meter_across_every_door_and_answers_budget_exceeded(
    hostile_template: Template, tmp_path: Path
) -> None:
    db = hostile_template.copy_to(tmp_path)
    await prepare_db(db, _budget_policy(Budgets(member=Budget(calls=2))))
    live = Live(db)
    await live.start()
    key = hostile_template.keys["crm"]
    try:
        first = await live.call("inventory.search", key, SEARCH)
        hc, client = mcp_client(f"{live.base_url}/mcp", key)
        async with hc, client:
            second = await client.call_tool("inventory.search", SEARCH)
            third = await client.call_tool("inventory.search", SEARCH)
        rest = await live.call("inventory.search", key, SEARCH)
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"])
            agent = await ClientFactory(config).create_from_url(live.base_url + "/agent")
            message = Message(
                message_id=uuid4().hex,
                role=Role.ROLE_USER,
                parts=[new_data_part({"action": "inventory.search", "payload": SEARCH}, media_type="application/json")],
            )
            try:
                events = [e async for e in agent.send_message(SendMessageRequest(message=message))]
            finally:
                await agent.close()
        metrics = await live.metrics()
        usage = await live.admin("GET", "/budgets", hostile_template.keys["admin"])
    finally:
        live.stop()
    mine = next(i for i in usage.json()["items"] if i["scope"] == "member" and i["id"] == "crm-agent")
    assert (mine["used"]["calls"], mine["limits"]) == (2, {"calls": 2})
    assert first.status_code == 200
    assert not second.is_error
    assert third.is_error
    assert json.loads(third.content[0].text)["error"]["code"] == "budget.exceeded"
    assert rest.status_code == 429
    error = rest.json()["status"]["error"]
    assert error["code"] == "budget.exceeded"
    assert (error["details"]["meter"], error["details"]["scope"], error["details"]["limit"]) == ("calls", "member", 2)
    assert error["details"]["resets_at"] > datetime.now(UTC).isoformat()
    task = [e.task for e in events if e.HasField("task")][-1]
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert get_data_parts(list(task.status.message.parts))[0]["error"]["code"] == "budget.exceeded"
    assert 'forecourt_budget_exceeded_total{meter="calls",scope="member"} 3.0' in metrics


async def test_an_api_keys_budget_binds_that_key_and_not_the_members_other_keys(
    hostile_template: Template, tmp_path: Path
) -> None:
    rig = await start_rig(hostile_template, tmp_path)
    try:
        keys = {k.name: k.prefix for k in await rig.gateway_keys(MOTOR)}
        policy = _budget_policy(Budgets(keys={keys["crm_toyota"]: Budget(calls=1)}))
        async with rig.services.store.transaction() as uow:
            await uow.tenancy.upsert_policy(policy)
        rig.gateway.tenancy.invalidate()
        once = await rig.call("inventory.search", SEARCH, key="crm_toyota")
        twice = await rig.call("inventory.search", SEARCH, key="crm_toyota")
        other_key = await rig.call("inventory.search", SEARCH, key="crm")
    finally:
        await stop_rig(rig)
    assert once.status_code == 200
    assert twice.status_code == 429
    assert twice.json()["status"]["error"]["details"]["scope"] == "key"
    assert other_key.status_code == 200


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.redis
async def test_budget_meters_are_shared_by_replicas_through_redis_and_reset_with_the_period(
    redis_url: str, redis_prefix: str
) -> None:
    client = connect_redis(redis_url)
    clock = Clock(datetime(2026, 11, 28, 23, 0, tzinfo=UTC))
    one = BudgetGuard(RedisBudgetMeters(client, prefix=redis_prefix), clock=clock)
    two = BudgetGuard(RedisBudgetMeters(client, prefix=redis_prefix), clock=clock)
    member = Member(id="crm-agent", company_id=MOTOR, profile_id="demo", name="CRM agent")
    principal = Principal.of_member(member, key_prefix="fc_test")
    policies = [_budget_policy(Budgets(period="day", member=Budget(calls=5, tokens_out=100)))]
    try:
        await one.admit(principal, policies)
        await one.consumed(principal, policies, tokens_in=10, tokens_out=100, spend=0)
        with pytest.raises(ForecourtError) as refused:
            await two.admit(principal, policies)  # another replica sees the tokens the first one counted
        clock.now += timedelta(hours=2)  # the next UTC day: a new meter
        await two.admit(principal, policies)
        usage = await two.usage(MOTOR, [("member", "crm-agent")], policies)
    finally:
        await client.aclose()
    assert refused.value.code == "budget.exceeded"
    assert refused.value.details["meter"] == "tokens_out"
    assert usage[0]["period"] == "2026-11-29"
    assert usage[0]["used"] == {"calls": 1}


def test_model_spend_is_priced_per_million_tokens_from_the_adapter_pricing_and_periods_are_utc() -> None:
    pricing = {"gpt-4o*": {"input_per_million_minor": 250, "output_per_million_minor": 1000}, "*": {}}
    assert price_minor(pricing, "gpt-4o-mini", 1_000_000, 500_000) == 750
    assert price_minor(pricing, "llama3.1", 1_000_000, 1_000_000) == 0
    assert price_minor(None, "gpt-4o", 10, 10) == 0
    assert period_of(datetime(2026, 12, 31, 23, 59, tzinfo=UTC), "month") == (
        "2026-12",
        datetime(2027, 1, 1, tzinfo=UTC),
    )
