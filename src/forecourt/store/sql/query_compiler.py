"""Compile a :class:`~forecourt.domain.named_queries.NamedQuery` with caller parameters into one ``SELECT``.

Guarantees:

- The statement reads one whitelisted table and is always filtered by ``dealership_id`` (the
  caller's, resolved by the gateway), whatever the definition says.
- Column names come only from the view whitelist; identifiers are never taken from input.
- Every value — definition literals and caller parameters alike — is a bound parameter; nothing is
  formatted into SQL text.
- Time windows and ages are computed in Python in the dealership's time zone and bound as UTC
  timestamps, so the SQL is the same on SQLite and PostgreSQL except for calendar buckets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from forecourt.domain.errors import InvalidQuery, InvalidQueryParams
from forecourt.domain.named_queries import (
    WINDOWS,
    Aggregate,
    Filter,
    GroupBy,
    NamedQuery,
    ParamRef,
    ParamSpec,
    ViewColumn,
)
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.store.sql.tables import UtcDateTime, appointments, leads, repair_orders, vehicles

TABLES: dict[str, sa.Table] = {
    "leads": leads,
    "vehicles": vehicles,
    "repair_orders": repair_orders,
    "appointments": appointments,
}
_NUMERIC = ("integer", "money", "age")
_MAX_STRING = 200


@dataclass
class Compiled:
    """A statement ready to execute, with its output columns and what the caller's parameters resolved to."""

    statement: sa.Select[Any]
    columns: list[dict[str, str]]
    params: dict[str, Any]
    window: dict[str, str] | None = None
    limit: int = 100
    kinds: dict[str, str] = field(default_factory=dict)


@dataclass
class _Ctx:
    query: NamedQuery
    table: sa.Table
    params: dict[str, Any]
    now: datetime
    tz: ZoneInfo
    postgres: bool


def resolve_params(query: NamedQuery, given: Mapping[str, Any]) -> dict[str, Any]:
    """Check the caller's parameters against the declaration; apply defaults.

    Raises:
        InvalidQueryParams: Unknown, missing or mistyped parameters.
    """
    unknown = sorted(set(given) - set(query.params))
    if unknown:
        raise InvalidQueryParams(details={"unknown": unknown[:10]})
    resolved: dict[str, Any] = {}
    for name, spec in query.params.items():
        if name in given and given[name] is not None:
            resolved[name] = _coerce(name, spec, given[name])
        elif spec.default is not None:
            resolved[name] = _coerce(name, spec, spec.default)
        elif spec.required:
            raise InvalidQueryParams(details={"missing": name})
        else:
            resolved[name] = None
    return resolved


def _coerce(name: str, spec: ParamSpec, value: Any) -> Any:
    try:
        out = _convert(spec.type, value)
    except (TypeError, ValueError):
        raise InvalidQueryParams(details={"param": name, "expected": spec.type}) from None
    if spec.enum is not None and out not in spec.enum:
        raise InvalidQueryParams(details={"param": name, "rule": "enum"})
    return out


def _string(value: Any) -> str:
    if not isinstance(value, str) or len(value) > _MAX_STRING:
        raise ValueError("string")
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("integer")
    return value


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("number")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("boolean")
    return value


def _window(value: Any) -> str:
    if value not in WINDOWS:
        raise ValueError("window")
    return str(value)


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "date": lambda v: date.fromisoformat(str(v)),
    "datetime": lambda v: parse_rfc3339(str(v)),
    "window": _window,
}


def _convert(kind: str, value: Any) -> Any:
    return _CONVERTERS[kind](value)


