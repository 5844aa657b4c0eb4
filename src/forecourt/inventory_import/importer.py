"""Importing a dealer's inventory feed (CSV or JSON) in one transaction, batch by batch."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forecourt.domain.measure import Measure
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import utcnow
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.errors import DealershipNotFound, ImportRejected
from forecourt.inventory_import.construct import construct
from forecourt.inventory_import.decoding import decode_feed
from forecourt.inventory_import.ids import vehicle_id_for
from forecourt.inventory_import.reader import RawFeed, RawRecord, detect_format, read_csv, read_json
from forecourt.inventory_import.report import ImportReport, RejectedRow, RowError
from forecourt.inventory_import.rows import FeedRow, parse_record
from forecourt.store.base import InventoryRepository, Store

logger = logging.getLogger(__name__)

FORMATS = ("csv", "json")
BATCH_ROWS = 2_000
ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(rows_done, rows_total)`` before the first batch and after each one."""

_REVIVED = (VehicleStatus.REMOVED, VehicleStatus.UNKNOWN)


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


class FeedValidator:
    """Parses records batch by batch, remembering VINs across batches to reject the second row of a VIN."""

    def __init__(self, *, currency: str, year_max: int) -> None:
        self.currency = currency
        self.year_max = year_max
        self.first_line: dict[str, int] = {}

    def validate(self, records: Iterable[RawRecord]) -> tuple[list[FeedRow], list[RejectedRow]]:
        """The valid rows and the rejected ones of a batch."""
        rows: list[FeedRow] = []
        rejected: list[RejectedRow] = []
        for record in records:
            parsed = parse_record(record, currency=self.currency, year_max=self.year_max)
            if isinstance(parsed, RejectedRow):
                rejected.append(parsed)
            elif parsed.vin in self.first_line:
                reason = f"duplicate VIN: already on line {self.first_line[parsed.vin]}"
                rejected.append(RejectedRow.single(parsed.line, "duplicate_vin", reason, field="vin", vin=parsed.vin,
                                                   column=record.column("vin")))  # fmt: skip
            else:
                self.first_line[parsed.vin] = parsed.line
                rows.append(parsed)
        return rows, rejected


def validate_feed(raw: RawFeed, *, currency: str, year_max: int) -> tuple[list[FeedRow], list[RejectedRow]]:
    """Parse every record; reject bad ones and the second and later rows of a VIN seen before."""
    rows, rejected = FeedValidator(currency=currency, year_max=year_max).validate(raw.records)
    rejected = sorted([*raw.rejected, *rejected], key=lambda r: r.line)
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
        if "status" not in values and existing.status in _REVIVED:
            values["status"] = VehicleStatus.AVAILABLE
    data.update(values)
    data["last_verified_at"] = now
    if data.get("status") == VehicleStatus.SOLD and not data.get("sold_at"):
        data["sold_at"] = now
    return Vehicle.model_validate(data)


_DEFAULTS: dict[str, Any] = {
    name: info.get_default(call_default_factory=True)
    for name, info in Vehicle.model_fields.items()
    if not info.is_required()
}


def new_vehicle(row: FeedRow, dealership: Dealership, now: datetime) -> Vehicle:
    """The vehicle a feed row creates, built without validating again what the row's parsers checked.

    Every value of a :class:`FeedRow` comes out of the feed parsers with its final type and range (VIN
    normalised with its check digit, year in range, prices as minor units, enums): validating the model
    again would only repeat those checks, and it is a fifth of an import's time. The tests hold this equal
    to :func:`build_vehicle` for new vehicles.
    """
    data: dict[str, Any] = {
        **_DEFAULTS,
        "id": vehicle_id_for(dealership.id, row.vin),
        "dealership_id": dealership.id,
        "stock": row.vin[-8:],
        "mileage": _ZERO_MILES,
        "status": VehicleStatus.AVAILABLE,
        **row.values,
        "last_verified_at": now,
    }
    if data["status"] == VehicleStatus.SOLD and data["sold_at"] is None:
        data["sold_at"] = now
    return construct(Vehicle, data)


_ZERO_MILES = Measure(value=0)


def unchanged_by(row: FeedRow, existing: Vehicle) -> bool:
    """Whether applying ``row`` would leave ``existing`` as it is (apart from ``last_verified_at``)."""
    if "status" not in row.values and existing.status in _REVIVED:
        return False
    if row.values.get("status") == VehicleStatus.SOLD and existing.sold_at is None:
        return False
    return all(getattr(existing, name) == value for name, value in row.values.items())


