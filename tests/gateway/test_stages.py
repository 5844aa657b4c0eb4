"""Rate limits, cache, idempotency, timeouts, bulkheads and credential injection, end to end over REST."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from forecourt.contract import ExecutionContext
from forecourt.gateway.credentials import build_credential_broker
from forecourt.store.base import Store

from .support import MOTOR, TOYOTA, Rig, error_code, register_action, set_policy

MakeRig = Callable[..., Awaitable[Rig]]
LEAD = {
    "customer": {"first_name": "Ida", "last_name": "Empotent", "email": "ida.empotent@example.com"},
    "message": "Do you have it in blue?",
}


def sample(rig: Rig, name: str, labels: dict[str, str]) -> float:
    """The current value of a Prometheus sample (0 when absent)."""
    value = rig.services.metrics.registry.get_sample_value(name, labels)
    return float(value or 0.0)


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Bounded polling: yield to the loop until ``predicate`` holds."""
    async with asyncio.timeout(timeout_s):
        # Bounded polling of state that no event reports (queue lengths inside the pipeline).
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0)


# ---------------------------------------------------------------- rate limits


def _limited(rate_limits: dict[str, int]) -> Callable[[Store], Awaitable[None]]:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, rate_limits=rate_limits)

    return prepare


async def test_the_per_action_limit_of_a_policy_rejects_with_retry_after_and_ratelimit_headers(
    make_rig: MakeRig,
) -> None:
    rig = await make_rig(prepare=_limited({"dealer.information": 2}))
    ok = [await rig.call("dealer.information", {"dealership_id": TOYOTA}) for _ in range(2)]
    assert [r.status_code for r in ok] == [200, 200]
    assert (ok[0].headers["RateLimit-Limit"], ok[0].headers["RateLimit-Remaining"]) == ("2", "1")
    assert ok[1].headers["RateLimit-Remaining"] == "0"
    rejected = await rig.call("dealer.information", {"dealership_id": TOYOTA})
    assert (rejected.status_code, error_code(rejected)) == (429, "rate_limited")
    error = rejected.json()["status"]["error"]
    assert error["retryable"] is True
    assert error["details"]["scope"] == "action"
    assert error["details"]["retry_after"] > 0
    assert int(rejected.headers["Retry-After"]) >= 1
    assert rejected.headers["RateLimit-Limit"] == "2"
    assert rejected.headers["RateLimit-Remaining"] == "0"
    # Another action of the same member is counted separately.
    assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200
    assert sample(rig, "forecourt_rate_limited_total", {"scope": "action"}) == 1
    rows = await rig.audit_rows()
    assert [r["status_code"] for r in rows] == [200, 200, 429, 200]


async def test_the_per_member_limit_counts_every_action_of_that_member_only(make_rig: MakeRig) -> None:
    rig = await make_rig(prepare=_limited({"member_per_minute": 2}))
    assert (await rig.call("dealer.information", {"dealership_id": TOYOTA})).status_code == 200
    assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200
    rejected = await rig.call("inventory.search", {"dealership_id": TOYOTA})
    assert (rejected.status_code, rejected.json()["status"]["error"]["details"]["scope"]) == (429, "member")
    # Another member of the same company still has its own allowance.
    assert (await rig.call("dealer.information", {"dealership_id": TOYOTA}, key="shopper")).status_code == 200


async def test_the_per_company_limit_counts_every_member_of_the_company(make_rig: MakeRig) -> None:
    rig = await make_rig(prepare=_limited({"company_per_minute": 3}))
    for key in ("crm", "shopper", "admin"):
        assert (await rig.call("dealer.information", {"dealership_id": TOYOTA}, key=key)).status_code == 200
    rejected = await rig.call("dealer.information", {"dealership_id": TOYOTA}, key="shopper")
    assert (rejected.status_code, rejected.json()["status"]["error"]["details"]["scope"]) == (429, "company")
    # Another company is not affected.
    assert (await rig.call("dealer.information", {"dealership_id": "demo-bay-sj"}, key="bay")).status_code == 200


# ---------------------------------------------------------------- cache


async def test_dealer_information_is_served_from_the_cache_the_second_time(rig: Rig) -> None:
    first = await rig.call("dealer.information", {"dealership_id": TOYOTA})
    second = await rig.call("dealer.information", {"dealership_id": TOYOTA})
    assert first.json()["result"] == second.json()["result"]
    assert sample(rig, "forecourt_cache_hits_total", {"action": "dealer.information"}) == 1
    other = await rig.call("dealer.information", {"dealership_id": "demo-honda-oak"})
    assert other.json()["result"]["output"]["id"] == "demo-honda-oak"
    assert sample(rig, "forecourt_cache_hits_total", {"action": "dealer.information"}) == 1
    assert [r["status_code"] for r in await rig.audit_rows()] == [200, 200, 200]


