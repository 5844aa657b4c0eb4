"""The whole schema: the core tables plus every feature's tables, on one ``metadata``.

Migrations and schema checks import this module, so a feature's tables are known even when the
feature's code is not loaded.
"""

from __future__ import annotations

from typing import Any

from forecourt.store.sql import (
    aap_tables,
    console_tables,
    feed_tables,
    knowledge_tables,
    model_jobs_tables,
    operator_tables,
    tables,
    upstream_tables,
    vector_tables,
    workflow_tables,
)
from forecourt.store.sql.tables import metadata

FEATURE_MODULES = (
    tables,
    aap_tables,
    knowledge_tables,
    upstream_tables,
    workflow_tables,
    console_tables,
    model_jobs_tables,
    operator_tables,
    vector_tables,
    feed_tables,
)

DERIVED_TABLE_PREFIXES = ("customers_search",)
"""Search indexes that are not tables of ``metadata``: SQLite's FTS5 ``customers_search`` and its shadow tables
(migration ``console_0002``, kept by triggers)."""
DERIVED_INDEXES = frozenset({"ix_customers_search_trgm", "ix_leads_search_trgm"})
"""PostgreSQL's ``pg_trgm`` indexes over the customers' searched columns and the leads' ids (``console_0002``)."""


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's filter for comparing the database with ``metadata``: leave out the derived search indexes."""
    del obj, reflected, compare_to
    if type_ == "table" and name is not None and name.startswith(DERIVED_TABLE_PREFIXES):
        return False
    return not (type_ == "index" and name in DERIVED_INDEXES)


__all__ = ["FEATURE_MODULES", "include_object", "metadata"]
