"""The packaged dealer documents (``forecourt/knowledge/docs``), rendered per dealership and ingested.

The documents are templates: ``{{dealer_name}}``, ``{{brand}}``, ``{{sales_phone}}``, ``{{service_hours}}``
and a few more placeholders are filled from the dealership's profile, so each demo rooftop answers with
its own name, phone numbers and hours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources

from forecourt.adapters.knowledge.embedders import Embedder, HashingEmbedder
from forecourt.adapters.knowledge.service import DocumentInput, IngestResult, ingest
from forecourt.domain.tenancy import DayHours, Dealership
from forecourt.store.base import Store

DOCS_PACKAGE = "forecourt.knowledge"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def packaged_documents() -> dict[str, str]:
    """The packaged document templates by file name, in name order."""
    folder = resources.files(DOCS_PACKAGE) / "docs"
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith((".md", ".txt"))
    }


def _hours(week: Mapping[str, DayHours]) -> str:
    spans: list[tuple[list[str], str]] = []
    for day in _DAYS:
        hours = week.get(day)
        opened, closed = (hours.open, hours.close) if hours is not None else (None, None)
        text = f"{opened}-{closed}" if opened and closed else "closed"
        if spans and spans[-1][1] == text:
            spans[-1][0].append(day)
        else:
            spans.append(([day], text))
    parts = []
    for group, text in spans:
        label = group[0].title() if len(group) == 1 else f"{group[0].title()}-{group[-1].title()}"
        parts.append(f"{label} {text}")
    return ", ".join(parts)


def template_values(dealership: Dealership) -> dict[str, str]:
    """Placeholder values from a dealership's profile."""
    address = dealership.address
    phones = dict(dealership.phones)
    return {
        "dealer_name": dealership.name,
        "brand": dealership.brands[0] if dealership.brands else "manufacturer",
        "street": address.street,
        "city": f"{address.city}, {address.region}".strip(", "),
        "sales_phone": phones.get("sales", phones.get("main", "")),
        "service_phone": phones.get("service", phones.get("main", "")),
        "parts_phone": phones.get("parts", phones.get("main", "")),
        "email": dealership.email or "",
        "website": dealership.website or "",
        "sales_hours": _hours(dealership.sales_hours),
        "service_hours": _hours(dealership.service_hours),
        "doc_fee": f"${dealership.doc_fee_minor / 100:,.2f}",
        "tax_rate": f"{dealership.tax_rate_bps / 100:.2f}%",
    }


def render(template: str, values: dict[str, str]) -> str:
    """``template`` with each known ``{{name}}`` replaced (unknown placeholders are left as they are)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def documents_for(dealership: Dealership) -> list[DocumentInput]:
    """The packaged documents rendered for ``dealership``; sources are ``forecourt:docs/<file>``."""
    values = template_values(dealership)
    return [
        DocumentInput(source=f"forecourt:docs/{name}", content=render(text, values))
        for name, text in packaged_documents().items()
    ]


async def load_dealer_documents(
    store: Store, dealership: Dealership, *, embedder: Embedder | None = None, now: datetime | None = None
) -> list[IngestResult]:
    """Ingest the packaged documents for one dealership (unchanged documents are skipped)."""
    return await ingest(
        store,
        dealership.id,
        documents_for(dealership),
        embedder=embedder if embedder is not None else HashingEmbedder(),
        cache_scope=dealership.company_id,
        now=now or datetime.now(UTC),
    )