def compile_query(
    query: NamedQuery,
    params: Mapping[str, Any],
    *,
    dealership_id: str,
    now: datetime,
    timezone: str,
    postgres: bool,
) -> Compiled:
    """The scoped ``SELECT`` for ``query`` (see the module docstring).

    Raises:
        InvalidQuery: The definition names a column, operator or combination the language forbids.
        InvalidQueryParams: The parameters do not match the declaration.
    """
    table = TABLES[query.base]
    ctx = _Ctx(query, table, resolve_params(query, params), now, _zone(timezone), postgres)
    conditions: list[sa.ColumnElement[bool]] = [table.c.dealership_id == sa.bindparam("dealership_id", dealership_id)]
    conditions.extend(_filter(ctx, f) for f in query.filters)
    window = None
    if query.time_window is not None:
        column = _column(ctx, query.time_window.column, "time_window")
        if column[1].kind != "timestamp":
            raise InvalidQuery(details={"path": "/time_window/column", "rule": "timestamp_required"})
        name = _value(ctx, query.time_window.window)
        if name not in WINDOWS:
            raise InvalidQuery(details={"path": "/time_window/window", "rule": "unknown_window"})
        start, end = window_bounds(str(name), now, ctx.tz)
        conditions += [column[0] >= sa.literal(start, UtcDateTime()), column[0] < sa.literal(end, UtcDateTime())]
        window = {"name": str(name), "start": start.isoformat(), "end": end.isoformat()}
    outputs, kinds, group_exprs = _outputs(ctx)
    stmt = sa.select(*outputs).select_from(table).where(*conditions)
    if group_exprs:
        stmt = stmt.group_by(*group_exprs)
    stmt = stmt.order_by(*_ordering(ctx, outputs)).limit(query.limit + 1)
    columns = [{"name": name, "type": kind} for name, kind in kinds.items()]
    resolved = {k: (v.isoformat() if isinstance(v, date | datetime) else v) for k, v in ctx.params.items()}
    return Compiled(stmt, columns, resolved, window, query.limit, kinds)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError):
        return ZoneInfo("UTC")


def _column(ctx: _Ctx, name: str, path: str) -> tuple[sa.ColumnElement[Any], ViewColumn]:
    spec = ctx.query.view().get(name)
    if spec is None:
        raise InvalidQuery(details={"path": f"/{path}", "rule": "unknown_column", "column": name[:64]})
    return ctx.table.c[spec.source], spec


def _value(ctx: _Ctx, value: Any) -> Any:
    if isinstance(value, ParamRef):
        if value.param not in ctx.query.params:
            raise InvalidQuery(details={"rule": "undeclared_param", "param": value.param})
        return ctx.params[value.param]
    return value


def _typed(spec: ViewColumn, value: Any, ctx: _Ctx) -> Any:
    """A filter value checked against the column kind (timestamps accept dates and RFC 3339 text)."""
    if spec.kind == "string":
        if not isinstance(value, str) or len(value) > _MAX_STRING:
            raise InvalidQueryParams(details={"rule": "string_expected"})
        return value
    if spec.kind == "timestamp":
        if isinstance(value, datetime):
            return value
        if isinstance(value, date):
            return datetime.combine(value, datetime.min.time(), tzinfo=ctx.tz).astimezone(UTC)
        if isinstance(value, str):
            try:
                return parse_rfc3339(value)
            except ValueError:
                raise InvalidQueryParams(details={"rule": "timestamp_expected"}) from None
        raise InvalidQueryParams(details={"rule": "timestamp_expected"})
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidQueryParams(details={"rule": "number_expected"})
    return value


def _filter(ctx: _Ctx, flt: Filter) -> sa.ColumnElement[bool]:
    column, spec = _column(ctx, flt.column, "filters")
    if flt.op in ("is_null", "not_null"):
        return column.is_(None) if flt.op == "is_null" else column.is_not(None)
    raw = _value(ctx, flt.value)
    if raw is None:
        # An optional parameter left out switches its filter off.
        return sa.true()
    if spec.kind == "age":
        return _age_filter(ctx, column, flt.op, raw, spec)
    if flt.op in ("in", "not_in"):
        items = raw if isinstance(raw, list) else [raw]
        if not items or len(items) > 100:
            raise InvalidQueryParams(details={"rule": "list_size"})
        typed = [_typed(spec, v, ctx) for v in items]
        return column.in_(typed) if flt.op == "in" else column.not_in(typed)
    if isinstance(raw, list):
        raise InvalidQueryParams(details={"rule": "scalar_expected"})
    value = _typed(spec, raw, ctx)
    if flt.op == "contains":
        if spec.kind != "string":
            raise InvalidQuery(details={"path": "/filters", "rule": "contains_needs_text"})
        return column.contains(value, autoescape=True)
    if spec.kind == "timestamp":
        value = sa.literal(value, UtcDateTime())
    return _compare(column, flt.op, value)


