"""Named query definitions: a small, closed reporting language (never SQL).

An admin defines a query per company as a JSON object::

    {
      "id": "leads_by_source_this_week",
      "description": "New leads per source since Monday",
      "base": "leads",
      "time_window": {"column": "created_at", "window": "this_week"},
      "group_by": [{"column": "source"}],
      "aggregates": [{"fn": "count", "as": "leads"}],
      "order_by": [{"key": "leads", "dir": "desc"}]
    }

``base`` is one of four fixed views (:data:`VIEWS`), every column is a name from that view's
whitelist, values are literals or ``{"param": "name"}`` references to typed parameters the caller
supplies, and the store's compiler (``forecourt.store.sql.query_compiler``) always adds the caller's
dealership as a condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forecourt.domain.errors import InvalidQuery

ColumnKind = Literal["string", "integer", "money", "timestamp", "age"]
ParamType = Literal["string", "integer", "number", "boolean", "date", "datetime", "window"]
FilterOp = Literal["eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "is_null", "not_null", "contains"]
AggregateFn = Literal["count", "count_distinct", "sum", "avg", "min", "max"]
Bucket = Literal["day", "week", "month"]
ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
MAX_LIMIT = 1000

WINDOWS = (
    "today",
    "yesterday",
    "this_week",
    "last_week",
    "this_month",
    "last_month",
    "this_year",
    "last_7_days",
    "last_30_days",
    "last_90_days",
    "next_7_days",
    "next_14_days",
    "next_30_days",
)


@dataclass(frozen=True)
class ViewColumn:
    """A column a named query may use: the table column behind it and how it behaves."""

    source: str
    kind: ColumnKind


# The views: base table name -> public column name -> column. Only these names can appear in a query.
# Customer names, e-mails, phones and free-text messages are deliberately absent.
VIEWS: dict[str, dict[str, ViewColumn]] = {
    "leads": {
        "status": ViewColumn("status", "string"),
        "source": ViewColumn("source", "string"),
        "source_agent": ViewColumn("source_agent", "string"),
        "assigned_to": ViewColumn("assigned_to", "string"),
        "vehicle_id": ViewColumn("vehicle_id", "string"),
        "submitted_at": ViewColumn("submitted_at", "timestamp"),
        "created_at": ViewColumn("created_at", "timestamp"),
        "updated_at": ViewColumn("updated_at", "timestamp"),
        "age_days": ViewColumn("created_at", "age"),
    },
    "vehicles": {
        "stock": ViewColumn("stock", "string"),
        "vin": ViewColumn("vin", "string"),
        "year": ViewColumn("year", "integer"),
        "make": ViewColumn("make", "string"),
        "model": ViewColumn("model", "string"),
        "trim": ViewColumn("trim", "string"),
        "condition": ViewColumn("condition", "string"),
        "body": ViewColumn("body", "string"),
        "fuel": ViewColumn("fuel", "string"),
        "driveline": ViewColumn("driveline", "string"),
        "transmission": ViewColumn("transmission", "string"),
        "exterior_color": ViewColumn("exterior_color", "string"),
        "status": ViewColumn("status", "string"),
        "price_minor": ViewColumn("price_minor", "money"),
        "msrp_minor": ViewColumn("msrp_minor", "money"),
        "mileage": ViewColumn("mileage_value", "integer"),
        "created_at": ViewColumn("created_at", "timestamp"),
        "sold_at": ViewColumn("sold_at", "timestamp"),
        "days_in_stock": ViewColumn("created_at", "age"),
    },
    "repair_orders": {
        "ro_number": ViewColumn("ro_number", "string"),
        "status": ViewColumn("status", "string"),
        "advisor_id": ViewColumn("advisor_id", "string"),
        "total_minor": ViewColumn("total_minor", "money"),
        "mileage_in": ViewColumn("mileage_in_value", "integer"),
        "opened_at": ViewColumn("opened_at", "timestamp"),
        "promised_at": ViewColumn("promised_at", "timestamp"),
        "closed_at": ViewColumn("closed_at", "timestamp"),
        "days_open": ViewColumn("opened_at", "age"),
    },
    "appointments": {
        "kind": ViewColumn("kind", "string"),
        "status": ViewColumn("status", "string"),
        "advisor_id": ViewColumn("advisor_id", "string"),
        "starts_at": ViewColumn("starts_at", "timestamp"),
        "ends_at": ViewColumn("ends_at", "timestamp"),
        "created_at": ViewColumn("created_at", "timestamp"),
    },
}

_NAME = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ParamRef(_Strict):
    """A reference to a caller-supplied parameter: ``{"param": "source"}``."""

    param: str = _NAME


Scalar = str | int | float | bool
Value = ParamRef | Scalar | list[Scalar] | None


class ParamSpec(_Strict):
    """A parameter the caller may (or must) supply."""

    type: ParamType
    required: bool = False
    default: Scalar | None = None
    enum: list[Scalar] | None = Field(default=None, max_length=100)
    description: str = Field(default="", max_length=500)


class Filter(_Strict):
    """``column <op> value``."""

    column: str = _NAME
    op: FilterOp
    value: Value = None


class TimeWindow(_Strict):
    """Rows whose timestamp column falls in a named window of the dealership's local calendar."""

    column: str = _NAME
    window: str | ParamRef


