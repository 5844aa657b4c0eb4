"""``forecourt demo``, ``forecourt inventory import`` and ``forecourt audit``: data in and out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import ConfigOption, console, load_settings, run
from forecourt.settings import Settings

inventory_app = typer.Typer(help="Dealer inventory.", no_args_is_help=True)
audit_app = typer.Typer(help="Audit records.", no_args_is_help=True)


def load_demo_command(settings: Settings, *, vehicles: int, seed: int, bulk: bool, dealerships: int) -> None:
    """Load the demo tenants, or a benchmark-sized inventory."""
    from forecourt.demo import generate_bulk, load_demo
    from forecourt.demo.progress import rich_progress
    from forecourt.store import open_store

    async def body() -> str:
        store = open_store(settings)
        try:
            if bulk:
                with rich_progress("bulk inventory") as progress:
                    report = await generate_bulk(
                        store, dealerships=dealerships, vehicles_per_dealership=vehicles, seed=seed, progress=progress
                    )
                return f"{report.vehicles} vehicles across {report.dealerships} dealerships in {report.seconds:.1f}s"
            demo = await load_demo(store, vehicles_per_dealership=vehicles, seed=seed)
            return f"demo tenants loaded ({demo.changed} changes)"
        finally:
            await store.close()

    typer.echo(run(body))


@inventory_app.command("import")
def inventory_import(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="CSV or JSON feed."),
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    full: bool = typer.Option(False, "--full", help="Mark vehicles absent from the feed as no longer available."),
    fmt: str | None = typer.Option(None, "--format", help="csv or json (default: from the file)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    config: Path | None = ConfigOption,
) -> None:
    """Import a dealer inventory feed; exits non-zero when any row was rejected."""
    from forecourt.inventory_import import import_feed
    from forecourt.store import open_store

    settings = load_settings(config)

    async def body() -> Any:
        store = open_store(settings)
        try:
            return await import_feed(store, file, dealership, full=full, fmt=fmt)
        finally:
            await store.close()

    report = run(body)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        typer.echo(
            f"rows {report.rows}: created {report.created}, updated {report.updated}, "
            f"unchanged {report.unchanged}, removed {report.removed}, rejected {report.rejected}"
        )
        for row in report.rejected_rows:
            vin = f" ({row.vin})" if row.vin else ""
            typer.echo(f"  line {row.line}{vin}: {row.reason}")
    if report.rejected:
        raise typer.Exit(1)


@audit_app.command("export")
def audit_export(
    company: str = typer.Option(..., "--company", help="Company id."),
    since: str | None = typer.Option(None, "--since", help="RFC 3339 start time."),
    config: Path | None = ConfigOption,
) -> None:
    """Print the company's audit records as JSON lines, oldest first (for a SIEM)."""
    from forecourt.domain.timeutil import parse_rfc3339
    from forecourt.store import open_store

    settings = load_settings(config)
    try:
        start = parse_rfc3339(since) if since else None
    except ValueError:
        console.print("[red]error[/red] --since must be an RFC 3339 time with an offset")
        raise typer.Exit(2) from None

    async def body() -> int:
        store = open_store(settings)
        count = 0
        after: str | None = None
        try:
            while True:
                async with store.transaction() as uow:
                    batch = await uow.audit.page(company, since=start, limit=1000, after_id=after)
                for record in batch:
                    sys.stdout.write(json.dumps(record.model_dump(mode="json"), sort_keys=True) + "\n")
                count += len(batch)
                if len(batch) < 1000:
                    return count
                after = batch[-1].id
        finally:
            await store.close()

    run(body)


@audit_app.command("purge")
def audit_purge(
    company: str = typer.Option(..., "--company", help="Company id."),
    config: Path | None = ConfigOption,
) -> None:
    """Delete audit records older than the company's retention policy allows."""
    from forecourt.gateway.retention import purge_company
    from forecourt.store import open_store

    settings = load_settings(config)

    async def body() -> int:
        store = open_store(settings)
        try:
            return await purge_company(store, company)
        finally:
            await store.close()

    typer.echo(f"purged {run(body)} audit records")
