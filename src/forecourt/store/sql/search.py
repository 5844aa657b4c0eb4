"""SQL for inventory search: filters, ordering and facets over the ``vehicles`` table.

Rules (the same for every backend):

- Multi-value text filters match case-insensitively and exactly, through the lower-cased ``*_l`` columns.
- ``query`` is split on whitespace; every token must occur (as a substring, case-insensitively)
  in the vehicle's year, make, model, trim, body, colours, stock number or VIN.
- Without an explicit ``status`` filter only offerable units (``available``, ``in_transit``) match,
  unless ``include_unavailable`` is set: a sold unit is never offered by default.
- Mileage bounds compare with the stored mileage value in the vehicle's own unit.
- Sorting by any :class:`SortField` ascending or descending, missing values last, ties broken by id in the
  same direction (so that one index on ``(dealership_id, field, id)`` serves both directions, scanned forwards
  or backwards); without a sort field the order is by id.
- A page of a search by price, year, mileage or id (unsorted) may start after the previous page's last unit
  (keyset: ``(price_minor, id) > (?, ?)``), which the same index seeks to, instead of skipping ``offset`` units.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from forecourt.domain.vehicle import (
    FacetCount,
    Facets,
    InventoryFilters,
    InventoryQuery,
    RangeFacet,
    SortField,
    Vehicle,
    VehicleCard,
    VehicleStatus,
)
from forecourt.store.sql.tables import vehicles

_V = vehicles.c
OFFERABLE: tuple[str, ...] = tuple(s.value for s in VehicleStatus if s.offerable)
MAX_QUERY_TOKENS = 12

_TERM_FILTERS: dict[str, sa.Column[Any]] = {
    "make": _V.make_l,
    "model": _V.model_l,
    "trim": _V.trim_l,
    "transmission": _V.transmission_l,
    "fuel": _V.fuel_l,
    "driveline": _V.driveline_l,
    "body": _V.body_l,
    "exterior_color": _V.exterior_color_l,
    "interior_color": _V.interior_color_l,
}

_SORT_COLUMNS: dict[SortField, sa.Column[Any]] = {
    SortField.PRICE: _V.price_minor,
    SortField.LIST_PRICE: _V.list_price_minor,
    SortField.MSRP: _V.msrp_minor,
    SortField.MILEAGE: _V.mileage_value,
    SortField.YEAR: _V.year,
    SortField.MAKE: _V.make_l,
    SortField.MODEL: _V.model_l,
    SortField.STOCK: _V.stock_l,
    SortField.LAST_VERIFIED_AT: _V.last_verified_at,
}
_NULLABLE_SORTS = frozenset({SortField.LIST_PRICE, SortField.MSRP})
_KEYSET: dict[SortField, Callable[[Vehicle | VehicleCard], int]] = {
    SortField.PRICE: lambda unit: unit.price.amount_minor,
    SortField.YEAR: lambda unit: unit.year,
    SortField.MILEAGE: lambda unit: unit.mileage.value,
}
"""Sorts a page may continue by key (each has an index in its order, see migration ``inventory_0002``), and the
sort column's value of a unit (vehicle or card)."""

# facet name -> (grouping column, display column)
_TERM_FACETS: dict[str, tuple[sa.Column[Any], sa.Column[Any]]] = {
    "make": (_V.make_l, _V.make),
    "model": (_V.model_l, _V.model),
    "trim": (_V.trim_l, _V.trim),
    "body": (_V.body_l, _V.body),
    "fuel": (_V.fuel_l, _V.fuel),
    "transmission": (_V.transmission_l, _V.transmission),
    "driveline": (_V.driveline_l, _V.driveline),
    "exterior_color": (_V.exterior_color_l, _V.exterior_color),
    "condition": (_V.condition, _V.condition),
}
_RANGE_FACETS: dict[str, sa.Column[Any]] = {"year": _V.year, "price": _V.price_minor, "mileage": _V.mileage_value}


def search_text(vehicle: Vehicle) -> str:
    """The lower-cased text free-text queries are matched against."""
    parts = (
        str(vehicle.year),
        vehicle.make,
        vehicle.model,
        vehicle.trim,
        vehicle.body,
        vehicle.exterior_color,
        vehicle.interior_color,
        vehicle.stock,
        vehicle.vin,
    )
    return " ".join(p.strip().lower() for p in parts if p.strip())


def _like_pattern(token: str) -> str:
    escaped = token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _term_conditions(filters: InventoryFilters) -> list[sa.ColumnElement[bool]]:
    out: list[sa.ColumnElement[bool]] = []
    for name, column in _TERM_FILTERS.items():
        values: tuple[str, ...] = getattr(filters, name)
        if values:
            out.append(column.in_(sorted({v.strip().lower() for v in values})))
    if filters.condition:
        out.append(_V.condition.in_(sorted({c.value for c in filters.condition})))
    return out


def _status_conditions(filters: InventoryFilters) -> list[sa.ColumnElement[bool]]:
    if filters.status:
        return [_V.status.in_(sorted({s.value for s in filters.status}))]
    if filters.include_unavailable:
        return []
    return [_V.status.in_(OFFERABLE)]


def _range_conditions(filters: InventoryFilters) -> list[sa.ColumnElement[bool]]:
    bounds: list[tuple[sa.Column[Any], int | None, int | None]] = [
        (_V.year, filters.year_min, filters.year_max),
        (_V.price_minor, filters.price_min_minor, filters.price_max_minor),
        (_V.mileage_value, filters.mileage_min, filters.mileage_max),
    ]
    out: list[sa.ColumnElement[bool]] = []
    for column, low, high in bounds:
        if low is not None:
            out.append(column >= low)
        if high is not None:
            out.append(column <= high)
    return out


