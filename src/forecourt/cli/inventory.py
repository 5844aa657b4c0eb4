"""``forecourt inventory import`` and ``forecourt inventory feed ...``: dealer inventory in, by file or by schedule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import EXIT_REFUSED, ConfigOption, console, load_settings, refuse, run
from forecourt.cli.output import JsonOption, print_json

inventory_app = typer.Typer(help="Dealer inventory.", no_args_is_help=True)


def print_report(report: Any) -> None:
    """The import report for a person: counts, then every error as a table (values never repeated)."""
    verb = "would be " if report.dry_run else ""
    typer.echo(
        f"rows {report.rows}: {verb}created {report.created}, {verb}updated {report.updated}, "
        f"unchanged {report.unchanged}, {verb}removed {report.removed}, rejected {report.rejected}"
        + (f" in {report.seconds:.1f}s" if report.seconds else "")
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    for warning in report.warnings:
        typer.echo(f"warning: {warning}")
    if report.ignored_columns:
        typer.echo("ignored columns: " + ", ".join(report.ignored_columns))
    if not report.rejected_rows:
        return
    from rich.table import Table

    table = Table(title=f"{report.rejected} rejected rows, {len(report.errors)} errors")
    for name in ("line", "column", "field", "code", "value", "reason", "vin"):
        table.add_column(name, overflow="fold")
    for row in report.rejected_rows:
        for error in row.errors:
            table.add_row(str(error.line), error.column or "", error.field or "", error.code,
                          error.value_class or "", error.reason, row.vin or "")  # fmt: skip
    from rich.console import Console

    Console(width=max(console.width, 140)).print(table)


@inventory_app.command("import")
def inventory_import(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="CSV or JSON feed."),
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    full: bool = typer.Option(False, "--full", help="Mark vehicles absent from the feed as no longer available."),
    fmt: str | None = typer.Option(None, "--format", help="csv or json (default: from the file)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and count against the store; write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Report as JSON on stdout, progress as JSON lines on stderr."),
    config: Path | None = ConfigOption,
) -> None:
    """Import a dealer inventory feed (an audited operator call); exits 1 when any row was rejected, 2 when the
    feed is unusable.

    Example: forecourt inventory import feed.csv --dealership demo-toyota-sf --dry-run
    """
    import base64

    from forecourt.cli.tenants import invoke_operator
    from forecourt.errors import ImportRejected
    from forecourt.inventory_import import ImportReport
    from forecourt.inventory_import.watch import reporting

    settings = load_settings(config)
    try:
        data = file.read_bytes()
    except OSError as exc:
        refuse(f"cannot read {file}: {exc.strerror}")
    payload: dict[str, Any] = {"dealership_id": dealership, "feed_base64": base64.b64encode(data).decode("ascii"),
                               "filename": file.name, "full": full, "dry_run": dry_run}  # fmt: skip
    if fmt:
        payload["format"] = fmt.lower()
    del data

    async def body() -> Any:
        from forecourt.cli.progress import progress_reporter

        with (
            progress_reporter(f"import {file.name}", as_json=as_json, console=console.rich()) as progress,
            reporting(progress),
        ):
            return await invoke_operator(settings, "admin.inventory.import", payload)

    report = ImportReport.model_validate(run(body, usage_errors=(ImportRejected,)))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report)
    if report.rejected:
        raise typer.Exit(EXIT_REFUSED)


feed_app = typer.Typer(help="Scheduled inventory feeds: a URL pulled on an interval, one replica at a time.")
inventory_app.add_typer(feed_app, name="feed")


def _with_store(settings: Any, fn: Any) -> Any:
    from forecourt.store import open_store

    async def body() -> Any:
        store = open_store(settings)
        try:
            return await fn(store)
        finally:
            await store.close()

    return run(body)


def _operator_call(config: Path | None, action: str, payload: dict[str, Any], *, raw: bool = False) -> Any:
    """One action as the operator through the gateway; the feed it answers as a ``FeedSource``."""
    from forecourt.cli.tenants import call
    from forecourt.domain.feeds import FeedSource

    out = call(config, action, payload)
    return out if raw else FeedSource.model_validate(out)


def _print_source(source: Any, as_json: bool) -> None:
    data = source.model_dump(mode="json", exclude={"lease_owner"})
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    report = data.pop("last_report") or {}
    for key, value in data.items():
        typer.echo(f"{key}: {value}")
    if "error" in report:
        typer.echo(f"last error: {report['error']['code']}: {report['error']['message']}")
    elif report:
        from forecourt.inventory_import import ImportReport

        print_report(ImportReport.model_validate(report))
        if report.get("rejected_rows_omitted"):
            typer.echo(f"... and {report['rejected_rows_omitted']} more rejected rows")


@feed_app.command("update")
def feed_set(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    url: str = typer.Option(..., "--url", help="HTTPS URL of the feed (CSV or JSON)."),
    interval: int = typer.Option(3600, "--interval", help="Seconds between pulls (300 to 604800)."),
    full: bool = typer.Option(False, "--full", help="The feed is the whole inventory (missing vehicles removed)."),
    disabled: bool = typer.Option(False, "--disabled", help="Keep the feed but do not pull it."),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """Pull the dealership's feed from a URL on an interval (checked against the SSRF guard now; audited)."""
    payload = {"dealership_id": dealership, "url": url, "interval_s": interval, "full": full, "enabled": not disabled}
    _print_source(_operator_call(config, "admin.inventory.feed.set", payload), as_json)


feed_app.command("set", hidden=True)(feed_set)


@feed_app.command("show")
def feed_show(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """The dealership's feed and the report of its last pull."""
    from forecourt.inventory_import.schedule import get_source

    _print_source(_with_store(load_settings(config), lambda store: get_source(store, dealership)), as_json)


@feed_app.command("list")
def feed_list(as_json: bool = typer.Option(False, "--json"), config: Path | None = ConfigOption) -> None:
    """Every scheduled feed and how its last pull went."""
    from forecourt.inventory_import.schedule import list_sources

    sources = _with_store(load_settings(config), list_sources)
    columns = ("dealership_id", "url", "interval_s", "full", "enabled", "next_run_at", "last_run_at", "last_status")
    rows = [{k: v for k, v in s.model_dump(mode="json").items() if k in columns} for s in sources]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    table = Table()
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(str(row[k]) if row[k] is not None else "" for k in row))
    from rich.console import Console

    Console(width=max(console.width, 140)).print(table)


@feed_app.command("run")
def feed_run(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = typer.Option(False, "--json"),
    config: Path | None = ConfigOption,
) -> None:
    """Pull the dealership's feed now (unless another replica is pulling it) and show the report (audited)."""
    source = _operator_call(config, "admin.inventory.feed.run", {"dealership_id": dealership})
    _print_source(source, as_json)
    if source.last_status != "ok":
        raise typer.Exit(EXIT_REFUSED)


@feed_app.command("delete")
def feed_delete(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Stop pulling the dealership's feed (audited)."""
    out = _operator_call(config, "admin.inventory.feed.remove", {"dealership_id": dealership}, raw=True)
    if as_json:
        print_json(out)
        return
    typer.echo(f"removed the scheduled feed of {dealership}")


feed_app.command("remove", hidden=True)(feed_delete)
