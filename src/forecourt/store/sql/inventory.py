"""A dealership's vehicles in SQL; every change also writes a change event to the outbox."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa

from forecourt import caching
from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType, change_of
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.timeutil import utcnow
from forecourt.domain.vehicle import (
    TOTAL_COUNTED_UP_TO,
    CardPage,
    Condition,
    Facets,
    InventoryQuery,
    SearchPage,
    Vehicle,
    VehicleCard,
    VehicleStatus,
)
from forecourt.errors import AlreadyExists, InvalidParams, VehicleNotFound
from forecourt.store.sql import inventory_bulk, search
from forecourt.store.sql.context import TxContext, new_id
from forecourt.store.sql.driver_rows import DriverRows
from forecourt.store.sql.inline import InlineConnection
from forecourt.store.sql.prepared import PreparedReads
from forecourt.store.sql.tables import vehicles

_V = vehicles.c
T = TypeVar("T")
MAX_COMPARABLES = 1000
_CHUNK = 500

_DERIVED = {"search_text", "msrp_minor", "msrp_currency", "list_price_minor", "list_price_currency"}
_DERIVED |= {"price_minor", "price_currency", "mileage_value", "mileage_unit"}
_DERIVED |= {c.name for c in vehicles.columns if c.name.endswith("_l")}
_PLAIN = [c for c in vehicles.columns if c.name not in _DERIVED and c.name not in ("photos",)]
_SELECT_COLUMNS = [*_PLAIN, _V.photos, _V.price_minor, _V.price_currency, _V.list_price_minor]
_SELECT_COLUMNS += [_V.list_price_currency, _V.msrp_minor, _V.msrp_currency, _V.mileage_value, _V.mileage_unit]
# What counts as a change worth an event: everything except identity and bookkeeping timestamps.
_BOOKKEEPING = {"id", "created_at", "updated_at", "last_verified_at"}


def _money_cols(prefix: str, money: Money | None) -> dict[str, Any]:
    if money is None:
        return {f"{prefix}_minor": None, f"{prefix}_currency": None}
    return {f"{prefix}_minor": money.amount_minor, f"{prefix}_currency": money.currency}


_ROW_FIELDS = [n for n in Vehicle.model_fields if n not in ("msrp", "list_price", "price", "mileage", "photos")]


def vehicle_row(vehicle: Vehicle) -> dict[str, Any]:
    """The ``vehicles`` row for a vehicle, with lower-cased and search columns filled in."""
    values = vehicle.__dict__
    row = {name: values[name] for name in _ROW_FIELDS}
    row["condition"] = Condition(row["condition"]).value
    row["status"] = VehicleStatus(row["status"]).value
    row["photos"] = list(vehicle.photos)
    for name in ("stock", "make", "model", "trim", "body", "transmission", "driveline", "fuel"):
        row[f"{name}_l"] = str(row[name]).strip().lower()
    row["exterior_color_l"] = vehicle.exterior_color.strip().lower()
    row["interior_color_l"] = vehicle.interior_color.strip().lower()
    row.update(_money_cols("msrp", vehicle.msrp))
    row.update(_money_cols("list_price", vehicle.list_price))
    row["price_minor"] = vehicle.price.amount_minor
    row["price_currency"] = vehicle.price.currency
    row["mileage_value"] = vehicle.mileage.value
    row["mileage_unit"] = vehicle.mileage.unit
    row["search_text"] = search.search_text(vehicle)
    return row


def _money(amount: int | None, currency: str | None, money: Any = Money) -> Money | None:
    return None if amount is None or currency is None else money(amount_minor=amount, currency=currency)


_PLAIN_NAMES = tuple(c.name for c in _PLAIN)  # the first columns of _SELECT_COLUMNS, in order


def _row_data(row: sa.Row[Any], money: Any, measure: Any) -> dict[str, Any]:
    m = row._mapping
    data = dict(zip(_PLAIN_NAMES, row, strict=False))  # by position: the row holds more columns after these
    data["photos"] = tuple(m["photos"] or ())
    data["price"] = money(amount_minor=m["price_minor"], currency=m["price_currency"])
    data["list_price"] = _money(m["list_price_minor"], m["list_price_currency"], money)
    data["msrp"] = _money(m["msrp_minor"], m["msrp_currency"], money)
    data["mileage"] = measure(value=m["mileage_value"], unit=m["mileage_unit"])
    return data


def validated_vehicle_from_row(row: sa.Row[Any]) -> Vehicle:
    """A :class:`Vehicle` from a row, validated field by field (the reference for :func:`vehicle_from_row`)."""
    return Vehicle.model_validate(_row_data(row, Money, Measure))


_VEHICLE_FIELDS = frozenset(Vehicle.model_fields)


def _trusted_vehicle(data: dict[str, Any]) -> Vehicle:
    """``Vehicle.model_construct(**data)`` for a ``data`` that holds every field and nothing else.

    What ``model_construct`` does once defaults are filled in (the instance dictionary, the set fields, no
    extras and no private attributes), without its per-field loop over the model: most of a search's
    remaining CPU per vehicle. ``tests/store`` holds the result equal to the validated model.
    """
    vehicle = Vehicle.__new__(Vehicle)
    object.__setattr__(vehicle, "__dict__", data)
    object.__setattr__(vehicle, "__pydantic_fields_set__", set(_VEHICLE_FIELDS))
    object.__setattr__(vehicle, "__pydantic_extra__", None)
    object.__setattr__(vehicle, "__pydantic_private__", None)
    return vehicle


def vehicle_from_row(row: sa.Row[Any]) -> Vehicle:
    """A :class:`Vehicle` from a row selected with the repository's columns.

    Rows are written only from validated :class:`Vehicle`s (``vehicle_row``), so reading one back
    constructs the model without validating it again (VIN check digit, patterns, ranges): a third of
    a search's CPU otherwise. Enums are restored to their types; the tests hold this equal to
    :func:`validated_vehicle_from_row` for every demo vehicle.
    """
    # The small nested models are cheaper validated (pydantic-core) than constructed in Python.
    data = _row_data(row, Money, Measure)
    data["condition"] = Condition(data["condition"])
    data["status"] = VehicleStatus(data["status"])
    if data.keys() != _VEHICLE_FIELDS:  # a column the model does not know, or a field no column fills
        return Vehicle.model_construct(**data)
    return _trusted_vehicle(data)


_COLUMN_INDEX = {c.name: i for i, c in enumerate(_SELECT_COLUMNS)}
_I_PHOTOS, _I_PRICE, _I_PRICE_CUR = (
    _COLUMN_INDEX["photos"],
    _COLUMN_INDEX["price_minor"],
    _COLUMN_INDEX["price_currency"],
)
_I_LIST, _I_LIST_CUR = _COLUMN_INDEX["list_price_minor"], _COLUMN_INDEX["list_price_currency"]
_I_MSRP, _I_MSRP_CUR = _COLUMN_INDEX["msrp_minor"], _COLUMN_INDEX["msrp_currency"]
_I_MILES, _I_MILES_UNIT = _COLUMN_INDEX["mileage_value"], _COLUMN_INDEX["mileage_unit"]


def _vehicle_from_values(values: Sequence[Any]) -> Vehicle:
    """:func:`vehicle_from_row` for a row's processed values in ``_SELECT_COLUMNS`` order."""
    data = dict(zip(_PLAIN_NAMES, values, strict=False))
    data["photos"] = tuple(values[_I_PHOTOS] or ())
    data["price"] = Money(amount_minor=values[_I_PRICE], currency=values[_I_PRICE_CUR])
    data["list_price"] = _money(values[_I_LIST], values[_I_LIST_CUR])
    data["msrp"] = _money(values[_I_MSRP], values[_I_MSRP_CUR])
    data["mileage"] = Measure(value=values[_I_MILES], unit=values[_I_MILES_UNIT])
    data["condition"] = Condition(data["condition"])
    data["status"] = VehicleStatus(data["status"])
    if data.keys() != _VEHICLE_FIELDS:
        return Vehicle.model_construct(**data)
    return _trusted_vehicle(data)


