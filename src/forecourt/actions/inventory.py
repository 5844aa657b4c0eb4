"""``dealer.information`` and the ``inventory.*`` actions: schemas and handlers."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

from forecourt import caching
from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    ID,
    MILEAGE,
    MONEY,
    NULLABLE_MONEY,
    NULLABLE_STRING,
    NULLABLE_TIMESTAMP,
    STRING_LIST,
    TIMESTAMP,
    dealer_action,
    input_schema,
    obj,
    opt_str,
    output_schema,
    page_schema,
    require_dealership,
    result,
)
from forecourt.actions.representations import (
    CARD_REPRESENTATIONS,
    dealership_repr,
    vehicle_repr,
)
from forecourt.contract.paging import next_cursor, open_page, page_output
from forecourt.domain.frozen import frozen
from forecourt.domain.vehicle import (
    TOTAL_COUNTED_UP_TO,
    CardPage,
    Condition,
    InventoryFilters,
    InventoryQuery,
    SearchPage,
    SortField,
    Vehicle,
    VehicleStatus,
)
from forecourt.errors import DealershipNotFound, VehicleNotFound

READ = "amcp:inventory:read"

_TERMS = ("make", "model", "trim", "body", "fuel", "transmission", "driveline", "exterior_color", "interior_color")
_TERM_FILTER: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 100},
    "maxItems": 50,
}

FILTERS: dict[str, Any] = {
    **{k: {**_TERM_FILTER, "description": f"Match any of these {k.replace('_', ' ')} values."} for k in _TERMS},
    "condition": {
        "type": "array",
        "items": {"enum": [c.value for c in Condition]},
        "uniqueItems": True,
        "description": "Sale condition: new, used or cpo (certified pre-owned).",
    },
    "status": {
        "type": "array",
        "items": {"enum": [s.value for s in VehicleStatus]},
        "uniqueItems": True,
        "description": "Availability statuses to include; by default only available and in_transit units.",
    },
    "year_min": {"type": "integer", "minimum": 1900, "maximum": 2100, "description": "Earliest model year."},
    "year_max": {"type": "integer", "minimum": 1900, "maximum": 2100, "description": "Latest model year."},
    "price_min": {"type": "integer", "minimum": 0, "description": "Lowest price in minor units (cents)."},
    "price_max": {"type": "integer", "minimum": 0, "description": "Highest price in minor units (cents)."},
    "mileage_max": {"type": "integer", "minimum": 0, "description": "Highest odometer reading, in miles."},
    "vin": {"type": "string", "pattern": "^[A-HJ-NPR-Za-hj-npr-z0-9]{17}$", "description": "Exact VIN."},
    "stock": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Exact stock number."},
    "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Free text over make/model/trim."},
}
SORT: dict[str, Any] = obj(
    {
        "field": {"enum": [f.value for f in SortField]},
        "order": {"enum": ["asc", "desc"], "default": "asc"},
    },
    ["field"],
    description="Result order; price sorts by integer minor units.",
)

VEHICLE: dict[str, Any] = obj(
    {
        "id": ID,
        "vin": {"type": "string"},
        "stock": {"type": "string"},
        "year": {"type": "integer"},
        "make": {"type": "string"},
        "model": {"type": "string"},
        "trim": {"type": "string"},
        "condition": {"enum": [c.value for c in Condition]},
        "body": {"type": "string"},
        "transmission": {"type": "string"},
        "driveline": {"type": "string"},
        "fuel": {"type": "string"},
        "engine": {"type": "string"},
        "exterior_color": {"type": "string"},
        "interior_color": {"type": "string"},
        "price": MONEY,
        "list_price": NULLABLE_MONEY,
        "msrp": NULLABLE_MONEY,
        "mileage": MILEAGE,
        "status": {"enum": [s.value for s in VehicleStatus]},
        "available": {"type": "boolean", "description": "Whether the unit may be offered to a buyer now."},
        "photos": STRING_LIST,
        "vdp_url": NULLABLE_STRING,
        "description": {"type": "string"},
        "last_verified_at": TIMESTAMP,
        "updated_at": NULLABLE_TIMESTAMP,
        "sold_at": NULLABLE_TIMESTAMP,
    }
)

CARD_FIELDS = ("id", "vin", "year", "make", "model", "trim", "price", "mileage", "status", "vdp_url")
VEHICLE_CARD: dict[str, Any] = obj(
    {k: VEHICLE["properties"][k] for k in CARD_FIELDS},
    description="A vehicle's card (view compact): the fields needed to choose it; inventory.get answers the rest.",
)
VIEW: dict[str, Any] = {
    "enum": ["full", "compact"],
    "default": "full",
    "description": (
        "full (default): every field of each vehicle; compact: each vehicle's card (id, vin, year, make, model, "
        "trim, price, mileage, status, vdp_url), read and sent without the rest."
    ),
}

_HOURS_DAY: dict[str, Any] = {
    "anyOf": [obj({"open": {"type": "string"}, "close": {"type": "string"}}), {"type": "null"}],
    "description": "Local opening hours HH:MM (24 h), or null when closed.",
}
_WEEK = obj({d: _HOURS_DAY for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")})
DEALERSHIP: dict[str, Any] = obj(
    {
        "id": ID,
        "name": {"type": "string"},
        "address": obj({k: {"type": "string"} for k in ("street", "city", "region", "postal_code", "country")}),
        "phones": {"type": "object", "additionalProperties": {"type": "string"}},
        "email": NULLABLE_STRING,
        "website": NULLABLE_STRING,
        "time_zone": {"type": "string", "description": "IANA time zone, e.g. America/Los_Angeles."},
        "currency": {"type": "string"},
        "brands": STRING_LIST,
        "capabilities": STRING_LIST,
        "sales_hours": _WEEK,
        "service_hours": _WEEK,
    }
)

_FACET_COUNT = obj({"value": {"type": "string"}, "count": {"type": "integer", "minimum": 0}})
_RANGE = obj({"min": {"type": ["integer", "null"]}, "max": {"type": ["integer", "null"]}})
TOTAL_RELATION: dict[str, Any] = {
    "enum": ["eq", "gte"],
    "description": (
        "eq: total is the exact number of matches; gte: at least total match (the count stops "
        f"{TOTAL_COUNTED_UP_TO} matches past the page's start, so that it never reads a whole rooftop)."
    ),
}
SEARCH_OUT: dict[str, Any] = page_schema({"anyOf": [VEHICLE, VEHICLE_CARD]})
SEARCH_OUT["properties"]["total"] = {
    **SEARCH_OUT["properties"]["total"],
    "description": "Matching vehicles: exact when total_relation is eq, a lower bound when gte.",
}
SEARCH_OUT["properties"]["total_relation"] = TOTAL_RELATION
SEARCH_OUT["required"].append("total_relation")

FACETS_OUT: dict[str, Any] = output_schema(
    obj(
        {
            "total": {"type": "integer", "minimum": 0},
            "terms": {"type": "object", "additionalProperties": {"type": "array", "items": _FACET_COUNT}},
            "ranges": {"type": "object", "additionalProperties": _RANGE},
        }
    )
)


def build_query(
    dealership_id: str,
    payload: Mapping[str, Any],
    *,
    offset: int = 0,
    limit: int = 20,
    after: tuple[int | str, ...] | None = None,
) -> InventoryQuery:
    """The store query for an ``inventory.search``/``inventory.facets`` payload (``after``: a cursor's keyset key)."""
    statuses = tuple(VehicleStatus(s) for s in payload.get("status") or ())
    filters = InventoryFilters(
        **{k: tuple(payload.get(k) or ()) for k in _TERMS},
        condition=tuple(Condition(c) for c in payload.get("condition") or ()),
        status=statuses,
        include_unavailable=any(not s.offerable for s in statuses),
        year_min=payload.get("year_min"),
        year_max=payload.get("year_max"),
        price_min_minor=payload.get("price_min"),
        price_max_minor=payload.get("price_max"),
        mileage_max=payload.get("mileage_max"),
        vin=(opt_str(payload, "vin") or "").upper() or None,
        stock=opt_str(payload, "stock"),
        query=opt_str(payload, "query"),
    )
    sort = payload.get("sort") or {}
    return InventoryQuery(
        dealership_id=dealership_id,
        filters=filters,
        sort=SortField(sort["field"]) if sort.get("field") else None,
        descending=sort.get("order") == "desc",
        offset=offset,
        limit=limit,
        after=after,
    )


_QUERIES: caching.Cache[tuple[str, Hashable, int, int], InventoryQuery] = caching.lru(
    "actions.inventory.queries", 4096
)  # by dealership, frozen payload, offset, limit


def _search_query(
    dealership_id: str,
    payload: Mapping[str, Any],
    offset: int,
    limit: int,
    after: tuple[int | str, ...] | None,
    form: Hashable | None = None,
) -> InventoryQuery:
    """:func:`build_query`, remembered for a payload asked again (the same search repeated, an agent's first page).

    Remembered by ``form``, the payload as the gateway froze it for the call (else by the payload frozen here, less
    its cursor: the offset stands for it). The same (immutable) query each time also makes the store's
    prepared-statement lookup an identity match. A page after a keyset key (a later page of a search by price, year,
    mileage or id) is built afresh: its key is new.
    """
    memo = form if form is not None else frozen({k: v for k, v in payload.items() if k != "cursor"})
    if memo is None or after is not None:
        return build_query(dealership_id, payload, offset=offset, limit=limit, after=after)
    key = (dealership_id, memo, offset, limit)
    query = _QUERIES.get(key)
    if query is None:
        query = build_query(dealership_id, payload, offset=offset, limit=limit)
        _QUERIES.put(key, query)
    return query


async def dealer_information(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """The dealership profile."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
    if dealership is None:
        raise DealershipNotFound()
    return result(dealership_repr(dealership))


async def inventory_search(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of matching vehicles, the total (``total_relation``: ``eq`` exact, ``gte`` a lower bound) and
    the next page's cursor (with the page's keyset key, where the sort has one)."""
    dealership_id = require_dealership(ctx)
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now, form=ctx.payload_form)
    query = _search_query(dealership_id, payload, page.offset, page.limit, page.after, ctx.payload_form)
    async with ctx.store.transaction() as uow:
        if payload.get("view") == "compact":
            found: SearchPage | CardPage = await uow.inventory.search_cards(query)
            items = CARD_REPRESENTATIONS.of(found.items)
        else:
            found = await uow.inventory.search(query)
            items = [vehicle_repr(v) for v in found.items]
    total = found.total
    cursor = next_cursor(ctx.settings, page, len(items), total, after=found.after)
    output = page_output(items, cursor, total)
    output["total_relation"] = "eq" if found.total_exact else "gte"
    return result(output, total=total)


async def find_vehicle(ctx: ExecutionContext, dealership_id: str, payload: Mapping[str, Any]) -> Vehicle | None:
    """The vehicle named by ``vehicle_id``, ``vin`` or ``stock`` in the payload, if it exists."""
    vehicle_id, vin, stock = opt_str(payload, "vehicle_id"), opt_str(payload, "vin"), opt_str(payload, "stock")
    async with ctx.store.transaction() as uow:
        if vehicle_id:
            return await uow.inventory.get(dealership_id, vehicle_id)
        if vin:
            return await uow.inventory.get_by_vin(dealership_id, vin.strip().upper())
        if stock:
            return await uow.inventory.get_by_stock(dealership_id, stock)
    return None


async def inventory_get(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One vehicle by id, VIN or stock number."""
    dealership_id = require_dealership(ctx)
    vehicle = await find_vehicle(ctx, dealership_id, payload)
    if vehicle is None:
        raise VehicleNotFound()
    return result(vehicle_repr(vehicle))


async def inventory_facets(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Term counts and numeric ranges over the matching set."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        facets = await uow.inventory.facets(build_query(dealership_id, payload))
    return result(facets.model_dump(mode="json"))


def follows_changes(action: Action) -> Action:
    """``action`` cached until the dealership's inventory changes (see ``forecourt.gateway.freshness``).

    The 30 s TTL is only the safety net: a change reaches this process's cache at once and every other
    replica's within one outbox poll.
    """
    return replace(action, cacheable=True, cache_follows_changes=True, cache_ttl_s=30.0)


ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "dealer.information",
        title="Dealership profile",
        description=(
            "Return the dealership's public profile: name, postal address, phone numbers by department, website, "
            "IANA time zone, currency, brands carried, capabilities (e.g. financing, trade_in, delivery) and weekly "
            "sales and service hours in local time (HH:MM, 24 h; null = closed). Use it before promising hours, "
            "directions or services. Contains no customer data."
        ),
        input=input_schema({}),
        output=output_schema(DEALERSHIP),
        scope=READ,
        cacheable=True,
        pii=False,
        tags=("dealer", "profile"),
        example={"dealership_id": "demo-toyota-sf"},
    ),
    follows_changes(
        dealer_action(
            "inventory.search",
            title="Search inventory",
            description=(
                "Search the dealership's vehicles. Filters are flat keys; arrays match any listed value "
                "(case-insensitive), ranges are inclusive. Prices are integer minor units (cents for USD), mileage "
                "is in miles. Only available and in_transit units are returned unless `status` says otherwise. "
                "Returns {items, next_cursor, total, total_relation}: total is exact (total_relation eq) up to "
                f"{TOTAL_COUNTED_UP_TO} matches from the page's start, beyond that a lower bound (gte); pass "
                "next_cursor back to get the next page (absent on the last page). Check each vehicle's `available` "
                "and `last_verified_at` before telling a buyer a unit is in stock. Use it to find vehicles that fit "
                'a buyer\'s needs; `query` also takes free text ("red hybrid SUV").'
            ),
            input=input_schema({**FILTERS, "sort": SORT, "view": VIEW}, paged=True),
            output=SEARCH_OUT,
            scope=READ,
            pii=False,
            tags=("inventory", "search"),
            example={"make": ["Toyota"], "body": ["SUV"], "price_max": 3500000, "limit": 3},
        )
    ),
    follows_changes(
        dealer_action(
            "inventory.get",
            title="Get a vehicle",
            description=(
                "Fetch one vehicle by exactly one of `vehicle_id` (the server id from search results), `vin` (17 "
                "characters) or `stock` (the dealer's stock number). Sold and removed units are returned with their "
                "status so you can tell a buyer a unit is gone; `available` says whether it can be offered. Fails "
                "with inventory.vehicle_not_found when no such vehicle exists here. Use it to confirm one vehicle's "
                "details, price and availability before quoting it."
            ),
            input=input_schema(
                {"vehicle_id": ID, "vin": FILTERS["vin"], "stock": FILTERS["stock"]},
                oneOf=[{"required": ["vehicle_id"]}, {"required": ["vin"]}, {"required": ["stock"]}],
            ),
            output=output_schema(VEHICLE),
            scope=READ,
            pii=False,
            tags=("inventory",),
            example={"vin": "4T1B11HK5KU000001"},
        )
    ),
    follows_changes(
        dealer_action(
            "inventory.facets",
            title="Inventory facets",
            description=(
                "Summarise the dealership's matching inventory: for each term field (make, model, trim, body, fuel, "
                "...) the values present with counts, and min/max ranges (price in minor units, mileage in miles, "
                "year). Takes the same filters as inventory.search. Use it to learn what is in stock before "
                "searching, or to suggest refinements."
            ),
            input=input_schema(FILTERS),
            output=FACETS_OUT,
            scope=READ,
            pii=False,
            tags=("inventory", "facets"),
            example={"condition": ["used"]},
        )
    ),
)

HANDLERS: dict[str, Handler] = {
    "dealer.information": dealer_information,
    "inventory.search": inventory_search,
    "inventory.get": inventory_get,
    "inventory.facets": inventory_facets,
}
