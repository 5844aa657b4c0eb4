"""Pages of the console's tables: search, filters, sort and bounded paging, in SQL (never a whole table).

Each read answers one page (at most :data:`MAX_LIMIT` rows, starting at most :data:`MAX_OFFSET` rows in), whether
another page follows, and how many rows match, counted up to :data:`COUNT_CAP` ("10,000+" beyond; a search's up to
:data:`SEARCH_COUNT_CAP`). Sort keys are
a fixed list per table; a search is a case-insensitive substring of a few columns (the leads' from trigram indexes,
see :func:`_lead_search`). Like ``store/console.py``
this is store code: the console's actions call it, surfaces never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from forecourt.store.base import Store, UnitOfWork
from forecourt.store.sql.console_tables import approvals
from forecourt.store.sql.tables import api_keys, audit_records, customers, dealerships, deliveries, leads, members

MAX_LIMIT = 100
MAX_OFFSET = 10_000
COUNT_CAP = 10_000
WINDOWS_DAYS = (1, 7, 31, 366)
WINDOW_MAX_OFFSET = 1_000
SEARCH_COUNT_CAP = 1_000
"""A search's matches are counted up to here ("1,000+"): the count stops scanning once it has them."""


@dataclass(frozen=True)
class PageRequest:
    """Which page: a search, equality filters (column name → value), a sort key and direction, and where."""

    q: str | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    sort: str | None = None
    desc: bool = False
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class PageOf:
    """One page of rows (plain dicts), whether more follow, and the count of matches up to :data:`COUNT_CAP`."""

    rows: list[dict[str, Any]]
    has_next: bool
    total: int
    total_capped: bool


@dataclass(frozen=True)
class Table:
    """How one console table is read: its FROM, columns, the scope's column, searchable and sortable columns."""

    source: Any
    columns: Sequence[Any]
    scope: Any
    search: Sequence[Any]
    sorts: Mapping[str, Any]
    default_sort: str
    default_desc: bool
    tiebreak: Any
    filters: Mapping[str, Any]
    predicates: Mapping[str, Any] = field(default_factory=dict)
    """Filters that are not an equality: name → a function of the value that answers a clause."""
    search_clause: Any = None
    """``(q, dialect) -> clause`` where the search is not an OR over ``search`` columns."""
    recent: Any = None
    """A time column the scope's index ends with: the default page (newest first) is looked for in the last day,
    week, month, year before the whole table (:data:`WINDOWS_DAYS`), each window read from that index."""
    narrow: Any = None
    """A FROM of the main table alone: without a search, a page's keys are read from it (no join to sort), then
    its rows from ``source`` by key (a page of 100,000 leads sorts the leads alone, then joins 25 customers)."""


def _conn(uow: UnitOfWork) -> Any:
    conn = getattr(uow, "connection", None)
    if conn is None:
        raise TypeError("the console queries need the SQL store")
    return conn


