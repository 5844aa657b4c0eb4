"""``forecourt leads show LEAD_ID`` and ``forecourt leads adf LEAD_ID``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import ConfigOption, load_settings, run

leads_app = typer.Typer(help="Leads: delivery status and ADF.", no_args_is_help=True)
DealershipOption = typer.Option(None, "--dealership", help="Dealership id (default: search every dealership).")


@leads_app.command("show")
def show(
    lead_id: str,
    dealership: str | None = DealershipOption,
    as_json: bool = typer.Option(True, "--json", hidden=True, help="JSON (the only form)."),
    config: Path | None = ConfigOption,
) -> None:
    """Print a lead's status and its CRM / webhook delivery status as JSON (an audited operator action)."""
    del as_json
    from forecourt.cli.tenants import invoke_operator

    settings = load_settings(config)
    payload = {"lead_id": lead_id, **({"dealership_id": dealership} if dealership else {})}
    typer.echo(json.dumps(run(lambda: invoke_operator(settings, "admin.leads.report", payload)), indent=2))


@leads_app.command("adf")
def adf(
    lead_id: str,
    dealership: str | None = DealershipOption,
    as_json: bool = typer.Option(False, "--json", help='Print {"lead_id": ..., "adf": ...} as JSON.'),
    config: Path | None = ConfigOption,
) -> None:
    """Print the lead as ADF 1.0 XML (what the dealership's CRM receives; an audited read of customer data)."""
    from forecourt.cli.tenants import invoke_operator

    settings = load_settings(config)

    async def body() -> Any:
        rooftop = dealership
        if rooftop is None:  # find its rooftop first, so the read is audited under the rooftop's company
            found = await invoke_operator(settings, "admin.leads.report", {"lead_id": lead_id})
            rooftop = str(found["dealership_id"])
        return await invoke_operator(settings, "admin.leads.adf", {"lead_id": lead_id, "dealership_id": rooftop})

    out = run(body)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(out["adf"], nl=False)
