"""The whole schema: the core tables plus every feature's tables, on one ``metadata``.

Migrations and schema checks import this module, so a feature's tables are known even when the
feature's code is not loaded.
"""

from __future__ import annotations

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

__all__ = ["FEATURE_MODULES", "metadata"]
