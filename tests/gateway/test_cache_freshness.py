"""Cached inventory reads follow the outbox: a change is never hidden behind a cached result for long.

The apps here run their outbox dispatcher only when a test calls ``poll_once()`` (no background polling),
so every step is deterministic: what a replica knows is exactly what its dispatcher has read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest

from forecourt.bootstrap import Services, create_app
from forecourt.contract import ExecutionContext
from forecourt.demo import load_demo
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.vehicle import Condition, Vehicle
from forecourt.domain.vin import with_check_digit
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.gateway.base import Credentials, Invocation, Outcome
from forecourt.gateway.freshness import ChangeGenerations
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.base import Store

from .support import (
    CURSOR_SECRET,
    DEMO_NOW,
    MOTOR,
    PEPPER,
    TOYOTA,
    Rig,
    Template,
    base_settings,
    register_action,
    set_policy,
    use_test_tracer,
)

UPSERT = "test.vehicle_upsert"


def new_vehicle(n: int, dealership_id: str = TOYOTA) -> Vehicle:
    """A vehicle the demo data does not have (its own VIN range)."""
    return Vehicle(
        id=f"veh-fresh-{dealership_id}-{n}",
        dealership_id=dealership_id,
        vin=with_check_digit(f"5YJ3E1EA0PF{n:06d}"),
        stock=f"FRESH{n:04d}",
        year=2024,
        make="Tesla",
        model="Model 3",
        condition=Condition.USED,
        price=Money.of(3_100_000),
        mileage=Measure(value=9_000),
        last_verified_at=DEMO_NOW - timedelta(hours=1),
    )


async def put_vehicle(store: Store, vehicle: Vehicle) -> None:
    """Write a vehicle straight to the store, as another replica or a CLI import would."""
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle)


async def _upsert(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
    assert ctx.dealership_id is not None
    await put_vehicle(ctx.store, new_vehicle(int(payload["n"]), ctx.dealership_id))
    return {"ok": True}


def add_upsert_action(services: Services) -> None:
    """A side-effect action that adds a vehicle (no built-in action writes inventory)."""
    register_action(
        services, UPSERT, _upsert, side_effect=True, scope="amcp:inventory:write", properties={"n": {"type": "integer"}}
    )


async def call(rig: Rig, action: str, payload: dict[str, Any], *, key: str = "crm") -> Outcome:
    """Invoke through the gateway with one of the template's API keys."""
    inv = Invocation(
        action=action,
        payload={"dealership_id": TOYOTA, **payload},
        credentials=Credentials(bearer=rig.keys.get(key, key)),
    )
    return await rig.gateway.invoke(inv)


async def aap(rig: Rig, action: str, payload: dict[str, Any]) -> Outcome:
    """An AAP skill called by an anonymous buyer agent at the public Toyota dealer agent."""
    inv = Invocation(action=action, payload=payload, surface="a2a", anonymous_dealership=TOYOTA)
    return await rig.gateway.invoke(inv)


async def search_vin(rig: Rig, n: int) -> Outcome:
    """``inventory.search`` for the VIN of ``new_vehicle(n)``."""
    return await call(rig, "inventory.search", {"vin": new_vehicle(n).vin})


def found(outcome: Outcome) -> list[str]:
    return [item["vin"] for item in outcome.output["items"]]


def hits(rig: Rig, action: str = "inventory.search") -> float:
    return rig.services.metrics.registry.get_sample_value("forecourt_cache_hits_total", {"action": action}) or 0.0


def bypasses(rig: Rig, action: str = "inventory.search") -> float:
    value = rig.services.metrics.registry.get_sample_value("forecourt_cache_bypassed_total", {"action": action})
    return value or 0.0


async def poll(rig: Rig) -> None:
    await rig.services.events.poll_once()


