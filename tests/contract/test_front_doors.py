"""One contract across the front doors: the same call gets the same decision on every door.

Each test runs once per door — the REST envelope, MCP Streamable HTTP in both eras, MCP over stdio, A2A JSON-RPC
and A2A HTTP+JSON — against one real server on loopback (stdio is its own process on the same database), and
asserts the same denial code for a foreign dealership, the same validation code for the same bad argument, the
same idempotent replay, the same rate-limit answer (a skill shares its dealer action's budget), and the same
audit record, differing only in ``surface``. Rate limits live in Redis so the stdio process shares them.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from forecourt.bootstrap import create_app
from forecourt.demo import load_demo
from forecourt.domain.tenancy import Member, Policy
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async

from .doors import DOOR_NAMES, Answer, Server, door

PEPPER = "contract-tests-pepper-0123456789abcdef"
CURSOR = "contract-tests-cursor-secret-012345"
MOTOR, BAY = "demo-motor-group", "demo-bay-autos"
TOYOTA, BAY_SJ = "demo-toyota-sf", "demo-bay-sj"
SEARCH = {"type": "inventory.search.request", "filters": {"make": ["Toyota"]}, "pagination": {"limit": 2}}
LIMITED = 2
"""Calls per minute of ``inventory.search`` (and its twins) for the rate-limited members."""


def _lead(key: str) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    return {
        "type": "lead.submit.request",
        "source_agent": "contract-suite",
        "idempotency_key": key,
        "customer": {"first_name": "Ada", "last_name": "Lovelace", "email": f"{key}@example.com"},
        "consent": {
            "scope": ["lead_submission"],
            "allowed_channels": ["email"],
            "granted_at": (now - timedelta(minutes=1)).isoformat(),
            "consent_text": "You may contact me about this vehicle.",
            "source_agent": "contract-suite",
        },
    }


def _settings(db: Path, redis_url: str, prefix: str, base_url: str) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{db}",
        api_key_pepper=PEPPER,
        cursor_secret=CURSOR,
        redis_url=redis_url,
        redis_prefix=prefix,
        public_base_url=base_url,
        audit_flush_interval_s=0.05,
        events_poll_interval_s=0.05,
        log_json=False,
        cache_enabled=False,
    )


def _env(db: Path, redis_url: str, prefix: str) -> dict[str, str]:
    return {
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_CURSOR_SECRET": CURSOR,
        "FORECOURT_REDIS_URL": redis_url,
        "FORECOURT_REDIS_PREFIX": prefix,
        "FORECOURT_CACHE_ENABLED": "false",
        "FORECOURT_LOG_LEVEL": "WARNING",
    }


async def _prepare(db: Path) -> dict[str, str]:
    url = f"sqlite+aiosqlite:///{db}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=10)
        async with store.transaction() as uow:
            await uow.tenancy.upsert_policy(
                Policy(id=f"{BAY}-limits", company_id=BAY, rate_limits={"inventory.search": LIMITED})
            )
            for name in DOOR_NAMES:
                await uow.tenancy.upsert_member(
                    Member(
                        id=f"limited-{name}",
                        company_id=BAY,
                        profile_id="demo",
                        name=f"Rate-limited agent ({name})",
                        allowed_tools=("*",),
                        scopes=("amcp:inventory:read",),
                        dealership_ids=(BAY_SJ,),
                    )
                )
        keys = ApiKeyService(store, PEPPER, MemoryRevocationList())
        issued = {"crm": (await keys.create(MOTOR, "crm-agent")).key}
        for name in DOOR_NAMES:
            issued[f"limited-{name}"] = (await keys.create(BAY, f"limited-{name}")).key
        return issued
    finally:
        await store.close()


class _Live:
    def __init__(self, settings_of: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.app = create_app(settings_of(self.base_url))
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> _Live:
        self.thread.start()
        deadline = datetime.now(UTC) + timedelta(seconds=20)
        while not self.server.started:
            if datetime.now(UTC) > deadline:
                raise AssertionError("server did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _redis_url() -> str:
    """Redis must be there in CI (the stdio door shares rate limits with the server through it)."""
    url = os.environ.get("FORECOURT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1.0).close()
    except OSError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("Redis at 127.0.0.1:6379 is required in CI but is not reachable")
        pytest.skip("Redis at 127.0.0.1:6379 is not reachable; start it to run the cross-door suite")
    return url


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str], Path]]:
    """One server on a demo database (rate limits and idempotency in Redis under a private prefix)."""
    redis_url = _redis_url()
    directory = tmp_path_factory.mktemp("front-doors")
    db = directory / "forecourt.db"
    keys = asyncio.run(_prepare(db))
    prefix = f"fc-contract-{uuid.uuid4().hex[:8]}:"
    live = _Live(lambda base: _settings(db, redis_url, prefix, base)).start()
    try:
        yield Server(base_url=live.base_url, env=_env(db, redis_url, prefix)), keys, db
    finally:
        live.stop()
        _drop_keys(redis_url, prefix)


def _drop_keys(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture(params=DOOR_NAMES)
def front(request: pytest.FixtureRequest, rig: tuple[Server, dict[str, str], Path]) -> Any:
    server, _, _ = rig
    return door(request.param, server)


async def test_a_foreign_dealership_is_refused_with_the_same_code_on_every_door(front: Any, rig: Any) -> None:
    _, keys, _ = rig
    answer: Answer = await front.call("aap.inventory.search", SEARCH, dealership_id=BAY_SJ, key=keys["crm"])
    assert answer.code == "auth.tenancy_denied"


async def test_the_same_bad_argument_gets_the_same_validation_code_on_every_door(front: Any, rig: Any) -> None:
    _, keys, _ = rig
    bad = {**SEARCH, "pagination": {"limit": "twenty"}}
    answer: Answer = await front.call("aap.inventory.search", bad, dealership_id=TOYOTA, key=keys["crm"])
    assert answer.code == "invalid_params"


async def test_a_retried_lead_replays_the_first_answer_on_every_door(front: Any, rig: Any) -> None:
    _, keys, _ = rig
    lead = _lead(f"contract-{front.name}-{uuid.uuid4().hex[:8]}")
    first: Answer = await front.call("aap.lead.submit", lead, dealership_id=TOYOTA, key=keys["crm"])
    again: Answer = await front.call("aap.lead.submit", lead, dealership_id=TOYOTA, key=keys["crm"])
    assert first.ok, first.code
    assert again.ok, again.code
    assert again.output["data"]["lead_id"] == first.output["data"]["lead_id"]
    assert again.output == first.output


async def test_a_lead_whose_email_hides_a_mail_header_is_refused_on_every_door_and_nothing_is_written(
    front: Any, rig: Any
) -> None:
    _, keys, db = rig
    marker = f"hdr{uuid.uuid4().hex[:8]}"
    lead = _lead(f"contract-{front.name}-{marker}")
    lead["customer"] = {**lead["customer"], "email": f"ana@example.com\r\nBcc: {marker}@example.net"}
    answer: Answer = await front.call("aap.lead.submit", lead, dealership_id=TOYOTA, key=keys["crm"])
    assert answer.code == "invalid_params"
    with sqlite3.connect(db) as conn:
        written = conn.execute("SELECT count(*) FROM customers WHERE email LIKE ?", (f"%{marker}%",)).fetchone()[0]
    assert written == 0


async def test_a_skill_shares_the_rate_limit_of_its_dealer_action_on_every_door(front: Any, rig: Any) -> None:
    server, keys, _ = rig
    key = keys[f"limited-{front.name}"]
    rest = door("rest", server)
    for _ in range(LIMITED):  # the budget of inventory.search, spent on the dealer action itself
        spent: Answer = await rest.call("inventory.search", {"limit": 1}, dealership_id=BAY_SJ, key=key)
        assert spent.ok, spent.code
    twin: Answer = await front.call("aap.inventory.search", SEARCH, dealership_id=BAY_SJ, key=key)
    assert twin.code == "rate_limited"


async def _audit_rows(db: Path) -> list[Any]:
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        async with store.transaction() as uow:
            return await uow.audit.page(MOTOR, limit=5000)
    finally:
        await store.close()


async def test_every_door_leaves_the_same_audit_record_but_for_its_surface(rig: Any) -> None:
    server, keys, db = rig
    marker = {**SEARCH, "filters": {"make": ["Toyota"], "model": [f"Audit{uuid.uuid4().hex[:6]}"]}}
    for name in DOOR_NAMES:
        answer = await door(name, server).call("aap.inventory.search", marker, dealership_id=TOYOTA, key=keys["crm"])
        assert answer.ok, (name, answer.code)
    model = marker["filters"]["model"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        rows = [r for r in await _audit_rows(db) if r.args_redacted.get("filters", {}).get("model") == model]
        if len(rows) >= len(DOOR_NAMES) or loop.time() > deadline:
            break
        await asyncio.sleep(0.05)
    assert sorted(r.surface for r in rows) == sorted(door(n, server).surface for n in DOOR_NAMES)
    same = {(r.action, r.action_type, r.args_digest, r.result_class, r.status_code, r.error_code) for r in rows}
    who = {(r.company_id, r.dealership_id, r.member_id) for r in rows}
    assert who == {(MOTOR, TOYOTA, "crm-agent")}
    assert same == {("aap.inventory.search", "tool.run", rows[0].args_digest, "ok", 200, None)}


async def test_a_lead_whose_phone_is_not_a_number_of_the_rooftops_country_is_refused_on_every_door(
    front: Any, rig: Any
) -> None:
    _, keys, db = rig
    marker = uuid.uuid4().hex[:8]
    lead = _lead(f"contract-{front.name}-phone-{marker}")
    lead["customer"] = {**lead["customer"], "phone": "555-0100"}  # no area code: never stored as "+5550100"
    answer: Answer = await front.call("aap.lead.submit", lead, dealership_id=TOYOTA, key=keys["crm"])
    assert answer.code == "invalid_params"
    with sqlite3.connect(db) as conn:
        written = conn.execute("SELECT count(*) FROM customers WHERE email LIKE ?", (f"%{marker}%",)).fetchone()[0]
    assert written == 0
