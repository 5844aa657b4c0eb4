"""Reading a decoded feed into raw records keyed by vehicle field, each with the line it came from."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from forecourt.errors import ImportRejected
from forecourt.inventory_import.columns import REQUIRED, canonical_column
from forecourt.inventory_import.report import RejectedRow

_DELIMITERS = (",", "\t", ";", "|")
_JSON_CONTAINERS = ("vehicles", "inventory", "items", "data")


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One feed row: canonical field → cell value (text for CSV, any JSON value for JSON).

    ``columns`` names the feed column each field came from (shared by the rows of a CSV feed whose
    fields each have one column), so errors can name the column the dealer knows.
    """

    line: int
    values: dict[str, Any]
    columns: Mapping[str, str] = field(default_factory=dict)

    def column(self, name: str | None) -> str | None:
        """The feed's column for a vehicle field, or ``None``."""
        return self.columns.get(name) if name else None


@dataclass
class RawFeed:
    """The records of a feed, rows rejected while reading it, and columns nobody maps."""

    records: list[RawRecord] = field(default_factory=list)
    rejected: list[RejectedRow] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)


def detect_format(text: str, filename: str | None) -> str:
    """``json`` or ``csv``, from the file name's extension, else from the first character of the text."""
    if filename:
        lower = filename.lower()
        if lower.endswith(".json"):
            return "json"
        if lower.endswith((".csv", ".tsv", ".txt")):
            return "csv"
    return "json" if text.lstrip()[:1] in ("[", "{") else "csv"


def _reject(reason: str, code: str, **details: Any) -> ImportRejected:
    return ImportRejected(reason, details={"reason": code, **details})


def _mapping(headers: list[str]) -> tuple[list[str | None], list[str]]:
    fields = [canonical_column(h) for h in headers]
    ignored = [h.strip() for h, f in zip(headers, fields, strict=True) if f is None and h.strip()]
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise _reject("the feed lacks required columns: " + ", ".join(missing), "missing_columns", missing=missing)
    return fields, ignored


def _merge(fields: list[str | None], cells: list[Any]) -> dict[str, Any]:
    """Cells by field; when several columns feed one field (Price and InternetPrice), the first non-empty wins."""
    values: dict[str, Any] = {}
    for name, cell in zip(fields, cells, strict=False):
        if name is None or cell is None or (isinstance(cell, str) and not cell.strip()):
            continue
        values.setdefault(name, cell)
    return values


def _merge_columns(fields: list[str | None], headers: list[str], cells: list[Any]) -> dict[str, str]:
    """Which column fed each field of one row (for fields that several columns may feed)."""
    columns: dict[str, str] = {}
    for name, header, cell in zip(fields, headers, cells, strict=False):
        if name is None or cell is None or (isinstance(cell, str) and not cell.strip()):
            continue
        columns.setdefault(name, header.strip())
    return columns


def _shared_columns(fields: list[str | None], headers: list[str]) -> dict[str, str]:
    columns: dict[str, str] = {}
    for name, header in zip(fields, headers, strict=True):
        if name is not None:
            columns.setdefault(name, header.strip())
    return columns


def _csv_record(line: int, row: list[str], fields: list[str | None], headers: list[str],
                shared: dict[str, str] | None) -> RawRecord:  # fmt: skip
    if shared is not None:
        # One column per field: a comprehension is several times faster than the general merge.
        values = {n: c for n, c in zip(fields, row, strict=False) if n is not None and c and not c.isspace()}
        return RawRecord(line, values, shared)
    return RawRecord(line, _merge(fields, row), _merge_columns(fields, headers, row))


def read_csv(text: str) -> RawFeed:
    """Records of a CSV (or TSV, ``;`` or ``|`` separated) feed with a header row.

    A row with fewer cells than the header is rejected (``truncated_row`` when it is the last row, as when
    the file was cut off; ``field_count`` otherwise), as is a row whose quoted field never closes
    (``malformed_row``) or with a cell longer than the CSV reader takes (``field_too_long``).
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    delimiter = max(_DELIMITERS, key=first.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    feed = RawFeed()
    try:
        headers = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise _reject("the feed is empty or has no header row", "empty_feed") from exc
    fields, feed.ignored_columns = _mapping(headers)
    rows: list[tuple[int, list[str]]] = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            feed.rejected.append(_unreadable_row(text, reader.line_num, start, exc))
            continue
        if "".join(row).strip():
            rows.append((start, row))
    named = [f for f in fields if f is not None]
    shared = _shared_columns(fields, headers) if len(named) == len(set(named)) else None
    width, last = len(headers), len(rows) - 1
    for index, (line, row) in enumerate(rows):
        if len(row) != width:
            problem = _shape_problem(row, width, last=index == last)
            if problem:
                feed.rejected.append(RejectedRow.single(line, problem, _CSV_REASONS[problem]))
                continue
        feed.records.append(_csv_record(line, row, fields, headers, shared))
    return feed


_CSV_REASONS = {
    "truncated_row": "the row is cut off (the file looks truncated)",
    "malformed_row": "the row is not valid CSV (stray quote)",
    "field_count": "the row has a different number of fields than the header",
    "field_too_long": f"a cell is longer than {csv.field_size_limit():,} characters",
}


def _unreadable_row(text: str, line_num: int, start: int, exc: csv.Error) -> RejectedRow:
    """The rejection of a row the CSV reader gave up on: a cell over its size limit, a cut-off last row, or a
    quote that never closes. The reader says which only in its message."""
    if "field larger than field limit" in str(exc):
        code = "field_too_long"
    else:
        at_end = line_num >= text.count("\n") + (0 if text.endswith("\n") else 1)
        code = "truncated_row" if at_end else "malformed_row"
    return RejectedRow.single(start, code, _CSV_REASONS[code])


def _shape_problem(row: list[str], width: int, *, last: bool) -> str | None:
    if len(row) < width:
        return "truncated_row" if last else "field_count"
    if len(row) > width and any(cell.strip() for cell in row[width:]):
        return "field_count"
    return None


def read_json(text: str) -> RawFeed:
    """Records of a JSON feed: an array of objects, or an object holding one under ``vehicles``.

    Raises:
        ImportRejected: the document is cut off or malformed (nothing is imported), or has another shape.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise _reject(
                f"the JSON document ends before it is complete (line {exc.lineno}); the file looks truncated",
                "truncated_json",
                line=exc.lineno,
            ) from exc
        raise _reject(f"the JSON document is malformed at line {exc.lineno}, column {exc.colno}", "malformed_json",
                      line=exc.lineno, column=exc.colno) from exc  # fmt: skip
    items = _json_items(document)
    feed = RawFeed()
    ignored: dict[str, None] = {}
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            feed.rejected.append(RejectedRow.single(index, "not_an_object", "the entry is not an object"))
            continue
        keys = [str(k) for k in item]
        fields = [canonical_column(k) for k in keys]
        ignored.update({k: None for k, f in zip(keys, fields, strict=True) if f is None})
        cells = list(item.values())
        feed.records.append(RawRecord(index, _merge(fields, cells), _merge_columns(fields, keys, cells)))
    feed.ignored_columns = list(ignored)
    return feed


def _json_items(document: Any) -> list[Any]:
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        for key in _JSON_CONTAINERS:
            if isinstance(document.get(key), list):
                return list(document[key])
    raise _reject('the JSON feed must be an array of vehicles or an object with a "vehicles" array', "json_shape")
