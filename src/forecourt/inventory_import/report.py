"""What an inventory import did: counts, and every rejected row with its line and reason."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RejectedRow(BaseModel):
    """A feed row that was not imported.

    ``line`` is the physical line where the row starts (CSV, header is line 1) or the 1-based position
    in the JSON array. ``code`` is stable (``invalid_vin.check_digit``, ``missing_field``,
    ``bad_number``, ``bad_price``, ``duplicate_vin``, ``unknown_condition``, ``unknown_status``,
    ``truncated_row``, ``field_count``, ``malformed_row``, ``not_an_object``, ``invalid_value``);
    ``reason`` says the same for a person.
    """

    line: int
    code: str
    reason: str
    field: str | None = None
    vin: str | None = None


class ImportReport(BaseModel):
    """Outcome of one import; the CLI exits non-zero when ``rejected`` > 0."""

    dealership_id: str
    format: str
    encoding: str
    encoding_fallback: bool = False
    full: bool = False
    rows: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    removed: int = 0
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
