"""Importing a dealer's inventory feed (CSV or JSON) in one transaction."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forecourt.domain.measure import Measure
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import utcnow
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.errors import DealershipNotFound, ImportRejected
from forecourt.inventory_import.decoding import decode_feed
from forecourt.inventory_import.ids import vehicle_id_for
from forecourt.inventory_import.reader import RawFeed, detect_format, read_csv, read_json
from forecourt.inventory_import.report import ImportReport, RejectedRow
from forecourt.inventory_import.rows import FeedRow, parse_record
from forecourt.store.base import InventoryRepository, Store

logger = logging.getLogger(__name__)

FORMATS = ("csv", "json")
# Compared to decide "unchanged": everything except identity and the clock.
_BOOKKEEPING = {"id", "created_at", "updated_at", "last_verified_at"}


def _load(source: str | Path | bytes) -> tuple[bytes, str | None]:
    if isinstance(source, bytes):
        return source, None
    path = Path(source)
    return path.read_bytes(), path.name


def read_feed(data: bytes, *, fmt: str | None = None, filename: str | None = None) -> tuple[RawFeed, ImportReport]:
    """Decode and read a feed without touching the store (records still unvalidated).

    Returns:
        The raw records, and a report with ``format``, ``encoding`` and warnings filled in (its
        ``dealership_id`` is empty).

    Raises:
        ImportRejected: unknown format, missing required columns, or a truncated/malformed JSON document.
    """
    decoded = decode_feed(data)
    chosen = (fmt or detect_format(decoded.text, filename)).lower()
    if chosen not in FORMATS:
        raise ImportRejected(f"unknown feed format {chosen!r}; use csv or json", details={"reason": "unknown_format"})
    raw = read_json(decoded.text) if chosen == "json" else read_csv(decoded.text)
    report = ImportReport(
        dealership_id="",
        format=chosen,
        encoding=decoded.encoding,
        encoding_fallback=decoded.fallback,
        ignored_columns=raw.ignored_columns,
    )
    if decoded.fallback:
        report.warnings.append(f"the feed is not valid UTF-8; it was read as {decoded.encoding}")
    return raw, report


def validate_feed(raw: RawFeed, *, currency: str, year_max: int) -> tuple[list[FeedRow], list[RejectedRow]]:
    """Parse every record; reject bad ones and the second and later rows of a VIN seen before."""
    rows: list[FeedRow] = []
    rejected = list(raw.rejected)
    first_line: dict[str, int] = {}
    for record in raw.records:
        parsed = parse_record(record, currency=currency, year_max=year_max)
        if isinstance(parsed, RejectedRow):
            rejected.append(parsed)
        elif parsed.vin in first_line:
            reason = f"duplicate VIN: already on line {first_line[parsed.vin]}"
            rejected.append(RejectedRow(line=parsed.line, code="duplicate_vin", field="vin", reason=reason,
                                        vin=parsed.vin))  # fmt: skip
        else:
            first_line[parsed.vin] = parsed.line
            rows.append(parsed)
    rejected.sort(key=lambda r: r.line)
    return rows, rejected


def build_vehicle(row: FeedRow, existing: Vehicle | None, dealership: Dealership, now: datetime) -> Vehicle:
    """The vehicle after applying a feed row: fields the row leaves out keep their stored values.

    A unit absent from the store starts ``available`` (stock number defaults to the VIN's last 8
    characters); a stored unit that was ``removed`` comes back ``available`` unless the row gives a status.

    Raises:
        pydantic.ValidationError: the merged values do not make a valid vehicle.
    """
    values: dict[str, Any] = dict(row.values)
    if existing is None:
        data: dict[str, Any] = {
            "id": vehicle_id_for(dealership.id, row.vin),
            "dealership_id": dealership.id,
            "stock": row.vin[-8:],
            "mileage": Measure(value=0),
            "status": VehicleStatus.AVAILABLE,
        }
    else:
        data = existing.model_dump()
        if "status" not in values and existing.status in (VehicleStatus.REMOVED, VehicleStatus.UNKNOWN):
            values["status"] = VehicleStatus.AVAILABLE
    data.update(values)
    data["last_verified_at"] = now
    if data.get("status") == VehicleStatus.SOLD and not data.get("sold_at"):
        data["sold_at"] = now
    return Vehicle.model_validate(data)


def _same(a: Vehicle, b: Vehicle) -> bool:
    return a.model_dump(exclude=_BOOKKEEPING) == b.model_dump(exclude=_BOOKKEEPING)


async def _apply(
    inventory: InventoryRepository, rows: list[FeedRow], dealership: Dealership, now: datetime, report: ImportReport
) -> None:
    for row in rows:
        existing = await inventory.get_by_vin(dealership.id, row.vin)
        try:
            vehicle = build_vehicle(row, existing, dealership, now)
        except ValidationError as exc:
            field = ".".join(str(p) for p in exc.errors()[0]["loc"]) or None
            report.rejected_rows.append(
                RejectedRow(line=row.line, code="invalid_value", field=field, reason="a value is invalid", vin=row.vin)
            )
            continue
        created = await inventory.upsert(vehicle)
        if created:
            report.created += 1
        elif existing is not None and _same(existing, vehicle):
            report.unchanged += 1
        else:
            report.updated += 1


async def import_feed(
    store: Store,
    source: str | Path | bytes,
    dealership_id: str,
    *,
    full: bool = False,
    fmt: str | None = None,
    now: datetime | None = None,
    filename: str | None = None,
) -> ImportReport:
    """Import an inventory feed into one dealership, all in one transaction.

    Valid rows are upserted by VIN (created, updated or unchanged; every row in the feed refreshes
    ``last_verified_at``); bad rows are reported with their line and reason and skipped. With ``full``,
    offerable vehicles that are not in the feed are marked removed (never deleted); rows rejected for a
    reason other than their VIN still count as present, so a typo in a price does not take a car off sale.
    If anything fails part-way (a database error), nothing is written.

    Args:
        store: Where to write.
        source: A file path, or the feed's bytes.
        dealership_id: The rooftop the feed belongs to.
        full: The feed is the whole inventory: mark vehicles missing from it as removed.
        fmt: ``csv`` or ``json``; detected from the file name or content when omitted.
        now: Verification time (default: now).
        filename: Name used to detect the format when ``source`` is bytes.

    Returns:
        The report; the CLI exits non-zero when ``report.rejected`` > 0.

    Raises:
        ImportRejected: the whole feed is unusable (truncated or malformed JSON, missing columns, a full
            import with no usable rows); nothing is written.
        DealershipNotFound: no such dealership.
    """
    data, name = _load(source)
    raw, report = read_feed(data, fmt=fmt, filename=filename or name)
    at = now or utcnow()
    report.dealership_id, report.full = dealership_id, full
    report.rows = len(raw.records) + len(raw.rejected)
    async with store.transaction() as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
        if dealership is None:
            raise DealershipNotFound(details={"dealership_id": dealership_id})
        rows, report.rejected_rows = validate_feed(raw, currency=dealership.currency, year_max=at.year + 2)
        present = {r.vin for r in rows} | _valid_rejected_vins(report.rejected_rows)
        if full and not present:
            raise ImportRejected(
                "a full import with no usable rows would remove the whole inventory", details={"reason": "empty_feed"}
            )
        await _apply(uow.inventory, rows, dealership, at, report)
        if full:
            report.removed = await uow.inventory.mark_unavailable_except(dealership.id, present, at)
    report.rejected_rows.sort(key=lambda r: r.line)
    report.rejected = len(report.rejected_rows)
    logger.info(
        "inventory import into %s: %d created, %d updated, %d unchanged, %d rejected, %d removed",
        dealership_id, report.created, report.updated, report.unchanged, report.rejected, report.removed,
    )  # fmt: skip
    return report


def _valid_rejected_vins(rejected: list[RejectedRow]) -> set[str]:
    """VINs of rows rejected for another reason than the VIN: those vehicles are still in the feed."""
    return {r.vin for r in rejected if r.vin and not r.code.startswith("invalid_vin")}