@asynccontextmanager
async def quiet_app(settings: Settings, keys: dict[str, str]) -> AsyncIterator[Rig]:
    """An app whose outbox dispatcher polls only when the test calls ``poll_once()``."""
    app = create_app(settings)
    services: Services = app.state.services
    services.background.remove(services.events.run)
    assert services.generations is not None
    services.generations.stale_after_s = None  # no wall-clock expiry in these tests (tested on its own below)
    spans = use_test_tracer(services)
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    try:
        yield Rig(services, client, keys, spans)
    finally:
        await client.aclose()
        await services.close()


@pytest.fixture
async def quiet(template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    async with quiet_app(base_settings(template.copy_to(tmp_path)), template.keys) as rig:
        add_upsert_action(rig.services)
        yield rig


class BrokenStore:
    """A store whose every transaction fails (the database went away)."""

    def transaction(self) -> NoReturn:
        raise ConnectionError("database unreachable")

    read = transaction


# ---------------------------------------------------------------- in one process


async def test_nothing_is_cached_before_the_dispatcher_has_polled(quiet: Rig) -> None:
    first, second = await search_vin(quiet, 1), await search_vin(quiet, 1)
    assert (first.cached, second.cached) == (False, False)
    assert (hits(quiet), bypasses(quiet)) == (0, 2)


async def test_a_second_identical_search_is_served_from_the_cache_once_the_dispatcher_polls(quiet: Rig) -> None:
    await poll(quiet)
    first, second = await search_vin(quiet, 1), await search_vin(quiet, 1)
    assert (first.cached, second.cached) == (False, True)
    assert first.output == second.output
    assert (hits(quiet), bypasses(quiet)) == (1, 0)
    other_page = await call(quiet, "inventory.search", {"vin": new_vehicle(1).vin, "limit": 5})
    assert not other_page.cached, "the page size is part of the key"


async def test_a_vehicle_upserted_through_the_gateway_is_found_by_the_next_search_at_once(quiet: Rig) -> None:
    await poll(quiet)
    assert found(await search_vin(quiet, 2)) == []
    assert (await search_vin(quiet, 2)).cached
    await call(quiet, UPSERT, {"n": 2})
    assert quiet.services.events._wake.is_set(), "the write woke the dispatcher"
    after = await search_vin(quiet, 2)  # no poll in between
    assert (after.cached, found(after)) == (False, [new_vehicle(2).vin])
    await poll(quiet)
    again = [await search_vin(quiet, 2) for _ in range(2)]
    assert [found(o) for o in again] == [[new_vehicle(2).vin]] * 2
    assert again[1].cached


async def test_a_change_written_straight_to_the_store_is_seen_after_one_dispatcher_poll(quiet: Rig) -> None:
    await poll(quiet)
    assert found(await search_vin(quiet, 3)) == []
    await put_vehicle(quiet.services.store, new_vehicle(3))
    # Until this process's dispatcher reads the change (one poll interval), the cached page may be served.
    assert (await search_vin(quiet, 3)).cached
    await poll(quiet)
    after = await search_vin(quiet, 3)
    assert (after.cached, found(after)) == (False, [new_vehicle(3).vin])


async def test_facets_and_get_follow_changes_too(quiet: Rig) -> None:
    await poll(quiet)
    facets = await call(quiet, "inventory.facets", {})
    assert (await call(quiet, "inventory.facets", {})).cached
    await put_vehicle(quiet.services.store, new_vehicle(4))
    await poll(quiet)
    fresh = await call(quiet, "inventory.facets", {})
    assert (fresh.cached, fresh.output["total"]) == (False, facets.output["total"] + 1)
    vehicle = await call(quiet, "inventory.get", {"vin": new_vehicle(4).vin})
    assert vehicle.output["vin"] == new_vehicle(4).vin
    assert (await call(quiet, "inventory.get", {"vin": new_vehicle(4).vin})).cached


async def test_caching_stops_after_a_failed_poll_and_resumes_after_a_good_one(quiet: Rig) -> None:
    dispatcher = quiet.services.events
    await poll(quiet)
    await search_vin(quiet, 5)
    assert (await search_vin(quiet, 5)).cached
    store, dispatcher.store = dispatcher.store, BrokenStore()
    with pytest.raises(ConnectionError):
        await dispatcher.poll_once()
    assert not (await search_vin(quiet, 5)).cached
    assert bypasses(quiet) == 1
    dispatcher.store = store
    await dispatcher.poll_once()
    assert (await search_vin(quiet, 5)).cached, "nothing changed meanwhile: the entry is still current"


async def test_a_stopped_dispatcher_stops_caching(quiet: Rig) -> None:
    await poll(quiet)
    await search_vin(quiet, 6)
    assert (await search_vin(quiet, 6)).cached
    assert quiet.services.generations is not None
    quiet.services.generations.stopped()
    assert not (await search_vin(quiet, 6)).cached


async def test_a_redaction_policy_change_applies_to_results_already_cached(quiet: Rig) -> None:
    await poll(quiet)
    first = await call(quiet, "inventory.search", {"limit": 1})
    assert first.output["items"][0]["vin"] != "[redacted]"
    assert (await call(quiet, "inventory.search", {"limit": 1})).cached
    await set_policy(quiet.services.store, MOTOR, redact_fields=("vin",))
    quiet.gateway.tenancy.invalidate()  # what an admin API edit does on this replica
    redacted = await call(quiet, "inventory.search", {"limit": 1})
    assert (redacted.cached, redacted.output["items"][0]["vin"]) == (False, "[redacted]")


async def test_without_a_dispatcher_change_tracked_actions_are_never_cached(quiet: Rig) -> None:
    quiet.gateway.freshness = ChangeGenerations()
    for _ in range(2):
        assert not (await search_vin(quiet, 7)).cached
    # The dealership profile keeps its plain TTL.
    await call(quiet, "dealer.information", {})
    assert (await call(quiet, "dealer.information", {})).cached


async def test_the_aap_inventory_skills_are_cached_and_follow_changes(quiet: Rig) -> None:
    await poll(quiet)
    request = {"type": "inventory.search.request", "filters": {"make": ["Tesla"]}}
    before = await aap(quiet, "aap.inventory.search", request)
    assert (await aap(quiet, "aap.inventory.search", request)).cached
    await put_vehicle(quiet.services.store, new_vehicle(8))
    await poll(quiet)
    after = await aap(quiet, "aap.inventory.search", request)
    assert not after.cached
    assert after.output["data"]["total"] == before.output["data"]["total"] + 1


# ---------------------------------------------------------------- the generations themselves


def test_a_dealership_with_no_event_read_has_the_dispatchers_start_position_as_its_token() -> None:
    generations = ChangeGenerations()
    generations.started_at(40)
    assert generations.token("d1") is None, "not live before the first poll"
    generations.poll_succeeded(generations.poll_started())
    assert generations.token("d1") == "40"
    generations.observed("d1", 41)
    assert (generations.token("d1"), generations.token("d2")) == ("41", "40")


def test_an_event_committed_behind_one_already_read_still_changes_the_token() -> None:
    generations = ChangeGenerations()
    generations.started_at(40)
    generations.poll_succeeded(generations.poll_started())
    generations.observed("d1", 39)  # committed late, behind the start position
    late = generations.token("d1")
    assert late not in ("40", "39")
    generations.observed("d1", 38)
    assert generations.token("d1") not in (late, "40", "38")
    generations.observed("d1", 45)
    assert generations.token("d1") == "45"


def test_a_local_change_gets_a_token_of_this_process_until_a_poll_started_after_it_completes() -> None:
    one, two = ChangeGenerations(), ChangeGenerations()
    woken: list[str] = []
    one.waker = lambda: woken.append("wake")
    for generations in (one, two):
        generations.started_at(10)
        generations.poll_succeeded(generations.poll_started())
    running = one.poll_started()  # a poll that read the outbox before the write committed
    one.changed_locally("d1")
    two.changed_locally("d1")
    local = one.token("d1")
    assert woken == ["wake"]
    assert local is not None
    assert local.startswith("10.")
    assert local != two.token("d1"), "no other process ever uses the same local token"
    assert one.token("d2") == "10"
    one.observed("d1", 11)
    one.poll_succeeded(running)
    assert one.token("d1") != "11", "the poll that was running may not have seen the write"
    one.poll_succeeded(one.poll_started())
    assert one.token("d1") == "11"


def test_a_change_on_no_dealership_moves_every_dealership_on() -> None:
    generations = ChangeGenerations()
    generations.started_at(5)
    generations.poll_succeeded(generations.poll_started())
    generations.changed_locally(None)
    assert generations.token("d1") != "5"
    assert generations.token("d2") != "5"
    generations.poll_succeeded(generations.poll_started())
    assert generations.token("d1") == "5"


def test_the_tokens_stop_being_live_when_no_poll_completes_for_a_while() -> None:
    now = [100.0]
    generations = ChangeGenerations(stale_after_s=2.0, clock=lambda: now[0])
    generations.started_at(1)
    generations.poll_succeeded(generations.poll_started())
    now[0] = 101.5
    assert generations.live
    now[0] = 102.5
    assert not generations.live
    assert generations.token("d1") is None
    generations.poll_succeeded(generations.poll_started())
    assert generations.live
    generations.poll_failed()
    assert not generations.live


# ---------------------------------------------------------------- two replicas on PostgreSQL and Redis


async def _prepare(database_url: str) -> dict[str, str]:
    await upgrade_async(database_url)
    store = open_store_url(database_url)
    try:
        await load_demo(store, vehicles_per_dealership=4, now=DEMO_NOW)
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        return {"crm": (await service.create(MOTOR, "crm-agent", name="crm")).key}
    finally:
        await store.close()


def _replica_settings(name: str, postgres_url: str, redis_url: str, redis_prefix: str) -> Settings:
    return Settings(
        database_url=postgres_url,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
        api_key_pepper=PEPPER,
        cursor_secret=CURSOR_SECRET,
        instance_name=name,
        audit_flush_interval_s=0.05,
    )


@pytest.mark.postgres
@pytest.mark.redis
async def test_two_replicas_never_serve_a_stale_search_once_each_has_polled(
    postgres_url: str, redis_url: str, redis_prefix: str
) -> None:
    keys = await _prepare(postgres_url)
    async with (
        quiet_app(_replica_settings("gw-a", postgres_url, redis_url, redis_prefix), keys) as a,
        quiet_app(_replica_settings("gw-b", postgres_url, redis_url, redis_prefix), keys) as b,
    ):
        assert a.services.backends.kind == b.services.backends.kind == "redis"
        add_upsert_action(a.services)
        await poll(a)
        await poll(b)
        # Both started at the same outbox position and read nothing since: they share entries.
        assert found(await search_vin(a, 1)) == []
        assert (await search_vin(b, 1)).cached

        await call(a, UPSERT, {"n": 1})  # replica A writes
        assert found(await search_vin(a, 1)) == [new_vehicle(1).vin], "fresh at once where it was written"
        await poll(b)
        assert found(await search_vin(b, 1)) == [new_vehicle(1).vin], "fresh on B once B has polled"
        await poll(a)
        assert found(await search_vin(a, 1)) == [new_vehicle(1).vin]

        for rig in (a, b):  # both cache the page that does not have vehicle 2 yet
            assert found(await search_vin(rig, 2)) == []
            assert (await search_vin(rig, 2)).cached
        await put_vehicle(b.services.store, new_vehicle(2))  # a change neither gateway made (a CLI import)
        await poll(a)
        await poll(b)
        for rig in (a, b):
            assert found(await search_vin(rig, 2)) == [new_vehicle(2).vin]
