"""How commands print: a human table (rich) on a terminal, or ``--json`` for scripts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import typer

from forecourt.cli.common import LazyConsole

JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")
out: Any = LazyConsole(soft_wrap=True)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value) or "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items()) or "-"
    return str(value)


def print_json(data: Any) -> None:
    """Indented, key-sorted JSON on stdout."""
    typer.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def print_rows(
    items: Sequence[Mapping[str, Any]], columns: Sequence[str], *, as_json: bool, title: str | None = None
) -> None:
    """A listing: ``{"items": [...]}`` as JSON, else a table of ``columns``."""
    if as_json:
        print_json({"items": list(items)})
        return
    if not items:
        out.print(f"no {title or 'items'}")
        return
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column)
    for item in items:
        table.add_row(*(_cell(item.get(c)) for c in columns), end_section=False)
    out.print(table)


def print_record(record: Mapping[str, Any], *, as_json: bool, title: str | None = None) -> None:
    """One record: JSON, else a two-column field/value table."""
    if as_json:
        print_json(record)
        return
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, value in record.items():
        table.add_row(key, _cell(value))
    out.print(table)


def print_listing(
    out: Mapping[str, Any], *, as_json: bool, columns: Sequence[str] = (), title: str | None = None
) -> None:
    """An action's ``{"items": [...], ...}`` answer: all of it as JSON, else its items as a table.

    Without ``columns`` the table shows the first item's plain fields (at most seven).
    """
    if as_json:
        print_json(out)
        return
    items = [i for i in out.get("items", []) if isinstance(i, Mapping)]
    if not columns and items:
        columns = [k for k, v in items[0].items() if not isinstance(v, Mapping)][:7]
    print_rows(items, columns, as_json=False, title=title)