class GroupBy(_Strict):
    """A grouping key: a column, a timestamp bucketed by day/week/month, or a number cut into bands."""

    column: str = _NAME
    bucket: Bucket | None = None
    bands: list[int] | None = Field(default=None, min_length=1, max_length=20)
    as_: str | None = Field(default=None, alias="as", min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")

    @property
    def name(self) -> str:
        """The output column name."""
        return self.as_ or (f"{self.column}_{self.bucket}" if self.bucket else self.column)


class Aggregate(_Strict):
    """An aggregate output column."""

    fn: AggregateFn
    column: str | None = Field(default=None, min_length=1, max_length=64)
    as_: str = Field(alias="as", min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")


class OrderBy(_Strict):
    """Sort by an output column."""

    key: str = _NAME
    dir: Literal["asc", "desc"] = "asc"


class NamedQuery(_Strict):
    """One named, parameterised, read-only query."""

    id: str = Field(pattern=ID_PATTERN)
    description: str = Field(default="", max_length=1000)
    base: Literal["leads", "vehicles", "repair_orders", "appointments"]
    params: dict[str, ParamSpec] = Field(default_factory=dict, max_length=20)
    filters: list[Filter] = Field(default_factory=list, max_length=20)
    time_window: TimeWindow | None = None
    select: list[str] = Field(default_factory=list, max_length=30)
    group_by: list[GroupBy] = Field(default_factory=list, max_length=4)
    aggregates: list[Aggregate] = Field(default_factory=list, max_length=10)
    order_by: list[OrderBy] = Field(default_factory=list, max_length=5)
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT)

    def view(self) -> dict[str, ViewColumn]:
        """The columns of the base view."""
        return VIEWS[self.base]


def parse_definition(data: Any) -> NamedQuery:
    """Validate a definition's shape (the compiler checks the rest: columns, operators, types).

    Raises:
        InvalidQuery: With up to five ``{path, rule}`` problems.
    """
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InvalidQuery("A named query must be a JSON object.")
    try:
        return NamedQuery.model_validate(data)
    except ValidationError as exc:
        problems = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:5]]
        raise InvalidQuery(details={"errors": problems}) from None


@dataclass
class QueryRows:
    """What running a named query answered: output columns, rows (at most ``limit + 1``), resolved parameters."""

    columns: list[dict[str, str]]
    rows: list[dict[str, Any]]
    params: dict[str, Any]
    window: dict[str, str] | None
    limit: int
    kinds: dict[str, str]