class _Batches:
    """Applies validated rows to the store batch by batch and counts what happened."""

    def __init__(
        self, inventory: InventoryRepository, dealership: Dealership, at: datetime, report: ImportReport, *,
        write: bool,
    ) -> None:  # fmt: skip
        self.inventory = inventory
        self.dealership = dealership
        self.at = at
        self.report = report
        self.write = write

    async def apply(self, rows: Sequence[FeedRow]) -> list[RejectedRow]:
        existing = await self.inventory.get_many_by_vin(self.dealership.id, [r.vin for r in rows], lock=self.write)
        created: list[Vehicle] = []
        changed: list[Vehicle] = []
        verified: list[str] = []
        rejected: list[RejectedRow] = []
        for row in rows:
            old = existing.get(row.vin)
            if old is None:
                created.append(new_vehicle(row, self.dealership, self.at))
                continue
            if unchanged_by(row, old):
                verified.append(old.id)
                continue
            try:
                vehicle = build_vehicle(row, old, self.dealership, self.at)
            except ValidationError as exc:
                rejected.append(_invalid(row, exc))
                continue
            changed.append(vehicle)
        self.report.created += len(created)
        self.report.updated += len(changed)
        self.report.unchanged += len(verified)
        if self.write:
            await self.inventory.write_import(created, changed, verified, self.at)
        return rejected


def _invalid(row: FeedRow, exc: ValidationError) -> RejectedRow:
    errors = []
    for item in exc.errors():
        field = ".".join(str(p) for p in item["loc"]) or None
        errors.append(RowError(line=row.line, code="invalid_value", reason="a value is invalid", field=field))
    return RejectedRow.of(errors, vin=row.vin)


async def import_feed(
    store: Store,
    source: str | Path | bytes,
    dealership_id: str,
    *,
    full: bool = False,
    fmt: str | None = None,
    now: datetime | None = None,
    filename: str | None = None,
    dry_run: bool = False,
    progress: ProgressCallback | None = None,
    batch_rows: int = BATCH_ROWS,
) -> ImportReport:
    """Import an inventory feed into one dealership, all in one transaction.

    Valid rows are upserted by VIN (created, updated or unchanged; every row in the feed refreshes
    ``last_verified_at``); bad rows are reported with their line and every error and skipped. With ``full``,
    offerable vehicles that are not in the feed are marked removed (never deleted); rows rejected for a
    reason other than their VIN still count as present, so a typo in a price does not take a car off sale.
    If anything fails part-way (a database error), nothing is written. Rows are read, validated and
    written in batches of ``batch_rows`` (one query per batch to find stored vehicles, multi-row writes).

    Args:
        store: Where to write.
        source: A file path, or the feed's bytes.
        dealership_id: The rooftop the feed belongs to.
        full: The feed is the whole inventory: mark vehicles missing from it as removed.
        fmt: ``csv`` or ``json``; detected from the file name or content when omitted.
        now: Verification time (default: now).
        filename: Name used to detect the format when ``source`` is bytes.
        dry_run: Validate and count against the stored inventory, write nothing.
        progress: Called with (rows done, rows total) as batches complete.
        batch_rows: Rows per batch.

    Returns:
        The report; the CLI exits non-zero when ``report.rejected`` > 0.

    Raises:
        ImportRejected: the whole feed is unusable (truncated or malformed JSON, missing columns, a full
            import with no usable rows); nothing is written.
        DealershipNotFound: no such dealership.
    """
    started = time.perf_counter()
    data, name = _load(source)
    raw, report = read_feed(data, fmt=fmt, filename=filename or name)
    at = now or utcnow()
    report.dealership_id, report.full, report.dry_run = dealership_id, full, dry_run
    report.rows = total = len(raw.records) + len(raw.rejected)
    rejected = list(raw.rejected)
    unit = store.read() if dry_run else store.transaction()
    async with unit as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
        if dealership is None:
            raise DealershipNotFound(details={"dealership_id": dealership_id})
        validator = FeedValidator(currency=dealership.currency, year_max=at.year + 2)
        batches = _Batches(uow.inventory, dealership, at, report, write=not dry_run)
        if progress:
            progress(len(raw.rejected), total)
        writes = _Writes(batches, progress, len(raw.rejected), total)
        try:
            for start in range(0, len(raw.records), batch_rows):
                rows = await _validate_yielding(validator, raw.records[start : start + batch_rows], rejected)
                rejected.extend(await writes.make_room())
                writes.queue(rows, min(start + batch_rows, len(raw.records)))
            rejected.extend(await writes.drain())
        finally:
            await writes.cancel()
        if progress:
            progress(total, total)
        present = set(validator.first_line) | _valid_rejected_vins(rejected)
        if full and not present:
            raise ImportRejected(
                "a full import with no usable rows would remove the whole inventory", details={"reason": "empty_feed"}
            )
        if full:
            report.removed = await _remove_missing(uow.inventory, dealership.id, present, at, dry_run=dry_run)
    report.rejected_rows = sorted(rejected, key=lambda r: r.line)
    report.rejected = len(report.rejected_rows)
    report.seconds = round(time.perf_counter() - started, 3)
    logger.info(
        "inventory import into %s%s: %d created, %d updated, %d unchanged, %d rejected, %d removed in %.1f s",
        dealership_id, " (dry run)" if dry_run else "", report.created, report.updated, report.unchanged,
        report.rejected, report.removed, report.seconds,
    )  # fmt: skip
    return report