async def test_an_action_that_returns_pii_is_never_cached_even_if_marked_cacheable(rig: Rig) -> None:
    calls: list[int] = []

    async def handler(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        calls.append(1)
        return {"email": "someone@example.com", "n": len(calls)}

    register_action(rig.services, "test.pii_lookup", handler, cacheable=True, pii=True)
    outputs = [(await rig.call("test.pii_lookup", {"dealership_id": TOYOTA})).json() for _ in range(2)]
    assert [o["result"]["output"]["n"] for o in outputs] == [1, 2]
    assert sample(rig, "forecourt_cache_hits_total", {"action": "test.pii_lookup"}) == 0


async def test_a_cached_result_is_still_authorized_per_caller(rig: Rig) -> None:
    assert (await rig.call("dealer.information", {"dealership_id": TOYOTA})).status_code == 200
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, key="bay")
    assert (response.status_code, error_code(response)) == (403, "auth.tenancy_denied")
    assert response.json()["result"] is None


async def test_a_script_that_changes_a_cached_output_it_was_handed_leaves_the_next_answer_unchanged(rig: Rig) -> None:
    first = (await rig.call("dealer.information", {"dealership_id": TOYOTA})).json()["result"]
    await rig.call("dealer.information", {"dealership_id": TOYOTA})  # now cached: one shared output

    async def script(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        handed = await ctx.invoke("dealer.information", {"dealership_id": TOYOTA})
        handed["name"] = "Changed by a script"
        handed["address"]["city"] = "Nowhere"
        return {"changed": handed["name"]}

    register_action(rig.services, "test.changing_script", script)
    assert (await rig.call("test.changing_script", {"dealership_id": TOYOTA})).status_code == 200
    again = (await rig.call("dealer.information", {"dealership_id": TOYOTA})).json()["result"]
    assert again["output"] == first["output"]
    assert sample(rig, "forecourt_cache_hits_total", {"action": "dealer.information"}) == 3


# ---------------------------------------------------------------- idempotency


async def test_the_same_idempotency_key_and_payload_returns_the_original_lead(rig: Rig) -> None:
    payload = {"dealership_id": TOYOTA, **LEAD}
    first = await rig.call("leads.create", payload, headers={"Idempotency-Key": "idem-1"})
    second = await rig.call("leads.create", payload, headers={"Idempotency-Key": "idem-1"})
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.json()["result"]["output"]["id"] == second.json()["result"]["output"]["id"]
    assert "Idempotent-Replayed" not in first.headers
    assert second.headers["Idempotent-Replayed"] == "true"
    async with rig.services.store.transaction() as uow:
        leads, _ = await uow.leads.page(TOYOTA, 0, 500)
    assert sum(1 for lead in leads if lead.id == first.json()["result"]["output"]["id"]) == 1


async def test_the_same_idempotency_key_with_another_payload_is_a_conflict(rig: Rig) -> None:
    payload = {"dealership_id": TOYOTA, **LEAD}
    assert (await rig.call("leads.create", payload, headers={"Idempotency-Key": "idem-2"})).status_code == 200
    changed = {**payload, "message": "Actually, red."}
    response = await rig.call("leads.create", changed, headers={"Idempotency-Key": "idem-2"})
    assert (response.status_code, error_code(response)) == (409, "idempotency_conflict")
    assert response.json()["result"] is None


async def test_an_idempotency_key_in_the_envelope_meta_counts_too(rig: Rig) -> None:
    payload = {"dealership_id": TOYOTA, **LEAD}
    body: dict[str, Any] = {"id": "m1", "payload": payload, "meta": {"idempotencyKey": "idem-meta"}}
    headers = {"Authorization": f"Bearer {rig.keys['crm']}"}
    first = await rig.client.post("/mcp/leads.create", json=body, headers=headers)
    second = await rig.client.post("/mcp/leads.create", json=body, headers=headers)
    assert first.json()["result"]["output"]["id"] == second.json()["result"]["output"]["id"]
    assert second.headers["Idempotent-Replayed"] == "true"


# ---------------------------------------------------------------- timeouts and bulkheads


async def test_an_adapter_that_hangs_times_out_with_a_retryable_timeout(rig: Rig) -> None:
    async def hang(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        await asyncio.Event().wait()

    register_action(rig.services, "test.hang", hang, timeout_s=0.05)
    async with asyncio.timeout(5):
        response = await rig.call("test.hang", {"dealership_id": TOYOTA})
    assert (response.status_code, error_code(response)) == (504, "timeout")
    assert response.json()["status"]["error"]["retryable"] is True
    rows = await rig.audit_rows()
    assert [(r["action"], r["error_code"], r["result_class"]) for r in rows] == [("test.hang", "timeout", "error")]


async def test_a_company_adapter_setting_can_shorten_the_timeout(rig: Rig) -> None:
    async def hang(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        await asyncio.Event().wait()

    register_action(rig.services, "test.slow", hang, timeout_s=30.0)
    admin = {"Authorization": f"Bearer {rig.keys['admin']}"}
    put = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/adapters/adapter-test.slow", json={"timeout_s": 0.05}, headers=admin
    )
    assert put.status_code == 200, put.text
    async with asyncio.timeout(5):
        response = await rig.call("test.slow", {"dealership_id": TOYOTA})
    assert (response.status_code, error_code(response)) == (504, "timeout")


async def test_the_bulkhead_caps_concurrency_per_adapter_and_sheds_the_excess(rig: Rig) -> None:
    gate = asyncio.Event()
    running: list[int] = []
    peak: list[int] = [0]

    async def gated(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        running.append(1)
        peak[0] = max(peak[0], len(running))
        try:
            await gate.wait()
        finally:
            running.pop()
        return {"ok": True}

    action = register_action(rig.services, "test.gated", gated)
    rig.gateway.adapter_configs.defaults[action.adapter] = {"concurrency": 1}
    queued = [asyncio.create_task(rig.call("test.gated", {"dealership_id": TOYOTA})) for _ in range(5)]
    await wait_until(lambda: action.adapter in rig.gateway._bulkheads)
    bulkhead = rig.gateway._bulkheads[action.adapter]
    await wait_until(lambda: len(running) == 1 and bulkhead.waiting == 4)
    # One running and four waiting (4 x concurrency) is the most the adapter queues; the next is shed.
    shed = await rig.call("test.gated", {"dealership_id": TOYOTA})
    assert (shed.status_code, error_code(shed)) == (503, "overloaded")
    assert shed.json()["status"]["error"]["retryable"] is True
    gate.set()
    done = await asyncio.wait_for(asyncio.gather(*queued), 5)
    assert [r.status_code for r in done] == [200] * 5
    assert peak[0] == 1


# ---------------------------------------------------------------- credential injection

SECRET_ENV = "GW_TEST_VENDOR_API_KEY"
SECRET = "sk-live-9f8e7d6c5b4a3210-never-shown"


async def test_an_adapter_gets_a_short_lived_credential_that_is_never_returned_audited_or_logged(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    seen: list[Any] = []

    async def vendor(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        seen.append(ctx.credential)
        logging.getLogger("forecourt.adapters.test_vendor").info("calling vendor with %r", ctx.credential)
        return {"called": True, "credential_kind": ctx.credential.kind if ctx.credential else None}

    action = register_action(rig.services, "test.vendor", vendor, cacheable=True, pii=False)
    rig.gateway.adapter_configs.defaults[action.adapter] = {"credentials": {"type": "secret", "env": SECRET_ENV}}
    # The broker learns the operator's adapter defaults when it is built (bootstrap builds it once).
    rig.gateway.credentials = build_credential_broker(
        rig.services.settings, adapter_defaults=rig.gateway.adapter_configs.defaults
    )
    caplog.set_level(logging.DEBUG)
    responses = [await rig.call("test.vendor", {"dealership_id": TOYOTA}) for _ in range(2)]
    assert [r.status_code for r in responses] == [200, 200]
    assert seen
    assert seen[0].value == SECRET
    assert seen[0].headers == {"X-API-Key": SECRET}
    assert responses[0].json()["result"]["output"] == {"called": True, "credential_kind": "api_key"}
    for response in responses:
        assert SECRET not in response.text
    assert all(SECRET not in str(row) for row in await rig.audit_rows())
    assert SECRET not in caplog.text
    cached = [await rig.services.backends.cache.get(k) for k in getattr(rig.services.backends.cache, "_data", {})]
    assert len(cached) == 1, "the result was cached (without the credential)"
    assert all(SECRET.encode() not in (c or b"") for c in cached)


async def test_a_company_cannot_lengthen_a_timeout_or_resize_the_shared_bulkhead(rig: Rig) -> None:
    async def hang(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        await asyncio.Event().wait()

    action = register_action(rig.services, "test.capped", hang, timeout_s=0.05)
    admin = {"Authorization": f"Bearer {rig.keys['admin']}"}
    put = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/adapters/{action.adapter}",
        json={"timeout_s": 3600, "concurrency": 1},
        headers=admin,
    )
    assert put.status_code == 200
    async with asyncio.timeout(5):
        response = await rig.call("test.capped", {"dealership_id": TOYOTA})
    assert error_code(response) == "timeout"
    assert rig.gateway._bulkheads[action.adapter].size == 64


async def test_a_malformed_company_timeout_is_ignored(rig: Rig) -> None:
    action = register_action(rig.services, "test.quick")
    admin = {"Authorization": f"Bearer {rig.keys['admin']}"}
    put = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/adapters/{action.adapter}", json={"timeout_s": "soon"}, headers=admin
    )
    assert put.status_code == 200
    assert (await rig.call("test.quick", {"dealership_id": TOYOTA})).status_code == 200