_CARD_COLUMNS = [_V.id, _V.vin, _V.year, _V.make, _V.model, _V.trim, _V.price_minor, _V.price_currency]
_CARD_COLUMNS += [_V.mileage_value, _V.mileage_unit, _V.status, _V.vdp_url]


def _card_from_values(values: Sequence[Any]) -> VehicleCard:
    """A :class:`VehicleCard` from a row's processed values in ``_CARD_COLUMNS`` order (rows come from validated
    vehicles, as for :func:`vehicle_from_row`)."""
    vid, vin, year, make, model, trim, price, currency, miles, unit, status, vdp_url = values
    return VehicleCard(
        id=vid,
        vin=vin,
        year=year,
        make=make,
        model=model,
        trim=trim,
        price=Money(amount_minor=price, currency=currency),
        mileage=Measure(value=miles, unit=unit),
        status=VehicleStatus(status),
        vdp_url=vdp_url,
    )


DRIVER_ROWS: DriverRows[Vehicle] = DriverRows(_SELECT_COLUMNS, _vehicle_from_values, name="store.driver_rows.vehicles")
"""The process's memo of built vehicles (searches in every unit of work share it)."""

CARD_ROWS: DriverRows[VehicleCard] = DriverRows(_CARD_COLUMNS, _card_from_values, name="store.driver_rows.cards")
"""The process's memo of built vehicle cards (compact searches)."""

