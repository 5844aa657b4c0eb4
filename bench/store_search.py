"""Benchmark dealership-scoped inventory search on the SQL store (SQLite or PostgreSQL).

Loads N synthetic vehicles (valid VINs) across D dealerships as fast as the database allows (COPY on
PostgreSQL, batched executemany on SQLite), then times searches through ``SqlStore.read()`` exactly as
the gateway runs them (``--path transaction`` for the async engine's transactions instead): 20 results,
typical filters, sorted by price; once without and once with facets. Prints p50/p99 latencies in milliseconds as JSON.

``--queries cheapest`` asks what ``../shared/peers/fair.sh`` asks: the 20 cheapest vehicles of each rooftop in turn,
no filter (``--page N``: the Nth page of them, reached with the previous page's keyset key where the code has one,
else by offset). ``--explain`` prints the plans of that search's page and count statements, as the store compiles
them, and exits.

Examples::

    .venv/bin/python bench/store_search.py --database-url sqlite+aiosqlite:///var/bench/store.db \\
        --vehicles 1000000 --dealerships 1000 --searches 2000
    .venv/bin/python bench/store_search.py --database-url postgresql+asyncpg://postgres@127.0.0.1/bench \\
        --vehicles 1000000 --dealerships 1000 --searches 2000
    .venv/bin/python bench/store_search.py --database-url sqlite+aiosqlite:///var/bench/fair.db \\
        --vehicles 100000 --dealerships 50 --searches 2000 --queries cheapest --view compact   # 2,000 a rooftop
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.domain.vehicle import Condition, InventoryFilters, InventoryQuery, SortField, Vehicle, VehicleStatus
from forecourt.domain.vin import with_check_digit
from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.inventory import search_statements, vehicle_row
from forecourt.store.sql.tables import vehicles

CATALOGUE: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "Toyota": (
        "4T1",
        {"Camry": ("LE", "SE", "XSE"), "Corolla": ("L", "LE"), "RAV4": ("LE", "XLE"), "Tacoma": ("SR5",)},
    ),
    "Honda": ("1HG", {"Civic": ("LX", "Sport", "EX"), "Accord": ("LX", "EX-L"), "CR-V": ("EX", "Touring")}),
    "Ford": ("1FT", {"F-150": ("XL", "XLT", "Lariat"), "Escape": ("S", "SE"), "Explorer": ("XLT",)}),
    "Chevrolet": ("1GC", {"Silverado": ("WT", "LT"), "Equinox": ("LS", "LT"), "Malibu": ("LT",)}),
    "Nissan": ("1N4", {"Altima": ("S", "SV"), "Rogue": ("S", "SV", "SL"), "Sentra": ("SV",)}),
    "Hyundai": ("5NP", {"Elantra": ("SE", "SEL"), "Tucson": ("SE", "Limited"), "Santa Fe": ("SEL",)}),
    "Subaru": ("4S4", {"Outback": ("Premium", "Limited"), "Forester": ("Base", "Sport"), "Crosstrek": ("Premium",)}),
    "BMW": ("WBA", {"3 Series": ("330i",), "X3": ("xDrive30i",), "X5": ("xDrive40i",)}),
    "Kia": ("KND", {"Sportage": ("LX", "EX"), "Telluride": ("S", "SX"), "Forte": ("LXS",)}),
    "Jeep": ("1C4", {"Wrangler": ("Sport", "Rubicon"), "Grand Cherokee": ("Laredo", "Limited")}),
}
BODIES = {"F-150": "Truck", "Silverado": "Truck", "Tacoma": "Truck", "Camry": "Sedan", "Corolla": "Sedan"}
COLORS = ("White", "Black", "Silver", "Gray", "Blue", "Red", "Green")
FUELS = ("Gasoline", "Gasoline", "Gasoline", "Hybrid", "Electric", "Diesel")
DRIVELINES = ("FWD", "AWD", "RWD", "4WD")
STATUSES = (
    [VehicleStatus.AVAILABLE] * 85
    + [VehicleStatus.IN_TRANSIT] * 5
    + [VehicleStatus.SOLD] * 7
    + [VehicleStatus.PENDING] * 2
    + [VehicleStatus.REMOVED]
)
VIN_CHARS = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
YEAR_CODES = "CDEFGHJKLMNPRS"  # 2012..2025
NOW = datetime(2025, 6, 1, tzinfo=UTC)


def dealership_ids(count: int) -> list[str]:
    """Ids of the benchmark dealerships."""
    return [f"bench-d{d:05d}" for d in range(count)]


def make_vehicle(rng: random.Random, index: int, dealership_id: str) -> Vehicle:
    """One synthetic vehicle; built without validation for speed (the VIN has a correct check digit)."""
    make = rng.choice(list(CATALOGUE))
    wmi, models = CATALOGUE[make]
    model = rng.choice(list(models))
    year = rng.randint(2012, 2025)
    vds = "".join(rng.choice(VIN_CHARS) for _ in range(5))
    vin = with_check_digit(f"{wmi}{vds}0{YEAR_CODES[year - 2012]}{rng.choice('ABCDEFGH')}{index % 1_000_000:06d}")
    age = 2025 - year
    price = max(500_000, rng.randint(2_000_000, 6_500_000) - age * rng.randint(100_000, 300_000))
    status = rng.choice(STATUSES)
    return Vehicle.model_construct(
        id=f"v{index:08d}",
        dealership_id=dealership_id,
        vin=vin,
        stock=f"S{index:08d}",
        year=year,
        make=make,
        model=model,
        trim=rng.choice(models[model]),
        condition=Condition.NEW if age == 0 else rng.choice((Condition.USED, Condition.USED, Condition.CPO)),
        body=BODIES.get(model, "SUV"),
        transmission="Automatic" if rng.random() < 0.95 else "Manual",
        driveline=rng.choice(DRIVELINES),
        fuel=rng.choice(FUELS),
        engine="",
        exterior_color=rng.choice(COLORS),
        interior_color=rng.choice(("Black", "Gray", "Beige")),
        msrp=Money.model_construct(amount_minor=price + 300_000, currency="USD"),
        list_price=None,
        price=Money.model_construct(amount_minor=price, currency="USD"),
        mileage=Measure.model_construct(value=0 if age == 0 else rng.randint(age * 5_000, age * 15_000), unit="mi"),
        status=status,
        photos=(f"https://img.example.com/{index}/1.jpg",),
        vdp_url=None,
        description="",
        last_verified_at=NOW - timedelta(minutes=rng.randint(0, 600)),
        created_at=NOW - timedelta(days=rng.randint(1, 120)),
        updated_at=NOW,
        sold_at=NOW if status is VehicleStatus.SOLD else None,
    )


def vehicle_rows(count: int, dealers: list[str], seed: int) -> Iterator[dict[str, Any]]:
    """Rows for ``count`` vehicles spread evenly over ``dealers``, one dealership after another.

    Rows arrive grouped by dealership, as per-rooftop feed imports write them.
    """
    rng = random.Random(seed)
    for i in range(count):
        yield vehicle_row(make_vehicle(rng, i, dealers[i * len(dealers) // count]))


def chunks(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Consecutive lists of at most ``size`` rows."""
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


