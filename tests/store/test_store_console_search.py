"""The console's company-wide lead search: the same leads on SQLite and PostgreSQL, served from the search index.

A lead matches when its id, or its customer's first or last name, e-mail or phone, holds the search in any case
(a substring, wildcards taken literally). The index (SQLite's FTS5 trigram table, PostgreSQL's ``pg_trgm``) follows
every write to the customers: an insert, a change of name, a delete.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from forecourt.domain.tenancy import Company, Dealership
from forecourt.store import SqlStore
from forecourt.store.console_pages import PageRequest, read_page
from forecourt.store.sql.tables import customers

from .factories import DEALER, OTHER_DEALER, customer, lead

PEOPLE: list[dict[str, Any]] = [
    {"first_name": "Ana", "last_name": "García-Smith", "email": "ana.garcia@example.com", "phone": "+14155550101"},
    {"first_name": "Émile", "last_name": "Zola", "email": "emile@example.com", "phone": "+33155550102"},
    {"first_name": "Bob", "last_name": "Jones", "email": "bob@example.org", "phone": "+14155550103"},
    {"first_name": "Siobhan", "last_name": "O'Brien", "email": "s.obrien@example.net", "phone": None},
]


async def _seed(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n, person in enumerate(PEOPLE, start=1):
            await uow.customers.add(customer(n, **person))
            await uow.leads.add(lead(n))
        # The same surname at the group's other rooftop, and at a rooftop of another company.
        await uow.customers.add(customer(5, dealership_id=OTHER_DEALER, last_name="Garcia"))
        await uow.leads.add(lead(5, dealership_id=OTHER_DEALER))
        await uow.tenancy.upsert_company(Company(id="c2", profile_id="p1", name="Company Two"))
        await uow.tenancy.upsert_dealership(Dealership(id="dealer-x", company_id="c2", name="Dealer X"))
        await uow.customers.add(customer(6, dealership_id="dealer-x", last_name="Garcia"))
        await uow.leads.add(lead(6, dealership_id="dealer-x"))


async def _found(store: SqlStore, q: str, granted: list[str] | None = None) -> list[str]:
    page = await read_page(store, "leads", "c1", granted, PageRequest(q=q, sort="dealership_id", limit=100))
    return sorted(r["id"] for r in page.rows)


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("GARCIA", ["lead-1", "lead-5"]),  # an e-mail (lead-1) and a surname (lead-5), whatever the case
        ("garcía-s", ["lead-1"]),
        ("ÉMILE", ["lead-2"]),  # letters beyond ASCII are folded too
        ("5550103", ["lead-3"]),
        ("lead-4", ["lead-4"]),
        ("o'b", ["lead-4"]),
        ("Jo", ["lead-3"]),  # shorter than a trigram: the same answer
        ("a.g", ["lead-1"]),
        ("a_g", []),  # wildcards are literal
        ("100%", []),
        ('an"a', []),
        ("nobody-at-all", []),
    ],
)
async def test_a_lead_search_matches_a_substring_of_the_lead_id_or_the_customers_name_email_or_phone(
    store: SqlStore, q: str, expected: list[str]
) -> None:
    await _seed(store)
    assert await _found(store, q) == expected


async def test_a_lead_search_stays_within_the_company_and_the_callers_rooftops(store: SqlStore) -> None:
    await _seed(store)
    assert await _found(store, "garcia") == ["lead-1", "lead-5"]  # never lead-6, of another company
    assert await _found(store, "garcia", granted=[OTHER_DEALER]) == ["lead-5"]
    page = await read_page(
        store, "leads", "c1", None, PageRequest(q="garcia", filters={"dealership_id": DEALER}, limit=100)
    )
    assert [r["id"] for r in page.rows] == ["lead-1"]
    assert (page.total, page.total_capped) == (1, False)


async def test_the_search_index_follows_a_customers_new_name_and_forgets_a_deleted_customer(store: SqlStore) -> None:
    await _seed(store)
    async with store.transaction() as uow:
        await uow.customers.update(customer(3, **{**PEOPLE[2], "last_name": "Keller"}))
    assert await _found(store, "keller") == ["lead-3"]
    assert await _found(store, "jones") == []
    assert await _found(store, "bob@") == ["lead-3"]  # the columns not changed are still found
    async with store.transaction() as uow:
        await uow.connection.execute(customers.delete().where(customers.c.id == "cust-3"))
    assert await _found(store, "keller") == []
    assert await _found(store, "lead-3") == ["lead-3"]  # the lead itself is still found by its id


async def test_the_search_index_is_there_after_the_migration(store: SqlStore, database_url: str) -> None:
    async with store.read() as uow:
        conn = uow.connection
        if database_url.startswith("sqlite"):
            plan = " ".join(
                str(row[-1])
                for row in await conn.execute(
                    sa.text(
                        "EXPLAIN QUERY PLAN SELECT customer_id FROM customers_search WHERE customers_search MATCH 'x'"
                    )
                )
            )
            assert "VIRTUAL TABLE" in plan
        else:
            found = await conn.execute(sa.text("SELECT 1 FROM pg_indexes WHERE indexname = 'ix_customers_search_trgm'"))
            assert found.first() is not None