def _like(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _contains(column: Any, pattern: str, dialect: str) -> Any:
    """Case-insensitive ``LIKE``: SQLite's ``LIKE`` already is (for ASCII; no ``lower()`` on every row), PostgreSQL
    has ``ILIKE``."""
    if dialect == "sqlite":
        return column.like(pattern, escape="\\")
    return column.ilike(pattern, escape="\\")


def _c(table: Any, *names: str) -> list[Any]:
    return [table.c[n] for n in names]


CUSTOMER_SEARCHED = ("first_name", "last_name", "email_l", "phone")
"""The customer's columns a lead search matches (with the lead's id), indexed by migration ``console_0002``."""
_CUSTOMERS_SEARCH = sa.table("customers_search", sa.column("customer_id"))
TRIGRAM = 3
"""The shortest search SQLite's trigram index answers; a shorter one reads the customers table."""


def _lead_search(q: str, dialect: str) -> Any:
    """Leads whose id, or whose customer's first or last name, e-mail or phone, holds ``q`` (any case), from
    indexes: SQLite's FTS5 trigram table ``customers_search``, PostgreSQL's ``pg_trgm`` GIN index under ``ILIKE``
    (both migration ``console_0002``), then ``leads (customer_id, id)``. The same rows on both: a substring,
    case folded (SQLite's ``LIKE`` below three characters folds ASCII letters only)."""
    pattern = _like(q)
    if dialect == "sqlite" and len(q) >= TRIGRAM:
        phrase = '"' + q.replace('"', '""') + '"'
        customers_matching: Any = sa.select(_CUSTOMERS_SEARCH.c.customer_id).where(
            sa.literal_column("customers_search").op("MATCH")("{" + " ".join(CUSTOMER_SEARCHED) + "} : " + phrase)
        )
    else:
        columns = [customers.c[name] for name in CUSTOMER_SEARCHED]
        customers_matching = sa.select(_CU.id).where(sa.or_(*(_contains(c, pattern, dialect) for c in columns)))
    by_id = leads.alias("by_id")
    # Two IN terms, each answered by an index (SQLite: "MULTI-INDEX OR"): the customers' leads through
    # ``ix_leads_customer``, and leads by id (a scan of the primary key's entries, short strings).
    return sa.or_(
        _L.customer_id.in_(customers_matching),
        _L.id.in_(sa.select(by_id.c.id).where(_contains(by_id.c.id, pattern, dialect))),
    )


_D, _M, _K, _L, _CU, _DL, _A, _AU = (
    dealerships.c,
    members.c,
    api_keys.c,
    leads.c,
    customers.c,
    deliveries.c,
    approvals.c,
    audit_records.c,
)

TABLES: dict[str, Table] = {
    "rooftops": Table(
        source=dealerships,
        columns=_c(dealerships, "id", "company_id", "name", "timezone", "domain", "public_agent"),
        scope=_D.id,
        search=(_D.id, _D.name, _D.domain),
        sorts={"id": _D.id, "name": _D.name, "public_agent": _D.public_agent},
        default_sort="id",
        default_desc=False,
        tiebreak=_D.id,
        filters={"public_agent": _D.public_agent, "id": _D.id},
    ),
    "members": Table(
        source=members,
        columns=_c(members, "id", "company_id", "name", "kind", "security_type", "is_admin", "active")
        + _c(members, "dealership_ids", "allowed_tools", "scopes"),
        scope=None,
        search=(_M.id, _M.name),
        sorts={"id": _M.id, "name": _M.name, "kind": _M.kind},
        default_sort="id",
        default_desc=False,
        tiebreak=_M.id,
        filters={"kind": _M.kind, "is_admin": _M.is_admin, "active": _M.active},
    ),
    "keys": Table(
        source=api_keys,
        columns=_c(api_keys, "prefix", "member_id", "name", "created_at", "expires_at", "revoked_at", "last_used_at"),
        scope=None,
        search=(_K.prefix, _K.member_id, _K.name),
        sorts={"created_at": _K.created_at, "member_id": _K.member_id, "prefix": _K.prefix},
        default_sort="created_at",
        default_desc=True,
        tiebreak=_K.prefix,
        filters={"member_id": _K.member_id},
        predicates={"state": lambda v: _K.revoked_at.is_(None) if v == "active" else _K.revoked_at.is_not(None)},
    ),
    "leads": Table(
        source=leads.outerjoin(customers, _CU.id == _L.customer_id),
        narrow=leads,
        recent=_L.created_at,
        columns=_c(leads, "id", "dealership_id", "status", "source", "source_agent", "vehicle_of_interest")
        + _c(leads, "message", "customer_id", "created_at")
        + [_CU.first_name, _CU.last_name, _CU.email, _CU.phone],
        scope=_L.dealership_id,
        search=(_L.id,),
        search_clause=_lead_search,
        sorts={"created_at": _L.created_at, "status": _L.status, "dealership_id": _L.dealership_id},
        default_sort="created_at",
        default_desc=True,
        tiebreak=_L.id,
        filters={"dealership_id": _L.dealership_id, "status": _L.status, "source": _L.source},
    ),
    "deliveries": Table(
        source=deliveries,
        columns=_c(deliveries, "id", "kind", "dealership_id", "target", "subject_id", "status", "attempts")
        + _c(deliveries, "next_attempt_at", "last_error", "delivered_at", "created_at"),
        scope=_DL.dealership_id,
        search=(_DL.id, _DL.subject_id, _DL.target),
        sorts={"created_at": _DL.created_at, "status": _DL.status, "attempts": _DL.attempts},
        default_sort="created_at",
        default_desc=True,
        tiebreak=_DL.id,
        filters={"dealership_id": _DL.dealership_id, "status": _DL.status, "kind": _DL.kind},
    ),
    "approvals": Table(
        source=approvals,
        columns=[c for c in approvals.c if c.name != "held"],
        scope=None,
        search=(_A.id, _A.member_id, _A.action, _A.rule),
        sorts={"requested_at": _A.requested_at, "action": _A.action, "status": _A.status},
        default_sort="requested_at",
        default_desc=True,
        tiebreak=_A.id,
        filters={"status": _A.status, "dealership_id": _A.dealership_id, "member_id": _A.member_id},
    ),
}
_COMPANY_COLUMN = {
    "rooftops": _D.company_id,
    "members": _M.company_id,
    "keys": _K.company_id,
    "approvals": _A.company_id,
}


def company_rooftops(company_id: str) -> Any:
    """The ids of a company's rooftops, as a subquery (``IN (SELECT ...)``: never a list of 1,000 ids)."""
    return sa.select(_D.id).where(_D.company_id == company_id).scalar_subquery()


def _scoped(name: str, company_id: str, granted: Sequence[str] | None, *, unindexed_scope: bool = False) -> list[Any]:
    """The rows of ``company_id`` (of its rooftops) the caller may see: ``granted`` rooftops only, when given.

    ``unindexed_scope`` (SQLite): the company's rooftops are checked on each row found, not used to find rows
    (``+column``): a search found through its own indexes is not read rooftop by rooftop instead."""
    t = TABLES[name]
    where: list[Any] = []
    company_column = _COMPANY_COLUMN.get(name)
    if company_column is not None:
        where.append(company_column == company_id)
    if t.scope is not None:
        scope = t.scope
        if unindexed_scope:
            scope = sa.literal_column(f"+{t.scope.table.name}.{t.scope.name}")
        where.append(scope.in_(company_rooftops(company_id)) if name != "rooftops" else sa.true())
        if granted is not None:
            where.append(t.scope.in_(list(granted)))
    elif name == "approvals" and granted is not None:
        # As approvals.list: a key bound to some rooftops sees the calls held at those, and those addressed to none.
        where.append(sa.or_(_A.dealership_id.in_(list(granted)), _A.dealership_id.is_(None)))
    return where


async def read_page(
    store: Store, name: str, company_id: str, granted: Sequence[str] | None, request: PageRequest
) -> PageOf:
    """A page of table ``name`` of ``company_id``; ``granted``: the rooftops the caller may see (``None``: all)."""
    t = TABLES[name]
    limit = max(1, min(MAX_LIMIT, request.limit))
    offset = max(0, min(MAX_OFFSET, request.offset))
    async with store.read() as uow:
        conn = _conn(uow)
        indexed_search = bool(request.q) and t.search_clause is not None and conn.dialect.name == "sqlite"
        where = _scoped(name, company_id, granted, unindexed_scope=indexed_search)
        for key, value in request.filters.items():
            if value is None or value == "":
                continue
            if key in t.filters:
                where.append(t.filters[key] == value)
            elif key in t.predicates:
                where.append(t.predicates[key](value))
        if request.q:
            pattern, dialect = _like(request.q), conn.dialect.name
            if t.search_clause is not None:
                where.append(t.search_clause(request.q, dialect))
            else:
                where.append(sa.or_(*(_contains(c, pattern, dialect) for c in t.search)))
        chosen = request.sort is not None and request.sort in t.sorts
        sort_key = request.sort if chosen and request.sort is not None else t.default_sort
        desc = request.desc if chosen else t.default_desc
        column = t.sorts[sort_key]
        order = [column.desc() if desc else column.asc(), t.tiebreak.desc() if desc else t.tiebreak.asc()]
        narrow_ok = not request.q or t.search_clause is not None
        source = t.narrow if t.narrow is not None and narrow_ok else t.source
        cap = SEARCH_COUNT_CAP if request.q else COUNT_CAP
        counted = sa.select(sa.literal(1)).select_from(source).where(*where).limit(cap + 1).subquery()
        total = int((await conn.execute(sa.select(sa.func.count()).select_from(counted))).scalar_one())
        if source is t.source:
            stmt = sa.select(*t.columns).select_from(source).where(*where).order_by(*order)
            rows = [dict(r) for r in (await conn.execute(stmt.offset(offset).limit(limit + 1))).mappings().all()]
        else:
            # Not for a search (each window would match the customers again) nor deep pages (windows too small).
            newest_first = t.recent is not None and sort_key == t.default_sort and desc
            newest_first = newest_first and not request.q and offset < WINDOW_MAX_OFFSET
            keys = await _keys(conn, t, source, where, order, offset, limit, windowed=newest_first)
            stmt = sa.select(*t.columns).select_from(t.source).where(t.tiebreak.in_(keys))
            by_key = {r[t.tiebreak.name]: dict(r) for r in (await conn.execute(stmt)).mappings().all()}
            rows = [by_key[k] for k in keys if k in by_key]
    return PageOf(
        rows=[{k: _plain(v) for k, v in r.items()} for r in rows[:limit]],
        has_next=len(rows) > limit and offset + limit <= MAX_OFFSET,
        total=min(total, cap),
        total_capped=total > cap,
    )


async def _keys(
    conn: Any, t: Table, source: Any, where: list[Any], order: list[Any], offset: int, limit: int, *, windowed: bool
) -> list[Any]:
    """A page's keys from the narrow source. Newest first, the last day is tried first, then wider windows: a window
    holding more rows than the page reaches answers exactly what the whole table would (every row outside it is
    older), read through the scope's ``(rooftop, time)`` index instead of sorting every row of the company."""
    stmt = sa.select(t.tiebreak).select_from(source).where(*where).order_by(*order).offset(offset).limit(limit + 1)
    if windowed:
        now = datetime.now(UTC)
        for days in WINDOWS_DAYS:
            found = list((await conn.execute(stmt.where(t.recent >= now - timedelta(days=days)))).scalars().all())
            if len(found) > limit:
                return found
    return list((await conn.execute(stmt)).scalars().all())


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


async def delivery_states(store: Store, subject_ids: Sequence[str]) -> dict[str, str]:
    """The state of the newest delivery about each of ``subject_ids`` (a page's leads)."""
    if not subject_ids:
        return {}
    stmt = sa.select(_DL.subject_id, _DL.status).where(_DL.subject_id.in_(list(subject_ids)))
    stmt = stmt.order_by(_DL.created_at.asc())
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).all()
    return {str(subject): str(status) for subject, status in rows}


