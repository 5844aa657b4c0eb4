"""What an inventory import did: counts, and every rejected row with all of its errors."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RowError(BaseModel):
    """One problem with one cell (or with the row as a whole) of a feed.

    ``column`` is the feed's own column name (``"Internet Price"``), ``field`` the vehicle field it feeds
    (``price``); both are ``None`` for problems of the whole row (``truncated_row``). ``value_class``
    describes the value's shape (``"words (11 characters)"``, ``"negative number"``, ``"empty"``) and
    never repeats the value itself: a feed's free-text cells may hold anything, personal data included.
    """

    line: int
    code: str
    reason: str
    column: str | None = None
    field: str | None = None
    value_class: str | None = None


class RejectedRow(BaseModel):
    """A feed row that was not imported, with every error found in it.

    ``line`` is the physical line where the row starts (CSV, header is line 1) or the 1-based position
    in the JSON array. ``code``, ``field``, ``column``, ``value_class`` and ``reason`` repeat the first of
    ``errors`` (codes are stable: ``invalid_vin.check_digit``, ``missing_field``, ``bad_number``,
    ``bad_price``, ``too_long``, ``too_many``, ``bad_url``, ``duplicate_vin``, ``unknown_condition``,
    ``unknown_status``, ``truncated_row``, ``field_count``, ``malformed_row``, ``field_too_long``,
    ``not_an_object``, ``invalid_value``). ``vin`` is the vehicle's
    VIN as the feed gave it, when it has one.
    """

    line: int
    code: str
    reason: str
    field: str | None = None
    column: str | None = None
    value_class: str | None = None
    vin: str | None = None
    errors: list[RowError] = Field(default_factory=list)

    @classmethod
    def of(cls, errors: list[RowError], vin: str | None = None) -> RejectedRow:
        """The rejected row for a non-empty list of errors of one line."""
        first = errors[0]
        return cls(
            line=first.line,
            code=first.code,
            reason=first.reason,
            field=first.field,
            column=first.column,
            value_class=first.value_class,
            vin=vin,
            errors=errors,
        )

    @classmethod
    def single(cls, line: int, code: str, reason: str, *, field: str | None = None, vin: str | None = None,
               column: str | None = None, value_class: str | None = None) -> RejectedRow:  # fmt: skip
        """A row rejected for one reason."""
        error = RowError(line=line, code=code, reason=reason, field=field, column=column, value_class=value_class)
        return cls.of([error], vin=vin)


class ImportReport(BaseModel):
    """Outcome of one import; the CLI exits non-zero when ``rejected`` > 0.

    With ``dry_run`` nothing was written: the counts say what the import would have done.
    """

    dealership_id: str
    format: str
    encoding: str
    encoding_fallback: bool = False
    full: bool = False
    dry_run: bool = False
    rows: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    removed: int = 0
    seconds: float = 0.0
    rejected_rows: list[RejectedRow] = Field(default_factory=list)
    ignored_columns: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def imported(self) -> int:
        """Rows that were written or confirmed (created, updated or unchanged)."""
        return self.created + self.updated + self.unchanged

    @property
    def ok(self) -> bool:
        """Whether every row was imported."""
        return self.rejected == 0

    @property
    def errors(self) -> list[RowError]:
        """Every error of every rejected row, in line order."""
        return [e for row in self.rejected_rows for e in (row.errors or [_error_of(row)])]


def _error_of(row: RejectedRow) -> RowError:
    return RowError(line=row.line, code=row.code, reason=row.reason, column=row.column, field=row.field,
                    value_class=row.value_class)  # fmt: skip
