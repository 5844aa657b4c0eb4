"""``forecourt demo`` and ``forecourt audit``: data in and out (inventory feeds: :mod:`forecourt.cli.inventory`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import EXIT_REFUSED, ConfigOption, console, load_settings, refuse, run
from forecourt.settings import Settings

audit_app = typer.Typer(help="Audit records.", no_args_is_help=True)


def load_demo_command(
    settings: Settings, *, vehicles: int, seed: int, bulk: bool, dealerships: int, as_json: bool = False
) -> None:
    """Load the demo tenants, or a benchmark-sized inventory."""
    from forecourt.demo import generate_bulk, load_demo
    from forecourt.demo.progress import rich_progress
    from forecourt.store import open_store

    async def body() -> tuple[str, dict[str, Any]]:
        store = open_store(settings)
        try:
            if bulk:
                with rich_progress("bulk inventory") as progress:
                    report = await generate_bulk(
                        store, dealerships=dealerships, vehicles_per_dealership=vehicles, seed=seed, progress=progress
                    )
                data = {"vehicles": report.vehicles, "dealerships": report.dealerships, "seconds": report.seconds}
                return (
                    f"{report.vehicles} vehicles across {report.dealerships} dealerships in {report.seconds:.1f}s",
                    data,
                )
            demo = await load_demo(store, vehicles_per_dealership=vehicles, seed=seed)
            url, key = await _console_key(settings, store)
            text = f"demo tenants loaded ({demo.changed} changes)\nconsole: open {url} and sign in with the key {key}"
            return text, {"changes": demo.changed, "console_url": url, "console_key": key}
        finally:
            await store.close()

    text, data = run(body)
    typer.echo(json.dumps(data, indent=2) if as_json else text)


async def _console_key(settings: Settings, store: Any) -> tuple[str, str]:
    """The console's URL and a fresh key of the demo company's administrator, to sign in with."""
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.backends.memory import MemoryRevocationList

    keys = ApiKeyService.from_settings(settings, store, MemoryRevocationList())
    issued = await keys.create("demo-motor-group", "ops-admin", name="console sign-in (forecourt demo)")
    return settings.advertised_url + settings.console_prefix.rstrip("/") + "/", issued.key


@audit_app.command("export")
def audit_export(
    company: str | None = typer.Option(None, "--company", help="Company id."),
    platform: bool = typer.Option(
        False, "--platform", help="The platform's records instead: operator calls that concerned no one company."
    ),
    since: str | None = typer.Option(None, "--since", help="RFC 3339 start time."),
    as_json: bool = typer.Option(True, "--json", hidden=True, help="JSON lines (the only form)."),
    config: Path | None = ConfigOption,
) -> None:
    """Print a company's (or the platform's) audit records as JSON lines, oldest first (for a SIEM).

    Example: forecourt audit export --company demo-motor-group --since 2026-11-01T00:00:00Z > audit.jsonl
    """
    from forecourt.domain.timeutil import parse_rfc3339
    from forecourt.store import open_store

    del as_json
    if (company is None) == (not platform):
        refuse("give either --company C or --platform")
    settings = load_settings(config)
    try:
        start = parse_rfc3339(since) if since else None
    except ValueError:
        refuse("--since must be an RFC 3339 time with an offset")

    async def body() -> int:
        store = open_store(settings)
        count = 0
        after: str | None = None
        try:
            if company is not None:
                async with store.read() as uow:
                    if await uow.tenancy.get_company(company) is None:
                        console.print(f"error: company {company} does not exist", markup=False, highlight=False)
                        raise typer.Exit(EXIT_REFUSED)
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
    as_json: bool = typer.Option(False, "--json", help='Print {"purged": N} as JSON.'),
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

    purged = run(body)
    if as_json:
        typer.echo(json.dumps({"company_id": company, "purged": purged}))
        return
    typer.echo(f"purged {purged} audit records")