async def load_tenancy(store: SqlStore, dealers: list[str]) -> None:
    """One profile and company owning every benchmark dealership."""
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="bench", name="Bench"))
        await uow.tenancy.upsert_company(Company(id="bench", profile_id="bench", name="Bench Group"))
        for dealer_id in dealers:
            await uow.tenancy.upsert_dealership(Dealership(id=dealer_id, company_id="bench", name=dealer_id))


async def copy_postgres(database_url: str, rows: Iterator[dict[str, Any]]) -> None:
    """Bulk-load rows with COPY (binary), 50,000 per round trip."""
    import asyncpg

    columns = [c.name for c in vehicles.columns]
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        for batch in chunks(rows, 50_000):
            records = [tuple(json.dumps(r[c]) if c == "photos" else r[c] for c in columns) for r in batch]
            await conn.copy_records_to_table("vehicles", records=records, columns=columns)
    finally:
        await conn.close()


async def insert_sqlite(store: SqlStore, rows: Iterator[dict[str, Any]]) -> None:
    """Bulk-load rows with executemany, 20,000 per transaction."""
    stmt = sa.insert(vehicles)
    for batch in chunks(rows, 20_000):
        async with store.engine.begin() as conn:
            await conn.execute(stmt, batch)


async def load(store: SqlStore, database_url: str, args: argparse.Namespace) -> float:
    """Load the data set; returns the seconds it took."""
    started = time.perf_counter()
    dealers = dealership_ids(args.dealerships)
    await load_tenancy(store, dealers)
    rows = vehicle_rows(args.vehicles, dealers, args.seed)
    if store.engine.dialect.name == "postgresql":
        await copy_postgres(database_url, rows)
    else:
        await insert_sqlite(store, rows)
    async with store.engine.begin() as conn:
        await conn.execute(sa.text("ANALYZE"))
    return time.perf_counter() - started


