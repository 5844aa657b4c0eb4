"""Benchmark the operator console at the size of a dealer group: HTML size and server time of every page.

Seeds a fresh SQLite database in a temporary folder (not timed): ``forecourt demo --bulk``'s rooftops and vehicles
(``generate_bulk``: 1,000 rooftops x 100 vehicles by default), then, written in bulk with SQLAlchemy Core, one
customer and one lead per ``--leads`` / rooftops at each rooftop (100,000 by default), a CRM delivery for every
fifth lead (a tenth of them failed), ``--audit`` audit records of the last hour, ``--members`` members with a key
each, and ``--approvals`` calls held by policy that name a lead. Then it serves the app in process (the same
ASGI app ``forecourt serve`` runs, over httpx's ASGI transport), signs in with the operator key, and fetches each
page ``--repeat`` times after one warm-up, reporting the bytes of HTML and the server time (request sent to the
last byte read, in process: no network) as median and max.

Prints one JSON object per page and a table. Timings are reported, never asserted (tests/console checks
behaviour; this checks size and speed).

Examples::

    .venv/bin/python bench/console_pages.py                       # 1,000 rooftops x 100 vehicles, 100,000 leads
    .venv/bin/python bench/console_pages.py --rooftops 50 --vehicles 10 --leads 2000 --repeat 3   # a smoke run
    .venv/bin/python bench/console_pages.py --keep /tmp/console-bench.db  # keep (and reuse) the seeded database
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from forecourt.bootstrap import create_app
from forecourt.demo.bulk import BULK_COMPANY, BULK_PROFILE, bulk_dealership_ids, generate_bulk
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.sql.console_tables import approvals
from forecourt.store.sql.tables import api_keys, audit_records, customers, deliveries, leads, members

OPERATOR_KEY = "console-bench-operator-key-0123456789abcdef"
PAGE_LIMIT_BYTES = 200_000
PAGE_LIMIT_MS = 300.0
FIRST_NAMES = ("Ava", "Ben", "Chloe", "Diego", "Emma", "Farah", "Gus", "Hana", "Ivan", "June", "Kofi", "Lena")
LAST_NAMES = ("Garcia", "Nguyen", "Smith", "Okafor", "Kowalski", "Haddad", "Tanaka", "Silva", "Brown", "Ivanova")
STATUSES = ("new",) * 5 + ("contacted",) * 3 + ("appointment_set", "sold", "lost")
ACTIONS = ("inventory.search", "inventory.get", "leads.create", "leads.list", "service.book_appointment")


def _settings(db: Path) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{db}",
        api_key_pepper="console-bench-pepper-0123456789",
        cursor_secret="console-bench-cursor-secret-0123",
        console_operator_key=OPERATOR_KEY,
        instance_name="console-bench",
    )


def _insert(engine: sa.Engine, table: sa.Table, rows: list[dict[str, Any]], batch: int = 5_000) -> None:
    with engine.begin() as conn:
        for start in range(0, len(rows), batch):
            conn.execute(table.insert(), rows[start : start + batch])


def _people(engine: sa.Engine, rooftops: list[str], total: int, now: datetime) -> list[tuple[str, str]]:
    """One customer and one lead per slot, spread over the rooftops; answers (rooftop, lead id) pairs."""
    rng = random.Random(29)
    people: list[dict[str, Any]] = []
    interest: list[dict[str, Any]] = []
    pairs: list[tuple[str, str]] = []
    for n in range(total):
        rooftop = rooftops[n % len(rooftops)]
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        at = now - timedelta(minutes=rng.randint(1, 60 * 24 * 90))
        customer_id, lead_id = f"cus_b{n:06d}", f"lead_b{n:06d}"
        email = f"{first.lower()}.{last.lower()}{n}@example.com"
        people.append(
            {
                "id": customer_id,
                "dealership_id": rooftop,
                "first_name": first,
                "last_name": last,
                "email": email,
                "email_l": email,
                "phone": f"+1916555{n % 10_000:04d}",
                "postal_code": "95814",
                "created_at": at,
                "updated_at": at,
            }
        )
        interest.append(
            {
                "id": lead_id,
                "dealership_id": rooftop,
                "customer_id": customer_id,
                "status": rng.choice(STATUSES),
                "source": rng.choice(("aap", "mcp", "website")),
                "source_agent": "bench-agent",
                "vehicle_of_interest": {"year": 2025, "make": "Toyota", "model": "Camry"},
                "message": "Is it available?",
                "submitted_at": at,
                "created_at": at,
                "updated_at": at,
            }
        )
        pairs.append((rooftop, lead_id))
    _insert(engine, customers, people)
    _insert(engine, leads, interest)
    sent = [
        {
            "id": f"dlv_b{n:06d}",
            "kind": "crm_adf",
            "dealership_id": r,
            "target": "https://crm.example.com/adf",
            "subject_id": lead,
            "body": "<adf/>",
            "content_type": "application/xml",
            "status": "failed" if n % 50 == 0 else "pending" if n % 10 == 0 else "delivered",
            "attempts": 1 + n % 3,
            "next_attempt_at": now + timedelta(days=1),
            "last_error": "HTTP 503" if n % 50 == 0 else None,
            "delivered_at": now if n % 10 else None,
            "created_at": now - timedelta(minutes=n % 1440),
        }
        for n, (r, lead) in enumerate(pairs)
        if n % 5 == 0
    ]
    _insert(engine, deliveries, sent)
    return pairs


def _tenancy_rows(engine: sa.Engine, rooftops: list[str], count: int, now: datetime) -> None:
    """``count`` members, each with a key (hashes are not real: nobody signs in with them)."""
    team = [
        {
            "company_id": BULK_COMPANY,
            "id": f"agent-{n:04d}",
            "profile_id": BULK_PROFILE,
            "name": f"Agent {n}",
            "kind": "agent" if n % 4 else "person",
            "security_type": "api_key",
            "allowed_tools": ["*"],
            "scopes": ["amcp:inventory:read"],
            "dealership_ids": rooftops[n % len(rooftops) : n % len(rooftops) + 3],
            "is_admin": n % 50 == 0,
            "agent_config": {},
            "active": True,
        }
        for n in range(count)
    ]
    _insert(engine, members, team)
    keys = [
        {
            "prefix": f"fc_bench{n:05d}",
            "key_hash": "x" * 64,
            "company_id": BULK_COMPANY,
            "member_id": f"agent-{n:04d}",
            "name": f"key {n}",
            "scopes": [],
            "dealership_ids": [],
            "created_at": now - timedelta(hours=n),
            "revoked_at": now if n % 7 == 0 else None,
        }
        for n in range(count)
    ]
    _insert(engine, api_keys, keys)


def _audit_rows(engine: sa.Engine, rooftops: list[str], count: int, held: int, pairs: list[Any], now: datetime) -> None:
    rng = random.Random(7)
    records = [
        {
            "id": f"aud_b{n:07d}",
            "company_id": BULK_COMPANY,
            "dealership_id": rng.choice(rooftops),
            "member_id": f"agent-{n % 100:04d}",
            "action": rng.choice(ACTIONS),
            "action_type": "tool.run",
            "args_digest": "0" * 64,
            "args_redacted": {"dealership_id": "…", "limit": 20},
            "result_class": "error" if n % 40 == 0 else "ok",
            "status_code": 500 if n % 40 == 0 else 200,
            "error_code": "internal_error" if n % 40 == 0 else None,
            "duration_ms": rng.uniform(2, 80),
            "trace_id": f"{n:032x}",
            "surface": rng.choice(("mcp", "a2a", "rest")),
            "processed_by": "bench",
            "occurred_at": now - timedelta(seconds=rng.randint(0, 3_599)),
        }
        for n in range(count)
    ]
    _insert(engine, audit_records, records)
    waiting = [
        {
            "id": f"apr_b{n:05d}",
            "company_id": BULK_COMPANY,
            "dealership_id": pairs[n][0],
            "member_id": "bench-agent",
            "action": "leads.update",
            "args_digest": f"{n:064d}",
            "args_redacted": {"dealership_id": pairs[n][0], "lead_id": pairs[n][1], "status": "lost"},
            "rule": "leads.update when status eq 'lost'",
            "status": "pending",
            "surface": "mcp",
            "requested_at": now - timedelta(minutes=n),
            "comment": "",
            "held": None,
        }
        for n in range(held)
    ]
    _insert(engine, approvals, waiting)


async def seed(db: Path, args: argparse.Namespace) -> None:
    """The group: bulk rooftops and vehicles, then leads, deliveries, members, keys, audit and approvals."""
    url = f"sqlite+aiosqlite:///{db}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await generate_bulk(store, dealerships=args.rooftops, vehicles_per_dealership=args.vehicles)
    finally:
        await store.close()
    now = datetime.now(UTC)
    rooftops = bulk_dealership_ids(args.rooftops)
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        pairs = _people(engine, rooftops, args.leads, now)
        _tenancy_rows(engine, rooftops, args.members, now)
        _audit_rows(engine, rooftops, args.audit, args.approvals, pairs, now)
    finally:
        engine.dispose()


def _pages(first_rooftop: str, lead: str) -> list[str]:
    return [
        "/console/",
        "/console/tenants",
        "/console/tenants?r_offset=500&m_offset=100&k_offset=100",
        "/console/tenants?r_q=bench-09&m_sort=name&m_order=desc&k_state=revoked",
        "/console/leads",
        f"/console/leads?dealership_id={first_rooftop}",
        "/console/leads?status=sold&sort=status&order=desc",
        "/console/leads?q=garcia&offset=5000",
        f"/console/leads/{first_rooftop}/{lead}",
        "/console/deliveries",
        "/console/deliveries?status=failed",
        "/console/inventory",
        "/console/inventory?offset=975",
        f"/console/inventory/{first_rooftop}/upload",
        "/console/approvals",
        "/console/approvals?status=pending&offset=100",
        "/console/audit",
        "/console/audit?action=inventory.*&outcome=error&offset=200",
        "/console/tools?member_id=bench-agent",
        "/console/policies",
        "/console/upstreams",
    ]


async def measure(db: Path, repeat: int) -> list[dict[str, Any]]:
    """Sign in as the operator and fetch every page; answers one row per page."""
    app = create_app(_settings(db))
    services = app.state.services
    await services.start()
    results = []
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console.bench", timeout=120) as client:
            signed = await client.post("/console/signin", data={"api_key": OPERATOR_KEY})
            if signed.status_code != 303:
                raise SystemExit(f"sign-in failed: {signed.status_code} {signed.text[:300]}")
            first = bulk_dealership_ids(1)[0]
            for path in _pages(first, "lead_b000000"):
                await client.get(path)  # warm-up (templates, statements)
                times, size, status = [], 0, 0
                for _ in range(repeat):
                    started = time.perf_counter()
                    response = await client.get(path)
                    times.append((time.perf_counter() - started) * 1000)
                    size, status = len(response.content), response.status_code
                row = {
                    "page": path,
                    "status": status,
                    "bytes": size,
                    "median_ms": round(statistics.median(times), 1),
                    "max_ms": round(max(times), 1),
                    "within": size <= PAGE_LIMIT_BYTES and statistics.median(times) <= PAGE_LIMIT_MS,
                }
                results.append(row)
                print(json.dumps(row), flush=True)
    finally:
        await services.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooftops", type=int, default=1_000)
    parser.add_argument("--vehicles", type=int, default=100, help="vehicles per rooftop")
    parser.add_argument("--leads", type=int, default=100_000, help="leads (and customers) across the rooftops")
    parser.add_argument("--members", type=int, default=500, help="members, each with an API key")
    parser.add_argument("--audit", type=int, default=20_000, help="audit records in the last hour")
    parser.add_argument("--approvals", type=int, default=500, help="calls held by policy")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="seed this database file once and reuse it on later runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="console-bench-") as tmp:
        db = args.keep or Path(tmp) / "console.db"
        if not db.exists():
            started = time.perf_counter()
            asyncio.run(seed(db, args))
            print(f"seeded {db} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        rows = asyncio.run(measure(db, args.repeat))
    print(f"\n{'page':<64} {'status':>6} {'KB':>7} {'median ms':>10} {'max ms':>8}")
    for r in rows:
        mark = "" if r["within"] else "  <- over 200 KB or 300 ms"
        size = f"{r['bytes'] / 1000:>7.1f}"
        print(f"{r['page'][:64]:<64} {r['status']:>6} {size} {r['median_ms']:>10} {r['max_ms']:>8}{mark}")
    return 0 if all(r["status"] == 200 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
