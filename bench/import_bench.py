"""Benchmark ``forecourt inventory import``: a 100,000-row dealer feed into SQLite or PostgreSQL.

Writes a CSV feed with a DMS-style header (``Stock #``, ``VIN``, ``Internet Price``, ``Odometer``,
``Photo URLs``...) built from the demo catalogue (real make/model/trim, VINs with check digits), creates
a fresh database with one dealership, and times three imports through :func:`import_feed`, exactly what
the CLI runs: the first (every vehicle created), the same feed again (every vehicle unchanged), and a
feed where a tenth of the prices changed and a tenth of the vehicles are gone, imported with ``--full``.
Prints one JSON object per run and a summary.

Examples::

    .venv/bin/python bench/import_bench.py --rows 100000 --database-url sqlite+aiosqlite:///var/bench/import.db
    .venv/bin/python bench/import_bench.py --rows 100000 \\
        --database-url postgresql+asyncpg://postgres@127.0.0.1/forecourt_import_bench --create-database
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import time
from pathlib import Path
from typing import Any

from forecourt.demo.bulk import bulk_dealerships, iter_bulk_vehicles
from forecourt.domain.tenancy import Company, Profile
from forecourt.domain.vehicle import Vehicle
from forecourt.inventory_import import import_feed
from forecourt.store import SqlStore, create_engine, upgrade_async

HEADER = [
    "Stock #", "VIN", "Year", "Make", "Model", "Trim", "Type", "Internet Price", "MSRP", "Odometer",
    "Body Style", "Exterior Color", "Interior Color", "Transmission", "Fuel Type", "Photo URLs", "Status",
]  # fmt: skip


def _cells(v: Vehicle, price_bump: int = 0) -> list[Any]:
    price = v.price.amount_minor // 100 + price_bump
    msrp = v.msrp.amount_minor // 100 if v.msrp else ""
    return [
        v.stock, v.vin, v.year, v.make, v.model, v.trim, v.condition.value, f"${price:,}.00", msrp,
        f"{v.mileage.value:,} mi", v.body, v.exterior_color, v.interior_color, v.transmission, v.fuel,
        "|".join(v.photos), v.status.value,
    ]  # fmt: skip


def make_feeds(rows: int, dealership_id: str) -> tuple[bytes, bytes]:
    """The feed, and a second one with 10 % of prices changed and 10 % of the vehicles left out."""
    rooftop = next(d for d in bulk_dealerships(1) if d)
    rooftop = rooftop.model_copy(update={"id": dealership_id})
    first, second = io.StringIO(newline=""), io.StringIO(newline="")
    w1, w2 = csv.writer(first), csv.writer(second)
    w1.writerow(HEADER)
    w2.writerow(HEADER)
    n = 0
    for batch in iter_bulk_vehicles([rooftop], rows):
        for v in batch:
            w1.writerow(_cells(v))
            if n % 10 != 9:
                w2.writerow(_cells(v, 250 if n % 10 == 0 else 0))
            n += 1
    return first.getvalue().encode(), second.getvalue().encode()


async def _create_database(url: str) -> None:
    import asyncpg

    base, name = url.rsplit("/", 1)
    admin = await asyncpg.connect(base.replace("postgresql+asyncpg", "postgresql") + "/postgres")
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


def _fresh_sqlite(url: str) -> None:
    path = Path(url.split("///", 1)[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def main(args: argparse.Namespace) -> None:
    if args.database_url.startswith("sqlite") and not args.keep:
        _fresh_sqlite(args.database_url)
    elif args.create_database:
        await _create_database(args.database_url)
    started = time.perf_counter()
    feed, changed = make_feeds(args.rows, "import-bench")
    print(
        json.dumps(
            {"feed_rows": args.rows, "feed_bytes": len(feed), "generated_s": round(time.perf_counter() - started, 2)}
        )
    )
    await upgrade_async(args.database_url)
    store = SqlStore(create_engine(args.database_url))
    dealer = bulk_dealerships(1)[0].model_copy(update={"id": "import-bench", "company_id": "import-bench"})
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="import-bench", name="Import bench"))
        await uow.tenancy.upsert_company(Company(id="import-bench", profile_id="import-bench", name="Import bench"))
        await uow.tenancy.upsert_dealership(dealer)
    results = {}
    try:
        for name, data, full in (("first", feed, False), ("again", feed, False), ("changed_full", changed, True)):
            t0, c0 = time.perf_counter(), time.process_time()
            report = await import_feed(store, data, dealer.id, full=full, filename="feed.csv")
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            results[name] = round(seconds, 2)
            counts = report.model_dump(include={"rows", "created", "updated", "unchanged", "removed", "rejected"})
            print(json.dumps({"run": name, "seconds": round(seconds, 2), "cpu_s": round(cpu, 2), **counts}))
    finally:
        await store.close()
    dialect = "postgresql" if args.database_url.startswith("postgresql") else "sqlite"
    load = os.getloadavg()[0]
    print(json.dumps({"summary": dialect, "rows": args.rows, "cpus": os.cpu_count(), "load_1m": load, **results}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--database-url", default="sqlite+aiosqlite:///var/bench/import.db")
    parser.add_argument("--create-database", action="store_true", help="PostgreSQL: drop and create the database.")
    parser.add_argument("--keep", action="store_true", help="SQLite: keep an existing file.")
    asyncio.run(main(parser.parse_args()))