async def customers_of(store: Store, pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Customers by id for ``(dealership_id, customer_id)`` pairs (a page's approvals)."""
    ids = sorted({c for _, c in pairs})
    if not ids:
        return {}
    stmt = sa.select(_CU.id, _CU.dealership_id, _CU.first_name, _CU.last_name, _CU.email).where(_CU.id.in_(ids))
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    wanted = set(pairs)
    return {str(r["id"]): dict(r) for r in rows if (r["dealership_id"], r["id"]) in wanted}


async def leads_of(store: Store, pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Leads (with their customer's name and email) by id for ``(dealership_id, lead_id)`` pairs."""
    ids = sorted({lead for _, lead in pairs})
    if not ids:
        return {}
    stmt = (
        sa.select(_L.id, _L.dealership_id, _L.status, _L.customer_id, _CU.first_name, _CU.last_name, _CU.email)
        .select_from(leads.outerjoin(customers, _CU.id == _L.customer_id))
        .where(_L.id.in_(ids))
    )
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    wanted = set(pairs)
    return {str(r["id"]): dict(r) for r in rows if (r["dealership_id"], r["id"]) in wanted}


async def audit_page(store: Store, f: Any, *, offset: int, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """A page of audit records matching ``f`` (``store.console.AuditFilter``), newest first; whether more follow."""
    from forecourt.store.base import AuditRecord
    from forecourt.store.console import _audit_where

    limit = max(1, min(MAX_LIMIT, limit))
    offset = max(0, min(MAX_OFFSET, offset))
    stmt = (
        sa.select(audit_records)
        .where(*_audit_where(f))
        .order_by(_AU.occurred_at.desc(), _AU.id)
        .offset(offset)
        .limit(limit + 1)
    )
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    records = [AuditRecord.model_validate(dict(r)).model_dump(mode="json") for r in rows[:limit]]
    return records, len(rows) > limit and offset + limit <= MAX_OFFSET


@dataclass(frozen=True, slots=True)
class CallFact:
    """What the overview reads of one audit record (no arguments: nothing to parse or validate)."""

    occurred_at: datetime
    surface: str
    action: str
    member_id: str | None
    result_class: str
    error_code: str | None
    duration_ms: float


async def call_facts(store: Store, company_id: str, since: datetime, *, limit: int = 5_000) -> list[CallFact]:
    """The newest audit records of ``company_id`` since ``since`` (at most ``limit``), as :class:`CallFact`."""
    columns = (_AU.occurred_at, _AU.surface, _AU.action, _AU.member_id, _AU.result_class, _AU.error_code)
    stmt = (
        sa.select(*columns, _AU.duration_ms)
        .where(_AU.company_id == company_id, _AU.occurred_at >= since)
        .order_by(_AU.occurred_at.desc(), _AU.id)
        .limit(limit)
    )
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).all()
    return [CallFact(*row) for row in rows]


async def delivery_counts(store: Store, company_id: str, granted: Sequence[str] | None) -> dict[str, int]:
    """Deliveries by status of the company's rooftops (``granted``: only these), counted in SQL."""
    where = [_DL.dealership_id.in_(company_rooftops(company_id))]
    if granted is not None:
        where.append(_DL.dealership_id.in_(list(granted)))
    stmt = sa.select(_DL.status, sa.func.count()).where(*where).group_by(_DL.status)
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).all()
    return {str(status): int(n) for status, n in rows}