_YIELD_EVERY = 200
_WRITES_AHEAD = 3


class _Writes:
    """Batches being applied, one after the other, while the next ones are validated.

    The database works on its own thread (SQLite) or process (PostgreSQL): this thread parses up to
    ``_WRITES_AHEAD`` batches ahead of it instead of waiting for each batch's round trips. Each batch's
    apply starts when the one before it is done, so they reach the store in feed order, as before.
    """

    def __init__(self, batches: _Batches, progress: ProgressCallback | None, skipped: int, total: int) -> None:
        self.batches = batches
        self.progress = progress
        self.skipped = skipped
        self.total = total
        self.pending: deque[tuple[asyncio.Task[list[RejectedRow]], int]] = deque()

    def queue(self, rows: list[FeedRow], end: int) -> None:
        """Apply ``rows`` (the records up to ``end``) once the batches queued before are applied."""
        if rows:
            previous = self.pending[-1][0] if self.pending else None
            self.pending.append((asyncio.create_task(self._apply_after(previous, rows)), end))

    async def _apply_after(
        self, previous: asyncio.Task[list[RejectedRow]] | None, rows: list[FeedRow]
    ) -> list[RejectedRow]:
        if previous is not None:
            await asyncio.wait([previous])  # its outcome is the caller's to collect, in order
            if previous.cancelled() or previous.exception() is not None:
                return []
        return await self.batches.apply(rows)

    async def _collect(self) -> list[RejectedRow]:
        task, end = self.pending.popleft()
        rejected = await task
        if self.progress:
            self.progress(self.skipped + end, self.total)
        return rejected

    async def make_room(self) -> list[RejectedRow]:
        """Wait for the oldest batches until fewer than ``_WRITES_AHEAD`` are queued; their rejected rows."""
        rejected: list[RejectedRow] = []
        while len(self.pending) >= _WRITES_AHEAD:
            rejected.extend(await self._collect())
        return rejected

    async def drain(self) -> list[RejectedRow]:
        """Wait for every queued batch; their rejected rows."""
        rejected: list[RejectedRow] = []
        while self.pending:
            rejected.extend(await self._collect())
        return rejected

    async def cancel(self) -> None:
        """Stop what is still queued (after a failure) and wait until it has stopped."""
        tasks = [task for task, _ in self.pending]
        self.pending.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _validate_yielding(
    validator: FeedValidator, records: Sequence[RawRecord], rejected: list[RejectedRow]
) -> list[FeedRow]:
    """Validate a batch, letting the event loop run (the previous batch's writes) every few rows."""
    rows: list[FeedRow] = []
    for start in range(0, len(records), _YIELD_EVERY):
        good, bad = validator.validate(records[start : start + _YIELD_EVERY])
        rows.extend(good)
        rejected.extend(bad)
        await asyncio.sleep(0)
    return rows


async def _remove_missing(
    inventory: InventoryRepository, dealership_id: str, present: set[str], at: datetime, *, dry_run: bool
) -> int:
    if dry_run:
        return len(await inventory.offerable_vins(dealership_id) - present)
    return await inventory.mark_unavailable_except(dealership_id, present, at)


def _valid_rejected_vins(rejected: list[RejectedRow]) -> set[str]:
    """VINs of rows rejected for another reason than the VIN: those vehicles are still in the feed."""
    return {r.vin for r in rejected if r.vin and not r.code.startswith("invalid_vin")}