PREPARED_SEARCHES = PreparedReads(name="store.prepared_searches")
"""The driver statements (page, count) of searches asked for more than once, on inline SQLite reads."""


def count_cap(query: InventoryQuery) -> int:
    """How many matches from the page's start the count of ``query`` reads at most (one more, to know)."""
    return max(TOTAL_COUNTED_UP_TO, query.limit + 1)


def _change(before: VehicleStatus, after: VehicleStatus) -> ChangeType:
    """``removed`` takes a vehicle out of the inventory (``deleted``); leaving it brings it back (``created``)."""
    gone = VehicleStatus.REMOVED
    return change_of(was_listed=before is not gone, is_listed=after is not gone)


def _event(vehicle: Vehicle, change: ChangeType, at: datetime) -> ChangeEvent:
    return ChangeEvent(
        id=new_id(),
        dealership_id=vehicle.dealership_id,
        resource_type=ResourceType.VEHICLE,
        resource_id=vehicle.id,
        change_type=change,
        status=vehicle.status.value,
        occurred_at=at,
        payload={"vin": vehicle.vin, "stock": vehicle.stock},
    )


_STATEMENTS: caching.Cache[tuple[InventoryQuery, bool], tuple[sa.Select[Any], sa.Select[Any]]] = caching.lru(
    "store.search_statements", 256
)


def search_statements(query: InventoryQuery, cards: bool = False) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """:func:`build_search_statements`, remembered for the last 256 distinct queries (``store.search_statements``).

    A query that cannot be hashed (built without validation, it may hold lists) is built afresh.
    """
    try:
        found = _STATEMENTS.get((query, cards))
    except TypeError:
        return build_search_statements(query, cards)
    if found is None:
        found = build_search_statements(query, cards)
        _STATEMENTS.put((query, cards), found)
    return found


