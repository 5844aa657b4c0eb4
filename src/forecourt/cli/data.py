"""``forecourt demo`` and ``forecourt audit``: data in and out (inventory feeds: :mod:`forecourt.cli.inventory`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import EXIT_REFUSED, ConfigOption, console, load_settings, refuse, run, services_for
from forecourt.settings import Settings

audit_app = typer.Typer(help="Audit records.", no_args_is_help=True)


def load_demo_command(
    settings: Settings, *, vehicles: int, seed: int, bulk: bool, dealerships: int, as_json: bool = False
) -> None:
    """Load the demo tenants, or a benchmark-sized inventory, as audited operator calls through the gateway."""
    from forecourt.demo.bulk import BULK_COMPANY
    from forecourt.demo.operator import reporting
    from forecourt.demo.progress import rich_progress
    from forecourt.gateway.auth.operator import operator_principal
    from forecourt.gateway.base import Invocation

    options = {"vehicles": vehicles, "seed": seed, "bulk": bulk, "dealerships": dealerships}

    async def body() -> tuple[str, dict[str, Any]]:
        async with services_for(settings) as services:

            async def invoke(action: str, payload: dict[str, Any], company: str | None) -> Any:
                invocation = Invocation(
                    action=action, payload=payload, surface="cli", principal=operator_principal(company)
                )
                return (await services.gateway.invoke(invocation)).output

            if bulk:
                with rich_progress("bulk inventory") as progress, reporting(progress):
                    data = await invoke("admin.demo.load", options, BULK_COMPANY)
                text = f"{data['vehicles']} vehicles across {data['dealerships']} dealerships in {data['seconds']:.1f}s"
                return text, data
            demo = await invoke("admin.demo.load", options, None)  # two companies: a platform record
            issued = await invoke(
                "admin.keys.create",
                {"company_id": DEMO_ADMIN[0], "member_id": DEMO_ADMIN[1], "name": "console sign-in (forecourt demo)"},
                DEMO_ADMIN[0],
            )
        url = settings.advertised_url + settings.console_prefix.rstrip("/") + "/"
        key = str(issued["key"])
        text = f"demo tenants loaded ({demo['changes']} changes)\nconsole: open {url} and sign in with the key {key}"
        return text, {"changes": demo["changes"], "console_url": url, "console_key": key}

    text, data = run(body)
    typer.echo(json.dumps(data, indent=2) if as_json else text)


DEMO_ADMIN = ("demo-motor-group", "ops-admin")
"""The demo company administrator the console key printed by ``forecourt demo`` is for."""


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
    as_json: bool = typer.Option(False, "--json", help='Print {"company_id": C, "purged": N} as JSON.'),
    config: Path | None = ConfigOption,
) -> None:
    """Delete audit records older than the company's retention policy allows (an audited operator call).

    Example: forecourt audit purge --company demo-motor-group
    """
    from forecourt.cli.tenants import call

    out = call(config, "admin.audit.purge", {"company_id": company}, company_id=company)
    if as_json:
        typer.echo(json.dumps(out))
        return
    typer.echo(f"purged {out['purged']} audit records")