def typical_query(rng: random.Random, dealers: list[str]) -> InventoryQuery:
    """A buyer-agent style query: a make, often a model or a price cap, sorted by price, 20 results."""
    make = rng.choice(list(CATALOGUE))
    kind = rng.random()
    if kind < 0.5:
        filters = InventoryFilters(make=(make,), price_max_minor=rng.randrange(2_500_000, 6_000_000, 100_000))
    elif kind < 0.8:
        filters = InventoryFilters(make=(make,), model=(rng.choice(list(CATALOGUE[make][1])),))
    elif kind < 0.9:
        filters = InventoryFilters(body=("SUV",), year_min=2019, price_max_minor=4_000_000)
    else:
        filters = InventoryFilters()
    return InventoryQuery(
        dealership_id=rng.choice(dealers), filters=filters, sort=SortField.PRICE, descending=rng.random() < 0.2
    )


async def cheapest_queries(store: SqlStore, dealers: list[str], args: argparse.Namespace) -> list[InventoryQuery]:
    """fair.sh's search, rooftop after rooftop: the 20 cheapest, no filter; page ``args.page`` of them.

    A later page starts after the previous page's keyset key where the store answers one (``after``), else at its
    offset (the code before keyset pages).
    """
    queries = []
    for i in range(args.searches):
        query = InventoryQuery(dealership_id=dealers[i % len(dealers)], sort=SortField.PRICE, limit=20)
        if args.page > 1:
            before = query.model_copy(update={"offset": (args.page - 2) * 20})
            async with store.read() as uow:
                previous = await uow.inventory.search_cards(before)
            after = getattr(previous, "after", None)
            update: dict[str, Any] = {"offset": (args.page - 1) * 20}
            if after is not None:
                update["after"] = after
            query = query.model_copy(update=update)
        queries.append(query)
    return queries