def build_search_statements(query: InventoryQuery, cards: bool = False) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """The page and count statements of ``query`` (a frozen, hashable value).

    ``cards``: the page selects a card's columns only (a compact search), else the whole vehicle's.

    Both start where the page does: after ``query.after`` (keyset, see :func:`search.after_conditions`) or
    ``query.offset`` units in. The count reads at most :func:`count_cap` plus one matches from there
    (``SELECT count(*) FROM (SELECT 1 ... LIMIT n)``), so a count never reads a whole rooftop either.

    Statements are immutable and hold no connection; reusing one also reuses its memoised cache key, so a repeated
    search (an agent paging, a popular query) skips building the statement and keying SQLAlchemy's compiled
    cache: about a quarter of a millisecond of CPU per search.

    Where one index yields the matches in the page's order (:func:`search.index_ordered`: the common sorts of a
    rooftop's offerable units), the page reads its rows in that order and stops at the page's end. Otherwise the
    page is a deferred join: the matching ids are ordered and cut to the page first (narrow rows, from the index
    where one covers the filter), then only the page's rows are read whole. Sorting every match with all its
    columns took most of a small search's SQLite time (on SQLite, 60 matches: 125 → 71 µs).
    """
    where = [*search.conditions(query), *search.after_conditions(query)]
    skip = 0 if search.keyset_applies(query) else query.offset
    order = search.order_by(query)
    columns = _CARD_COLUMNS if cards else _SELECT_COLUMNS
    if skip == 0 and search.index_ordered(query):
        # The index's own order, cut at the page: only the page's rows are read (a deferred join would look
        # each id up again and sort them: 180 → 100 µs for the 20 cheapest of a 2,000-vehicle rooftop).
        page = sa.select(*columns).where(*where).order_by(*order).limit(query.limit)
        return page, _count(where, skip, query)
    ids = sa.select(_V.id).where(*where).order_by(*order).offset(skip).limit(query.limit).correlate(None)
    page = sa.select(*columns).where(_V.id.in_(ids)).order_by(*order)
    return page, _count(where, skip, query)


def _count(where: list[sa.ColumnElement[bool]], skip: int, query: InventoryQuery) -> sa.Select[Any]:
    """At most :func:`count_cap` plus one matches from the page's start, counted."""
    counted: sa.Select[Any] = sa.select(sa.literal_column("1")).select_from(vehicles).where(*where).offset(skip)
    return sa.select(sa.func.count()).select_from(counted.limit(count_cap(query) + 1).subquery())


