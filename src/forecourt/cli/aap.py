"""``forecourt aap check URL``: check any dealer agent against AAP v0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

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
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object (same exit status)."),
) -> None:
    """Fetch and validate the card and manifest, call every skill on both bindings, print a report.

    Exit status: 0 every rule passed (with skips only under ``--allow-skips``), 1 a rule failed, 2 rules were
    skipped (a bearer agent without ``--token``, ``lead.submit`` without ``--submit-lead``).

    Example: forecourt aap check http://127.0.0.1:8000/dealers/demo-toyota-sf --json
    """
    from forecourt.adapters.aap.checker import run_check

    report = asyncio.run(run_check(url, token=token, leads=submit_lead))
    if as_json:
        typer.echo(json.dumps(as_dict(report, allow_skips=allow_skips), indent=2))
    else:
        typer.echo(report.render(allow_skips=allow_skips))
    if not report.passed:
        raise typer.Exit(1)
    raise typer.Exit(0 if report.complete(allow_skips=allow_skips) else 2)


def as_dict(report: Any, *, allow_skips: bool) -> dict[str, Any]:
    """The report as data: each rule with its verdict (``pass``, ``fail``, ``warn``, ``skip``), counts, the result."""

    def verdict(c: Any) -> str:
        return "skip" if c.skipped else "pass" if c.ok else ("warn" if c.warning else "fail")

    checked = [c for c in report.checks if not c.skipped]
    result = "fail" if not report.passed else "pass" if report.complete(allow_skips=allow_skips) else "incomplete"
    return {
        "url": report.url,
        "result": result,
        "passed": sum(1 for c in checked if c.ok),
        "checked": len(checked),
        "failed": len(report.failures),
        "skipped": len(report.skips),
        "checks": [{"rule": c.rule, "verdict": verdict(c), "detail": c.detail} for c in report.checks],
    }