def _compare(column: Any, op: str, value: Any) -> sa.ColumnElement[bool]:
    result: sa.ColumnElement[bool] = {
        "eq": lambda: column == value,
        "ne": lambda: column != value,
        "lt": lambda: column < value,
        "lte": lambda: column <= value,
        "gt": lambda: column > value,
        "gte": lambda: column >= value,
    }[op]()
    return result


def _age_filter(ctx: _Ctx, column: Any, op: str, raw: Any, spec: ViewColumn) -> sa.ColumnElement[bool]:
    """``age op N days`` as a timestamp comparison: older than N days means before now - N days."""
    days = _typed(spec, raw, ctx)
    if op not in ("lt", "lte", "gt", "gte"):
        raise InvalidQuery(details={"path": "/filters", "rule": "age_needs_range_operator"})
    cutoff = sa.literal(ctx.now - timedelta(days=float(days)), UtcDateTime())
    flipped = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}[op]
    return _compare(column, flipped, cutoff)


def _outputs(ctx: _Ctx) -> tuple[list[Any], dict[str, str], list[Any]]:
    query = ctx.query
    if not query.aggregates and not query.group_by:
        if not query.select:
            raise InvalidQuery(details={"rule": "select_or_aggregates_required"})
        outputs: list[Any] = []
        kinds: dict[str, str] = {}
        for name in query.select:
            column, spec = _column(ctx, name, "select")
            outputs.append((_age_days(ctx, column) if spec.kind == "age" else column).label(name))
            kinds[name] = "number" if spec.kind == "age" else spec.kind
        return outputs, kinds, []
    if query.select:
        raise InvalidQuery(details={"rule": "select_with_aggregates"})
    outputs, kinds, groups = [], {}, []
    for group in query.group_by:
        expr, kind = _group_expr(ctx, group)
        outputs.append(expr.label(group.name))
        kinds[group.name] = kind
        groups.append(expr)
    for agg in query.aggregates:
        expr, kind = _aggregate(ctx, agg)
        outputs.append(expr.label(agg.as_))
        kinds[agg.as_] = kind
    if len(kinds) != len(outputs):
        raise InvalidQuery(details={"rule": "duplicate_output_name"})
    return outputs, kinds, groups


def _group_expr(ctx: _Ctx, group: GroupBy) -> tuple[Any, str]:
    column, spec = _column(ctx, group.column, "group_by")
    if group.bucket is not None:
        if spec.kind != "timestamp":
            raise InvalidQuery(details={"path": "/group_by", "rule": "bucket_needs_timestamp"})
        return _calendar_bucket(ctx, column, group.bucket), "string"
    if group.bands is not None:
        if spec.kind not in _NUMERIC:
            raise InvalidQuery(details={"path": "/group_by", "rule": "bands_need_number"})
        return _bands(ctx, column, spec, sorted(set(group.bands))), "string"
    if spec.kind in ("timestamp", "age"):
        raise InvalidQuery(details={"path": "/group_by", "rule": "bucket_or_bands_required"})
    return column, spec.kind


def _bands(ctx: _Ctx, column: Any, spec: ViewColumn, bands: list[int]) -> Any:
    """``CASE`` labels ``0-29``, ``30-59``, ..., ``90+`` for band edges ``[30, 60, 90]``."""
    whens = []
    low = 0
    for edge in bands:
        label = f"{low}-{edge - 1}"
        if spec.kind == "age":
            # Younger than ``edge`` days: the timestamp is after now - edge days.
            cond = column > sa.literal(ctx.now - timedelta(days=edge), UtcDateTime())
        else:
            cond = column < edge
        whens.append((cond, sa.literal(label)))
        low = edge
    return sa.case(*whens, else_=sa.literal(f"{low}+"))