class SqlInventoryRepository:
    """:class:`~forecourt.store.base.InventoryRepository` over the ``vehicles`` table."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def _one(self, *where: sa.ColumnElement[bool], lock: bool = False) -> Vehicle | None:
        stmt = sa.select(*_SELECT_COLUMNS).where(*where).limit(1)
        if lock and self._ctx.is_postgres:
            stmt = stmt.with_for_update()
        row = (await self._ctx.conn.execute(stmt)).first()
        return vehicle_from_row(row) if row else None

    async def get(self, dealership_id: str, vehicle_id: str) -> Vehicle | None:
        """A vehicle by id, whatever its status."""
        return await self._one(_V.dealership_id == dealership_id, _V.id == vehicle_id)

    async def get_by_vin(self, dealership_id: str, vin: str) -> Vehicle | None:
        """A vehicle by VIN (case-insensitive), whatever its status."""
        return await self._one(_V.dealership_id == dealership_id, _V.vin == vin.strip().upper())

    async def get_by_stock(self, dealership_id: str, stock: str) -> Vehicle | None:
        """A vehicle by stock number (case-insensitive), whatever its status."""
        return await self._one(_V.dealership_id == dealership_id, _V.stock_l == stock.strip().lower())

    async def search(self, query: InventoryQuery) -> SearchPage:
        """One page of the vehicles matching ``query`` and the size of the whole matching set (exact up to
        :data:`TOTAL_COUNTED_UP_TO` from the page's start, else a lower bound: ``total_exact``)."""
        items, total, exact = await self._page(query, DRIVER_ROWS, cards=False)
        after = search.keyset_key(query, items[-1]) if items else None
        return SearchPage(
            items=items, total=total, offset=query.offset, limit=query.limit, total_exact=exact, after=after
        )

    async def search_cards(self, query: InventoryQuery) -> CardPage:
        """:meth:`search` reading only each vehicle's card columns."""
        items, total, exact = await self._page(query, CARD_ROWS, cards=True)
        after = search.keyset_key(query, items[-1]) if items else None
        return CardPage(items, total, query.offset, query.limit, total_exact=exact, after=after)

    async def _page(self, query: InventoryQuery, rows: DriverRows[T], *, cards: bool) -> tuple[list[T], int, bool]:
        conn = self._ctx.conn
        inline = conn if isinstance(conn, InlineConnection) else None
        prepared = None
        if inline is not None:  # a repeated search on SQLite: straight to the driver
            prepared = PREPARED_SEARCHES.get((query, cards), inline.dialect, lambda: search_statements(query, cards))
        if prepared is not None and inline is not None:
            page_sql, count_sql = prepared
            items = rows.from_rows(inline.driver_rows(page_sql), inline.dialect)
        else:
            page, count = search_statements(query, cards)
            items = rows.from_result(await conn.execute(page), conn.dialect)
        if len(items) < query.limit and (items or query.offset == 0):
            return items, query.offset + len(items), True  # the last page: nothing more to count
        if prepared is not None and inline is not None:
            counted = int(inline.driver_rows(count_sql)[0][0])
        else:  # (a window count in the page's statement measured slower on SQLite: it materialises every match)
            counted = int((await conn.execute(count)).scalar_one())
        if not counted:  # a page past the end (or every unit after the key gone): count what there is
            whole = sa.select(sa.func.count()).select_from(vehicles).where(*search.conditions(query))
            return items, int((await conn.execute(whole)).scalar_one()), True
        cap = count_cap(query)
        return items, query.offset + min(counted, cap), counted <= cap

    async def facets(self, query: InventoryQuery) -> Facets:
        """Term counts and numeric ranges (price in minor units) over the vehicles matching ``query``."""
        terms_stmt, ranges_stmt = search.facet_statements(query)
        term_rows = list(await self._ctx.conn.execute(terms_stmt))
        range_row = (await self._ctx.conn.execute(ranges_stmt)).one()
        return search.build_facets(term_rows, range_row)

    async def upsert(self, vehicle: Vehicle) -> bool:
        """Insert or update by (dealership, VIN); True when created.

        An existing unit keeps its id and ``created_at``. A change to anything but the bookkeeping
        timestamps writes an ``updated`` event; re-sending an unchanged unit only refreshes
        ``last_verified_at`` and writes no event, so repeated feed imports are idempotent.
        """
        await self._ctx.lock_outbox()
        existing = await self._one(_V.dealership_id == vehicle.dealership_id, _V.vin == vehicle.vin, lock=True)
        now = utcnow()
        if existing is None:
            created_at = vehicle.created_at or now
            stamps = {"created_at": created_at, "updated_at": vehicle.updated_at or created_at}
            fresh = vehicle.model_copy(update=stamps)
            if await self._ctx.insert_ignore(vehicles, vehicle_row(fresh)):
                await self._ctx.append_event(_event(fresh, ChangeType.CREATED, created_at))
                return True
            existing = await self._one(_V.dealership_id == vehicle.dealership_id, _V.vin == vehicle.vin, lock=True)
            if existing is None:  # the id, not the VIN, collided with another dealership's vehicle
                raise AlreadyExists(details={"field": "id"})
        await self._update_existing(existing, vehicle, now)
        return False

    async def _update_existing(self, existing: Vehicle, vehicle: Vehicle, now: datetime) -> None:
        changed = existing.model_dump(exclude=_BOOKKEEPING) != vehicle.model_dump(exclude=_BOOKKEEPING)
        updated_at = (vehicle.updated_at or now) if changed else existing.updated_at
        merged = vehicle.model_copy(
            update={"id": existing.id, "created_at": existing.created_at or now, "updated_at": updated_at}
        )
        row = vehicle_row(merged)
        del row["id"]
        await self._ctx.update_where(vehicles, (_V.id == existing.id,), row)
        if changed:
            change = _change(existing.status, merged.status)
            await self._ctx.append_event(_event(merged, change, updated_at or now))

    async def mark_unavailable_except(self, dealership_id: str, keep_vins: set[str], at: datetime) -> int:
        """Mark every offerable vehicle whose VIN is not in ``keep_vins`` as removed; returns how many."""
        return await inventory_bulk.mark_removed_except(self._ctx, dealership_id, keep_vins, at)

    async def get_many_by_vin(
        self, dealership_id: str, vins: Collection[str], *, lock: bool = False
    ) -> dict[str, Vehicle]:
        """The dealership's vehicles with these VINs, by VIN; ``lock`` for a transaction about to write them."""
        return await inventory_bulk.get_many_by_vin(
            self._ctx, dealership_id, vins, _SELECT_COLUMNS, vehicle_from_row, lock=lock
        )

    async def write_import(
        self, created: Sequence[Vehicle], changed: Sequence[Vehicle], verified: Sequence[str], at: datetime
    ) -> None:
        """Write one batch of a feed import (see :func:`forecourt.store.sql.inventory_bulk.write_import`)."""
        await inventory_bulk.write_import(self._ctx, created, changed, verified, at, vehicle_row)

    async def offerable_vins(self, dealership_id: str) -> set[str]:
        """VINs of the dealership's vehicles that are on offer."""
        return await inventory_bulk.offerable_vins(self._ctx, dealership_id)

    async def set_status(self, dealership_id: str, vehicle_id: str, status: str, at: datetime) -> Vehicle:
        """Change a vehicle's status (``sold`` also stamps ``sold_at``); raises ``VehicleNotFound``."""
        try:
            new_status = VehicleStatus(status)
        except ValueError as exc:
            raise InvalidParams(details={"field": "status"}) from exc
        await self._ctx.lock_outbox()
        current = await self._one(_V.dealership_id == dealership_id, _V.id == vehicle_id, lock=True)
        if current is None:
            raise VehicleNotFound()
        update: dict[str, Any] = {"status": new_status, "updated_at": at}
        if new_status is VehicleStatus.SOLD and current.sold_at is None:
            update["sold_at"] = at
        changed = current.model_copy(update=update)
        values = {**update, "status": new_status.value}
        await self._ctx.update_where(vehicles, (_V.id == vehicle_id,), values)
        await self._ctx.append_event(_event(changed, _change(current.status, new_status), at))
        return changed

    async def comparables(
        self, make: str, model: str, year_min: int, year_max: int, mileage_max: int | None
    ) -> list[Vehicle]:
        """Vehicles of that make and model across all dealerships, sold ones included.

        At most :data:`MAX_COMPARABLES` units, most recently verified first.
        """
        where = [
            _V.make_l == make.strip().lower(),
            _V.model_l == model.strip().lower(),
            _V.year >= year_min,
            _V.year <= year_max,
        ]
        if mileage_max is not None:
            where.append(_V.mileage_value <= mileage_max)
        stmt = (
            sa.select(*_SELECT_COLUMNS).where(*where).order_by(_V.last_verified_at.desc(), _V.id).limit(MAX_COMPARABLES)
        )
        return [vehicle_from_row(r) for r in await self._ctx.conn.execute(stmt)]

    async def count(self, dealership_id: str | None = None) -> int:
        """How many vehicles (of one dealership, or in all), whatever their status."""
        stmt = sa.select(sa.func.count()).select_from(vehicles)
        if dealership_id is not None:
            stmt = stmt.where(_V.dealership_id == dealership_id)
        return int((await self._ctx.conn.execute(stmt)).scalar_one())
