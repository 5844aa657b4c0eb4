"""``forecourt upstreams``: register, list and remove a company's upstream MCP servers, and review and approve their
changed tools (run as the operator).

The operator may register stdio servers (a command this host runs) and secret locators; company admins use
the admin API (``/admin/v1/companies/{c}/upstreams``) for Streamable HTTP servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from forecourt.cli.admin import invoke_admin
from forecourt.cli.common import ConfigOption, load_settings, run
from forecourt.cli.output import JsonOption, print_listing, print_record

upstreams_app = typer.Typer(help="Upstream MCP servers federated behind the gateway.", no_args_is_help=True)


@upstreams_app.command("create")
def upstreams_add(
    upstream_id: str = typer.Argument(..., help="Id (slug) of the upstream within the company."),
    company: str = typer.Option(..., "--company", help="Company id."),
    url: str | None = typer.Option(None, "--url", help="Streamable HTTP endpoint of the upstream."),
    command: str | None = typer.Option(None, "--command", help="Start a stdio upstream with this command."),
    arg: list[str] | None = typer.Option(None, "--arg", help="An argument of --command (repeatable)."),
    namespace: str | None = typer.Option(
        None, "--namespace", help='Tool name prefix (default: the id; "" keeps the upstream\'s names).'
    ),
    secret_env: str | None = typer.Option(None, "--secret-env", help="Send this variable's value as a bearer."),
    timeout_s: float = typer.Option(30.0, "--timeout", help="Seconds a call may take."),
    mode: str = typer.Option("legacy", "--mode", help="legacy (2025-11-25 handshake) or auto."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Register (or replace) an upstream MCP server for a company."""
    settings = load_settings(config)
    definition: dict[str, Any] = {"id": upstream_id, "timeout_s": timeout_s, "mode": mode}
    if command:
        definition.update(transport="stdio", command=command, args=list(arg or []))
    else:
        definition.update(transport="http", url=url)
    if namespace is not None:
        definition["namespace"] = namespace
    if secret_env:
        definition["credentials"] = {"type": "secret", "env": secret_env, "kind": "bearer"}
    payload = {"company_id": company, "upstream": definition}
    print_record(run(lambda: invoke_admin(settings, "admin.upstreams.upsert", payload)), as_json=as_json)


upstreams_app.command("add", hidden=True)(upstreams_add)


@upstreams_app.command("list")
def upstreams_list(
    company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """List the company's upstream MCP servers."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.upstreams.list", {"company_id": company}))
    print_listing(out, as_json=as_json, title="upstream MCP servers")


@upstreams_app.command("delete")
def upstreams_remove(
    upstream_id: str = typer.Argument(...),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Remove an upstream MCP server."""
    settings = load_settings(config)
    payload = {"company_id": company, "upstream_id": upstream_id}
    print_record(run(lambda: invoke_admin(settings, "admin.upstreams.delete", payload)), as_json=as_json)


upstreams_app.command("remove", hidden=True)(upstreams_remove)


changes_app = typer.Typer(help="Changed tools of an upstream that wait for approval (docs/security.md).")
upstreams_app.add_typer(changes_app, name="changes")


@changes_app.command("list")
def changes_list(
    upstream_id: str = typer.Argument(...),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show the changed tools of an upstream that wait for approval, each with its diff."""
    settings = load_settings(config)
    payload = {"company_id": company, "upstream_id": upstream_id}
    out = run(lambda: invoke_admin(settings, "admin.upstreams.tool_changes", payload))
    print_listing(out, as_json=as_json, title="tool changes waiting for approval")


@changes_app.command("approve")
def changes_approve(
    upstream_id: str = typer.Argument(...),
    company: str = typer.Option(..., "--company"),
    tool: list[str] | None = typer.Option(None, "--tool", help="This tool's change (repeatable; default: all)."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Approve changed tools of an upstream: they are offered (again) in their new version."""
    settings = load_settings(config)
    payload: dict[str, Any] = {"company_id": company, "upstream_id": upstream_id}
    if tool:
        payload["tools"] = list(tool)
    print_record(run(lambda: invoke_admin(settings, "admin.upstreams.approve_tools", payload)), as_json=as_json)
