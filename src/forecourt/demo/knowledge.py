"""The demo dealerships' knowledge: the packaged dealer documents and the example named queries."""

from __future__ import annotations

from datetime import UTC, datetime

from forecourt.adapters.knowledge.demo import load_dealer_documents
from forecourt.adapters.named_queries.examples import install_examples
from forecourt.demo.tenants import COMPANIES, DEALERSHIPS
from forecourt.store.base import Store


async def load_demo_knowledge(store: Store, *, now: datetime | None = None) -> dict[str, int]:
    """Ingest the packaged documents for every demo dealership and define the example named queries.

    Idempotent: a second load changes nothing. Returns how many documents were created or updated.
    """
    at = now or datetime.now(UTC)
    changed = 0
    for dealership in DEALERSHIPS:
        results = await load_dealer_documents(store, dealership, now=at)
        changed += sum(1 for r in results if r.status != "unchanged")
    queries = 0
    for company in COMPANIES:
        queries += await install_examples(store, company.id, now=at)
    return {"documents": changed, "named_queries": queries}
