"""``forecourt aap check URL``: check any dealer agent against AAP v0.1."""

from __future__ import annotations

import asyncio

import typer

aap_app = typer.Typer(help="Auto Agent Protocol (AAP v0.1) tools.", no_args_is_help=True)


@aap_app.command("check")
def check(
    url: str = typer.Argument(..., help="Dealer agent base URL (its card is at URL/.well-known/agent-card.json)."),
    token: str | None = typer.Option(None, "--token", envvar="AAP_TOKEN", help="Bearer token for a private agent."),
    submit_lead: bool = typer.Option(
        False, "--submit-lead", help="Also submit a clearly marked test lead (it reaches the dealer's CRM)."
    ),
    allow_skips: bool = typer.Option(
        False, "--allow-skips", help="Exit 0 when every rule checked passed, even if some were skipped."
    ),
) -> None:
    """Fetch and validate the card and manifest, call every skill on both bindings, print a report.

    Exit status: 0 every rule passed (with skips only under ``--allow-skips``), 1 a rule failed, 2 rules were
    skipped (a bearer agent without ``--token``, ``lead.submit`` without ``--submit-lead``).
    """
    from forecourt.adapters.aap.checker import run_check

    report = asyncio.run(run_check(url, token=token, leads=submit_lead))
    typer.echo(report.render(allow_skips=allow_skips))
    if not report.passed:
        raise typer.Exit(1)
    raise typer.Exit(0 if report.complete(allow_skips=allow_skips) else 2)