def _identity_conditions(filters: InventoryFilters) -> list[sa.ColumnElement[bool]]:
    out: list[sa.ColumnElement[bool]] = []
    if filters.vin:
        out.append(_V.vin == filters.vin.strip().upper())
    if filters.stock:
        out.append(_V.stock_l == filters.stock.strip().lower())
    if filters.query:
        tokens = list(dict.fromkeys(filters.query.lower().split()))[:MAX_QUERY_TOKENS]
        out.extend(_V.search_text.like(_like_pattern(t), escape="\\") for t in tokens)
    return out


def conditions(query: InventoryQuery) -> list[sa.ColumnElement[bool]]:
    """The WHERE clauses of a dealership-scoped inventory query."""
    f = query.filters
    return [
        _V.dealership_id == query.dealership_id,
        *_status_conditions(f),
        *_term_conditions(f),
        *_range_conditions(f),
        *_identity_conditions(f),
    ]


def order_by(query: InventoryQuery) -> list[sa.ColumnElement[Any]]:
    """ORDER BY terms: the requested field (missing values last), then id in the same direction for a stable order."""
    if query.sort is None:
        return [_V.id.asc()]
    column = _SORT_COLUMNS[query.sort]
    key = column.desc() if query.descending else column.asc()
    if query.sort in _NULLABLE_SORTS:
        key = key.nulls_last()
    return [key, _V.id.desc() if query.descending else _V.id.asc()]


def keyset_key(query: InventoryQuery, last: Vehicle | VehicleCard) -> tuple[int | str, ...] | None:
    """The key a page after ``last`` starts after (:attr:`InventoryQuery.after`); ``None`` for a sort without one."""
    if query.sort is None:
        return (last.id,)
    value = _KEYSET.get(query.sort)
    return None if value is None else (value(last), last.id)


def keyset_applies(query: InventoryQuery) -> bool:
    """Whether ``query.after`` is a key of ``query``'s sort (else the page starts at ``query.offset``)."""
    after = query.after
    if after is None or (query.sort is not None and query.sort not in _KEYSET):
        return False
    if query.sort is None:
        return len(after) == 1 and isinstance(after[0], str)
    return len(after) == 2 and type(after[0]) is int and isinstance(after[1], str)


_UNFILTERED = InventoryFilters()


def index_ordered(query: InventoryQuery) -> bool:
    """Whether one index yields ``query``'s matches in its order: a sort with a ``(dealership_id, field, id,
    status)`` index (price, year, mileage; id when unsorted) and no filter but the status, which that index holds.

    Such a page reads its rows straight from the index's order, only as many as it shows.
    """
    if query.sort is not None and query.sort not in _KEYSET:
        return False
    filters = query.filters
    return filters == _UNFILTERED or filters == InventoryFilters(
        status=filters.status, include_unavailable=filters.include_unavailable
    )


def after_conditions(query: InventoryQuery) -> list[sa.ColumnElement[bool]]:
    """The WHERE clause of a keyset page: after the key in the sort's order; none without a key."""
    if not keyset_applies(query) or query.after is None:
        return []
    if query.sort is None:
        return [_V.id > query.after[0]]
    keys = sa.tuple_(_SORT_COLUMNS[query.sort], _V.id)  # a row value: one index range on both databases
    return [keys < query.after if query.descending else keys > query.after]


def facet_statements(query: InventoryQuery) -> tuple[sa.Select[Any], sa.Select[Any]]:
    """Two statements over the matching set: term counts (one UNION ALL) and count plus numeric ranges."""
    where = conditions(query)
    columns = {c for pair in _TERM_FACETS.values() for c in pair}
    matching = sa.select(*sorted(columns, key=lambda c: c.name)).where(*where).cte("matching")
    parts = []
    for name, (group_col, display_col) in _TERM_FACETS.items():
        group = matching.c[group_col.name]
        parts.append(
            sa.select(
                sa.literal(name).label("facet"),
                sa.func.max(matching.c[display_col.name]).label("value"),
                sa.func.count().label("n"),
            )
            .where(group != "")
            .group_by(group)
        )
    terms = sa.union_all(*parts)
    aggregates: list[sa.ColumnElement[Any]] = [sa.func.count().label("total")]
    for name, column in _RANGE_FACETS.items():
        aggregates += [sa.func.min(column).label(f"{name}_min"), sa.func.max(column).label(f"{name}_max")]
    ranges = sa.select(*aggregates).where(*where)
    return sa.select(terms.subquery()), ranges


def build_facets(term_rows: list[sa.Row[Any]], range_row: sa.Row[Any]) -> Facets:
    """Assemble :class:`Facets` from the rows of :func:`facet_statements`."""
    terms: dict[str, list[FacetCount]] = {name: [] for name in _TERM_FACETS}
    for row in term_rows:
        m = row._mapping
        terms[m["facet"]].append(FacetCount(value=m["value"], count=int(m["n"])))
    for counts in terms.values():
        counts.sort(key=lambda fc: (-fc.count, fc.value.lower()))
    r = range_row._mapping
    ranges = {
        name: RangeFacet(min=_opt_int(r[f"{name}_min"]), max=_opt_int(r[f"{name}_max"])) for name in _RANGE_FACETS
    }
    return Facets(total=int(r["total"]), terms=terms, ranges=ranges)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)
