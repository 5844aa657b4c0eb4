"""``forecourt crm ...``: where a dealership's leads go (HTTP endpoint, e-mail inboxes) and a local CRM sink."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import ConfigOption
from forecourt.cli.output import JsonOption, print_json
from forecourt.cli.tenants import call

crm_app = typer.Typer(help="CRM delivery of leads (ADF over HTTP and e-mail).", no_args_is_help=True)
mail_app = typer.Typer(help="ADF leads by e-mail to a dealership's CRM lead inboxes.", no_args_is_help=True)
crm_app.add_typer(mail_app, name="mail")


@crm_app.command("sink")
def sink(
    host: str = typer.Option("127.0.0.1", help="Bind address."),
    port: int = typer.Option(8025, "--port", min=0, max=65535, help="HTTP port (POST an ADF document to any path)."),
    smtp_port: int = typer.Option(2525, "--smtp-port", min=0, max=65535, help="SMTP port (ADF as the mail body)."),
    count: int = typer.Option(0, "--count", min=0, help="Exit after this many leads (0: run until Ctrl-C)."),
) -> None:
    """Receive ADF leads over HTTP and SMTP and print each one: a local stand-in for a dealer's CRM."""
    from forecourt.delivery.sink import CrmSink, ReceivedLead, format_lead

    async def body() -> None:
        done = asyncio.Event()
        received = 0

        def on_lead(lead: ReceivedLead) -> None:
            nonlocal received
            received += 1
            typer.echo(format_lead(lead))
            if count and received >= count:
                done.set()

        receiver = CrmSink(on_lead, host=host, http_port=port, smtp_port=smtp_port)
        await receiver.start()
        typer.echo(
            f"CRM sink: HTTP http://{host}:{receiver.http_port}/adf  SMTP {host}:{receiver.smtp_port}"
            " (no TLS, any login); Ctrl-C to stop"
        )
        try:
            await done.wait()
        finally:
            await receiver.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(body())


@crm_app.command("http")
def http_endpoint(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    url: str = typer.Option(..., "--url", help="The CRM's ADF endpoint (https; http only with private targets on)."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Set the dealership's CRM endpoint: every lead is POSTed there as ADF XML (an audited operator call).

    Example: forecourt crm http --dealership demo-toyota-sf --url https://crm.example.com/adf
    """
    out = call(config, "admin.crm.endpoint.set", {"dealership_id": dealership, "url": url})
    if as_json:
        print_json(out)
        return
    typer.echo(f"leads of {dealership} are posted to {url}")


@mail_app.command("update")
def mail_set(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    to: list[str] = typer.Option(..., "--to", help="A CRM lead inbox (repeat for several)."),
    host: str = typer.Option(..., "--host", help="The mail server that accepts mail for the inboxes."),
    port: int = typer.Option(587, "--port", min=1, max=65535),
    security: str = typer.Option("starttls", "--security", help="starttls, tls (implicit, port 465) or none."),
    sender: str = typer.Option(..., "--from", help="The From address."),
    username: str | None = typer.Option(None, "--username"),
    password_env: str | None = typer.Option(None, "--password-env", help="Variable holding the password."),
    password_file: str | None = typer.Option(None, "--password-file", help="File holding the password."),
    ca_file: str | None = typer.Option(None, "--ca-file", help="CA bundle for a server with a private CA."),
    disabled: bool = typer.Option(False, "--disabled", help="Keep the route but send nothing."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """E-mail every lead of the dealership as ADF to its CRM lead inboxes (the password only by reference; an
    audited operator call)."""
    password = {"env": password_env, "file": password_file} if (password_env or password_file) else None
    values: dict[str, Any] = {
        "dealership_id": dealership, "recipients": list(to), "host": host, "port": port, "security": security,
        "sender": sender, "username": username, "password": password, "ca_file": ca_file, "enabled": not disabled,
    }  # fmt: skip
    route = call(config, "admin.crm.mail.set", values)
    if as_json:
        print_json(route)
        return
    typer.echo(f"leads of {dealership} are e-mailed as ADF to {', '.join(route['recipients'])} via {host}:{port}")


mail_app.command("set", hidden=True)(mail_set)


@mail_app.command("show")
def mail_show(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show the dealership's e-mail route (the password only as where it is read from)."""
    data = call(config, "admin.crm.mail.show", {"dealership_id": dealership})
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for key, value in data.items():
        typer.echo(f"{key}: {value}")


@mail_app.command("delete")
def mail_delete(
    dealership: str = typer.Option(..., "--dealership", help="Dealership id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Stop e-mailing the dealership's leads (deliveries already queued are still attempted; audited)."""
    out = call(config, "admin.crm.mail.remove", {"dealership_id": dealership})
    if as_json:
        print_json(out)
        return
    typer.echo(f"removed the e-mail route of {dealership}")


mail_app.command("remove", hidden=True)(mail_delete)