def _calendar_bucket(ctx: _Ctx, column: Any, bucket: str) -> Any:
    """Local calendar day / week (its Monday) / month of a timestamp, as text."""
    if ctx.postgres:
        local = sa.func.timezone(sa.literal(str(ctx.tz)), column)
        if bucket == "month":
            return sa.func.to_char(local, "YYYY-MM")
        if bucket == "week":
            return sa.func.to_char(sa.func.date_trunc("week", local), "YYYY-MM-DD")
        return sa.func.to_char(local, "YYYY-MM-DD")
    # SQLite stores UTC text and knows no time zones: shift by the zone's offset at ``now`` (exact
    # except for rows on the other side of a daylight-saving change within the queried period).
    offset = ctx.now.astimezone(ctx.tz).utcoffset() or timedelta()
    shift = sa.literal(f"{int(offset.total_seconds() // 60):+d} minutes")
    if bucket == "month":
        return sa.func.strftime("%Y-%m", column, shift)
    if bucket == "week":
        return sa.func.date(column, shift, sa.literal("weekday 0"), sa.literal("-6 days"))
    return sa.func.strftime("%Y-%m-%d", column, shift)


def _age_days(ctx: _Ctx, column: Any) -> Any:
    now = sa.literal(ctx.now, UtcDateTime())
    if ctx.postgres:
        return sa.extract("epoch", now - column) / 86400.0
    return sa.func.julianday(now) - sa.func.julianday(column)


def _aggregate(ctx: _Ctx, agg: Aggregate) -> tuple[Any, str]:
    if agg.fn == "count":
        if agg.column is not None:
            raise InvalidQuery(details={"path": "/aggregates", "rule": "count_takes_no_column"})
        return sa.func.count(), "integer"
    if agg.column is None:
        raise InvalidQuery(details={"path": "/aggregates", "rule": "column_required"})
    column, spec = _column(ctx, agg.column, "aggregates")
    if agg.fn == "count_distinct":
        return sa.func.count(sa.distinct(column)), "integer"
    if spec.kind not in _NUMERIC and not (spec.kind == "timestamp" and agg.fn in ("min", "max")):
        raise InvalidQuery(details={"path": "/aggregates", "rule": "number_required", "column": agg.column})
    expr = _age_days(ctx, column) if spec.kind == "age" else column
    func: Any = getattr(sa.func, agg.fn)  # sum | avg | min | max, checked by the Literal type
    # An average of money is money (rounded to a minor unit when it is written out), not a bare number.
    kind = "number" if (agg.fn == "avg" and spec.kind != "money") or spec.kind == "age" else spec.kind
    return func(expr), kind


def _ordering(ctx: _Ctx, outputs: list[Any]) -> list[Any]:
    # Ordering by a label of the select list renders the label's name, not the expression again.
    by_name = {o.name: o for o in outputs}
    order: list[Any] = []
    for item in ctx.query.order_by:
        if item.key not in by_name:
            raise InvalidQuery(details={"path": "/order_by", "rule": "unknown_output", "key": item.key})
        label = by_name[item.key]
        order.append(label.desc() if item.dir == "desc" else label.asc())
    return order or [outputs[0].asc()]


def window_bounds(name: str, now: datetime, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """``[start, end)`` of a named window in the local calendar of ``tz``, as UTC datetimes."""
    local = now.astimezone(tz)
    today = datetime.combine(local.date(), datetime.min.time(), tzinfo=tz)
    monday = today - timedelta(days=today.weekday())
    month = today.replace(day=1)
    next_month = (month + timedelta(days=32)).replace(day=1)
    bounds: dict[str, tuple[datetime, datetime]] = {
        "today": (today, today + timedelta(days=1)),
        "yesterday": (today - timedelta(days=1), today),
        "this_week": (monday, monday + timedelta(days=7)),
        "last_week": (monday - timedelta(days=7), monday),
        "this_month": (month, next_month),
        "last_month": ((month - timedelta(days=1)).replace(day=1), month),
        "this_year": (today.replace(month=1, day=1), today.replace(year=today.year + 1, month=1, day=1)),
        "last_7_days": (today - timedelta(days=6), today + timedelta(days=1)),
        "last_30_days": (today - timedelta(days=29), today + timedelta(days=1)),
        "last_90_days": (today - timedelta(days=89), today + timedelta(days=1)),
        "next_7_days": (today, today + timedelta(days=7)),
        "next_14_days": (today, today + timedelta(days=14)),
        "next_30_days": (today, today + timedelta(days=30)),
    }
    # Aware arithmetic with one ZoneInfo is wall-clock arithmetic, so the bounds stay local midnights
    # even across a daylight-saving change; converting to UTC applies each bound's own offset.
    start, end = bounds[name]
    return start.astimezone(UTC), end.astimezone(UTC)
