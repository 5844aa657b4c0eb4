"""Lead search from an index: customers' names, e-mail and phone by substring, and leads by customer.

The console's company-wide lead search is a case-insensitive substring of a customer's first or last name,
e-mail or phone (or of the lead id). Without an index it read every lead of the company rooftop by rooftop.

- SQLite: ``customers_search``, an FTS5 table with the ``trigram`` tokenizer (SQLite 3.34 or later) holding each
  customer's id and searched columns, kept in step by triggers on ``customers``. Its rows are found by the
  customer's id through the index itself (the id is indexed too), never by ``rowid``: ``VACUUM`` may renumber the
  ``rowid`` of a table without an integer primary key.
- PostgreSQL: GIN ``pg_trgm`` indexes over the same columns and over ``leads.id``, used by ``ILIKE '%...%'``.
  Where the extension cannot be created (no privilege), they are left out and the search reads the tables.
- Both: ``leads (customer_id, id)``, from a matching customer to its leads. (SQLite matches a lead's own id on
  the entries of the primary key's index: short keys, read in some 10 ms at 100,000 leads.)

Revision ID: console_0002
Revises: protect_0001
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "console_0002"
down_revision: str | None = "protect_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

logger = logging.getLogger(__name__)

SEARCHED = ("first_name", "last_name", "email_l", "phone")
_COLUMNS = ", ".join(SEARCHED)
_NEW = ", ".join(f"new.{c}" for c in SEARCHED)
_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in SEARCHED)
# The old row's entry, found through the index by its id (a phrase of its trigrams), then checked exactly.
_DELETE_OLD = (
    "DELETE FROM customers_search WHERE customer_id = old.id AND rowid IN (SELECT rowid FROM customers_search "
    "WHERE customers_search MATCH 'customer_id : \"' || replace(old.id, '\"', '\"\"') || '\"'); "
    # An id of fewer than three characters has no trigram: read the table (no such ids are made here).
    "DELETE FROM customers_search WHERE length(old.id) < 3 AND customer_id = old.id;"
)
# Fixed column names only (no value is ever formatted into these statements).
SQLITE_UP = (
    f"CREATE VIRTUAL TABLE customers_search USING fts5(customer_id, {_COLUMNS}, tokenize = 'trigram')",
    f"INSERT INTO customers_search (customer_id, {_COLUMNS}) SELECT id, {_COLUMNS} FROM customers",  # noqa: S608
    "CREATE TRIGGER customers_search_insert AFTER INSERT ON customers BEGIN "  # noqa: S608
    f"INSERT INTO customers_search (customer_id, {_COLUMNS}) VALUES (new.id, {_NEW}); END",
    f"CREATE TRIGGER customers_search_update AFTER UPDATE OF {_COLUMNS} ON customers WHEN {_CHANGED} BEGIN "  # noqa: S608
    f"{_DELETE_OLD} INSERT INTO customers_search (customer_id, {_COLUMNS}) VALUES (new.id, {_NEW}); END",
    f"CREATE TRIGGER customers_search_delete AFTER DELETE ON customers BEGIN {_DELETE_OLD} END",
)
SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS customers_search_delete",
    "DROP TRIGGER IF EXISTS customers_search_update",
    "DROP TRIGGER IF EXISTS customers_search_insert",
    "DROP TABLE IF EXISTS customers_search",
)


def upgrade() -> None:
    op.create_index("ix_leads_customer", "leads", ["customer_id", "id"])
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in SQLITE_UP:
            op.execute(statement)
        analysed = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"
        if bind.execute(sa.text(analysed)).first():  # as inventory_0002: statistics for the new index too
            op.execute("ANALYZE ix_leads_customer")
        return
    if bind.dialect.name != "postgresql":
        return
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
    except sa.exc.DBAPIError:
        logger.warning("pg_trgm could not be created: the console's lead search reads the customers table")
        return
    ops = ", ".join(f"{c} gin_trgm_ops" for c in SEARCHED)
    op.execute(f"CREATE INDEX ix_customers_search_trgm ON customers USING gin ({ops})")
    op.execute("CREATE INDEX ix_leads_search_trgm ON leads USING gin (id gin_trgm_ops)")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in SQLITE_DOWN:
            op.execute(statement)
    elif bind.dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_leads_search_trgm")
        op.execute("DROP INDEX IF EXISTS ix_customers_search_trgm")
    op.drop_index("ix_leads_customer", table_name="leads")
