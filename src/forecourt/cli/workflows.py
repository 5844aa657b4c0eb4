"""``forecourt workflows``: upload and list a company's BPMN definitions (admin actions, run as the operator)."""

from __future__ import annotations

from pathlib import Path

import typer

from forecourt.cli.admin import invoke_admin
from forecourt.cli.common import ConfigOption, console, load_settings, run
from forecourt.cli.output import JsonOption, print_listing, print_record

workflows_app = typer.Typer(help="BPMN workflow definitions.", no_args_is_help=True)


@workflows_app.command("create")
def workflows_upload(
    file: Path = typer.Argument(..., help="A BPMN 2.0 XML file."),
    company: str = typer.Option(..., "--company", help="Company id."),
    workflow_id: str = typer.Option(..., "--id", help="Workflow id; each upload becomes its next version."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Validate a BPMN file and store it as the next version of the company's workflow ``--id``."""
    settings = load_settings(config)
    try:
        bpmn = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        console.print(f"[red]error[/red] cannot read {file}: {exc.__class__.__name__}")
        raise typer.Exit(2) from None
    payload = {"company_id": company, "workflow_id": workflow_id, "bpmn": bpmn}
    out = run(lambda: invoke_admin(settings, "admin.workflows.upload", payload))
    print_record(out, as_json=as_json, title="workflow version created")


workflows_app.command("upload", hidden=True)(workflows_upload)


@workflows_app.command("list")
def workflows_list(
    company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """List the company's workflow definitions (latest versions) and the shipped defaults."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.workflows.list", {"company_id": company}))
    print_listing(out, as_json=as_json, title="workflows")
