"""docs/import.md and examples/feed.csv are what the code generates and accepts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from forecourt.domain.vehicle import Condition, VehicleStatus
from forecourt.inventory_import import import_feed
from forecourt.inventory_import.columns import COLUMNS, canonical_column
from forecourt.inventory_import.docs import SAMPLE_FEED, render
from forecourt.store import SqlStore

from .conftest import DEALER

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_import_doc_is_the_one_generated_from_the_column_table() -> None:
    committed = (ROOT / "docs" / "import.md").read_text(encoding="utf-8")
    assert committed == render(), "regenerate: python -m forecourt.inventory_import.docs > docs/import.md"


def test_the_shipped_sample_feed_is_the_documented_one() -> None:
    assert (ROOT / "examples" / "feed.csv").read_text(encoding="utf-8") == SAMPLE_FEED


def test_every_documented_alias_maps_to_its_column() -> None:
    for column in COLUMNS:
        for alias in (column.name, *column.aliases):
            assert canonical_column(alias) == column.name, alias


async def test_the_sample_feed_imports_without_a_rejected_row(store: SqlStore) -> None:
    now = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
    report = await import_feed(store, SAMPLE_FEED.encode(), DEALER, now=now, filename="feed.csv")
    assert (report.created, report.rejected, report.ignored_columns) == (4, 0, [])
    async with store.read() as uow:
        corolla = await uow.inventory.get_by_vin(DEALER, "JTDBCMEE6PJ100104")
        highlander = await uow.inventory.get_by_vin(DEALER, "5TDKDRAH1NS100103")
    assert corolla is not None
    assert highlander is not None
    assert (corolla.mileage.value, corolla.mileage.unit) == (20100, "km")
    assert (corolla.status, corolla.sold_at) == (VehicleStatus.SOLD, datetime(2026, 11, 18, tzinfo=UTC))
    assert (highlander.condition, highlander.status) == (Condition.CPO, VehicleStatus.PENDING)
