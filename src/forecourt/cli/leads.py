"""``forecourt leads show LEAD_ID`` and ``forecourt leads adf LEAD_ID``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forecourt.cli.common import ConfigOption, load_settings, run

leads_app = typer.Typer(help="Leads: delivery status and ADF.", no_args_is_help=True)
DealershipOption = typer.Option(None, "--dealership", help="Dealership id (default: search every dealership).")


@leads_app.command("show")
def show(lead_id: str, dealership: str | None = DealershipOption, config: Path | None = ConfigOption) -> None:
    """Print a lead's status and its CRM / webhook delivery status as JSON (an audited operator action)."""
    from forecourt.cli.tenants import invoke_operator

    settings = load_settings(config)
    payload = {"lead_id": lead_id, **({"dealership_id": dealership} if dealership else {})}
    typer.echo(json.dumps(run(lambda: invoke_operator(settings, "admin.leads.report", payload)), indent=2))


@leads_app.command("adf")
def adf(lead_id: str, dealership: str | None = DealershipOption, config: Path | None = ConfigOption) -> None:
    """Print the lead as ADF 1.0 XML (what the dealership's CRM receives)."""
    from forecourt.actions.lead_delivery import lead_adf
    from forecourt.store import open_store

    settings = load_settings(config)

    async def body() -> str:
        store = open_store(settings)
        try:
            return await lead_adf(store, lead_id, dealership)
        finally:
            await store.close()

    typer.echo(run(body), nl=False)