async def explain(store: SqlStore, query: InventoryQuery) -> str:
    """The plans of ``query``'s page (compact) and count statements, as the store compiles them for this database."""
    out = []
    async with store.engine.connect() as conn:
        for name, statement in zip(("page", "count"), search_statements(query, True), strict=True):
            sql = str(statement.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
            if conn.dialect.name == "sqlite":
                rows = (await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")).all()
                lines = [f"{row[0]:>3} {row[1]:>3} {row[3]}" for row in rows]
            else:
                rows = (await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) {sql}")).all()
                lines = [str(row[0]) for row in rows]
            out += [f"-- {name}: {sql}", *lines, ""]
    return "\n".join(out)


async def server_times(store: SqlStore, queries: list[InventoryQuery]) -> dict[str, dict[str, float]]:
    """PostgreSQL: each query's page and count statements' own execution time (``EXPLAIN ANALYZE``), in ms.

    The database's share of a search, without the client's and the loaded machine's noise around it.
    """
    samples: dict[str, list[float]] = {"page": [], "count": []}
    async with store.engine.connect() as conn:
        for query in queries:
            for name, statement in zip(("page", "count"), search_statements(query, True), strict=True):
                sql = str(statement.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
                found = (await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) {sql}")).scalar_one()
                plan = json.loads(found) if isinstance(found, str) else found
                samples[name].append(float(plan[0]["Execution Time"]))
    return {name: percentiles(values) for name, values in samples.items()}


def vm_steps(database_url: str, queries: list[InventoryQuery]) -> dict[str, dict[str, float]]:
    """SQLite: the virtual machine instructions each query's page and count statements run (a count is run only
    where the store runs it: not for a first page shorter than its limit). Unlike a time, the same on a busy
    machine; the steps follow the index entries and rows a statement reads."""
    import sqlite3

    from sqlalchemy.dialects import sqlite

    path = database_url.split(":///", 1)[1]
    db = sqlite3.connect(path)
    counter = [0]

    def step() -> int:
        counter[0] += 1
        return 0

    def run(statement: sa.Select[Any]) -> tuple[int, int]:
        sql = str(statement.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
        rows = len(db.execute(sql).fetchall())  # warm: the schema and pages read once
        counter[0] = 0
        db.set_progress_handler(step, 1)
        db.execute(sql).fetchall()
        db.set_progress_handler(None, 1)
        return counter[0], rows

    samples: dict[str, list[float]] = {"page": [], "count": [], "both": []}
    for query in queries:
        page, count = search_statements(query, True)
        page_steps, rows = run(page)
        count_steps = 0 if query.offset == 0 and rows < query.limit else run(count)[0]
        samples["page"].append(page_steps)
        samples["count"].append(count_steps)
        samples["both"].append(page_steps + count_steps)
    db.close()
    return {name: {k.replace("_ms", ""): v for k, v in percentiles(values).items()} for name, values in samples.items()}


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p90, p99 and max, in milliseconds."""
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "p50_ms": round(q[49], 3),
        "p90_ms": round(q[89], 3),
        "p99_ms": round(q[98], 3),
        "max_ms": round(ordered[-1], 3),
    }


async def measure(
    store: SqlStore, queries: list[InventoryQuery], *, with_facets: bool, path: str = "read", view: str = "full"
) -> dict[str, float]:
    """Time each query, one unit of work each: ``read`` as the gateway's searches run (on an SQLite file: inline,
    on the calling thread), or ``transaction`` (the async engine, as writes run); ``view=compact`` reads cards
    (``search_cards``, what the MCP tool's default view reads), ``full`` whole vehicles."""
    samples: list[float] = []
    for query in queries:
        started = time.perf_counter()
        async with store.read() if path == "read" else store.transaction() as uow:
            if view == "compact":
                await uow.inventory.search_cards(query)
            else:
                await uow.inventory.search(query)
            if with_facets:
                await uow.inventory.facets(query)
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Migrate, load when needed, warm up, then measure."""
    if not args.skip_migrate:
        await upgrade_async(args.database_url)
    store = SqlStore(create_engine(args.database_url, pool_size=2))
    try:
        async with store.transaction() as uow:
            existing = await uow.inventory.count()
        load_s = None
        if existing == 0:
            load_s = await load(store, args.database_url, args)
        elif existing != args.vehicles:
            raise SystemExit(f"database holds {existing} vehicles, not {args.vehicles}; use an empty database")
        rng = random.Random(args.seed + 1)
        dealers = dealership_ids(args.dealerships)
        if args.queries == "cheapest" or args.explain:
            queries = await cheapest_queries(store, dealers, args)
        else:
            queries = [typical_query(rng, dealers) for _ in range(args.searches)]
        if args.explain:
            return {"plans": await explain(store, queries[min(7, len(queries) - 1)])}
        if args.vm_steps:
            return {"backend": "sqlite", "queries": args.queries, "vm_steps": vm_steps(args.database_url, queries)}
        if args.server_times:
            await server_times(store, queries)  # warm
            return {"backend": store.engine.dialect.name, "server_ms": await server_times(store, queries)}
        how = {"path": args.path, "view": args.view}
        facets = args.queries == "typical"  # fair.sh's search asks for no facets
        await measure(store, queries, with_facets=facets, **how)  # warm the caches: steady state is reported
        plain = await measure(store, queries, with_facets=False, **how)
        faceted = await measure(store, queries, with_facets=True, **how) if facets else None
        async with store.read() as uow:
            sample = await uow.inventory.search_cards(queries[0])
    finally:
        await store.close()
    return {
        "backend": store.engine.dialect.name,
        "vehicles": args.vehicles,
        "dealerships": args.dealerships,
        "searches": args.searches,
        "path": args.path,
        "view": args.view,
        "queries": args.queries,
        "page": args.page,
        "first_total": [sample.total, "exact" if getattr(sample, "total_exact", True) else "at least"],
        "load_seconds": None if load_s is None else round(load_s, 1),
        "search": plain,
        "search_with_facets": faceted,
    }


def main() -> None:
    """Parse arguments, run the benchmark and print the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="sqlite+aiosqlite:///var/bench/store.db")
    parser.add_argument("--vehicles", type=int, default=100_000)
    parser.add_argument("--dealerships", type=int, default=100)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--skip-migrate", action="store_true", help="an already loaded database (e.g. an older checkout's code on it)"
    )
    parser.add_argument(
        "--path",
        choices=["read", "transaction"],
        default="read",
        help="read units of work (as searches run) or transactions",
    )
    parser.add_argument(
        "--view",
        choices=["full", "compact"],
        default="full",
        help="whole vehicles, or cards (the MCP tool's default view)",
    )
    parser.add_argument(
        "--queries",
        choices=["typical", "cheapest"],
        default="typical",
        help="typical: the buyer-agent mix; cheapest: fair.sh's 20 cheapest of each rooftop in turn, no filter",
    )
    parser.add_argument("--page", type=int, default=1, help="with --queries cheapest: which page of 20 to ask for")
    parser.add_argument(
        "--explain", action="store_true", help="print the plans of the cheapest-20 search (page and count) and exit"
    )
    parser.add_argument(
        "--server-times",
        action="store_true",
        help="PostgreSQL: print the page and count statements' execution times (EXPLAIN ANALYZE) and exit",
    )
    parser.add_argument(
        "--vm-steps",
        action="store_true",
        help="SQLite: print the VM instructions of each search's page and count statements (p50, p90, ...) and exit",
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    if "plans" in result:
        print(result["plans"])
        return
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
