"""``forecourt``: a thin CLI; each command builds settings, calls bootstrap, and delegates."""

# ruff: noqa: E402 - the collector is paused before the CLI's modules are imported: see _collection_paused
from __future__ import annotations

import gc

_collection_paused = gc.isenabled()
"""No cyclic garbage collection while the CLI's modules load: the objects the imports make live until the process
ends, and the ~100 collections they set off (~30 ms of a one-shot command's CPU) found next to nothing to free.
Resumed at the end of this module, with what was built put straight into the oldest generation."""
gc.disable()

import copy
import os
import sys
from pathlib import Path
from typing import Any

import typer
import typer.main

from forecourt.cli import aap, admin, data, leads, tenants
from forecourt.cli import adapters as adapters_cli
from forecourt.cli import crm as crm_cli
from forecourt.cli import inventory as inventory_cli
from forecourt.cli import mcp as mcp_cli
from forecourt.cli import workflows as workflows_cli
from forecourt.cli.common import VERBOSE, ConfigOption, load_settings, within
from forecourt.cli.knowledge import knowledge_app, queries_app
from forecourt.cli.tools import tools_app
from forecourt.cli.upstreams import upstreams_app


class ForecourtApp(typer.Typer):
    """The ``forecourt`` command: run from a shell, it builds the command group it is asked for, not all of them.

    Typer turns every command's signature into a click command before it parses anything: for all ~80 commands
    that took ~60-80 ms of every one-shot command's CPU. ``forecourt keys list ...`` builds the ``keys`` group
    alone, with the same top-level options and callback, so what it parses, prints and refuses is unchanged.
    The whole tree is built for anything else (``--help``, no command, an unknown one, shell completion), and by
    typer's test runner, which builds its own (``typer.main.get_command``).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args", args[0] if args else None)
        only = self.only(sys.argv[1:] if argv is None else list(argv))
        return typer.Typer.__call__(only or self, *args, **kwargs)

    def only(self, argv: list[str]) -> typer.Typer | None:
        """This app with only the top-level command or group ``argv`` names, or None to build them all."""
        if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):  # shell completion
            return None
        position = 0
        while position < len(argv) and argv[position] in _TOP_LEVEL_FLAGS:
            position += 1
        if position == len(argv) or argv[position].startswith("-"):
            return None
        name = argv[position]
        groups = [g for g in self.registered_groups if typer.main.solve_typer_info_defaults(g).name == name]
        commands = [c for c in self.registered_commands if _command_name(c) == name]
        if len(groups) + len(commands) != 1:
            return None
        trimmed = copy.copy(self)
        trimmed.registered_groups = groups
        trimmed.registered_commands = commands
        return trimmed


_TOP_LEVEL_FLAGS = frozenset({"-v", "--verbose"})
"""Options of ``forecourt`` itself that may come before the command (the others print something and exit)."""


def _command_name(command: Any) -> str:
    return str(command.name or typer.main.get_command_name(command.callback.__name__))


app = ForecourtApp(name="forecourt", help="Car dealerships on the agent web.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(inventory_cli.inventory_app, name="inventory")
app.add_typer(crm_cli.crm_app, name="crm")
app.add_typer(data.audit_app, name="audit")
app.add_typer(admin.keys_app, name="keys")
app.add_typer(admin.admin_app, name="admin")
app.add_typer(admin.policies_app, name="policies")
app.add_typer(admin.adapters_app, name="adapters")
adapters_cli.attach(app, admin)
app.add_typer(aap.aap_app, name="aap")
app.add_typer(leads.leads_app, name="leads")
app.add_typer(workflows_cli.workflows_app, name="workflows")
app.add_typer(knowledge_app, name="knowledge")
app.add_typer(queries_app, name="queries")
app.add_typer(upstreams_app, name="upstreams")
app.add_typer(tools_app, name="tools")
app.command(name="mcp")(mcp_cli.mcp)
app.add_typer(tenants.companies_app, name="companies")
app.add_typer(tenants.dealerships_app, name="dealerships")
app.add_typer(tenants.members_app, name="members")
app.add_typer(tenants.operator_app, name="operator")
app.command(name="apply")(tenants.apply)
app.command(name="export-tenants")(tenants.export_tenants)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"forecourt {version('forecourt')}")
        raise typer.Exit()


@app.callback()
def main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print log lines (one-shot commands are quiet)."),
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Car dealerships on the agent web."""
    del show_version
    VERBOSE["on"] = verbose


@app.command()
def serve(
    config: Path | None = ConfigOption,
    host: str | None = typer.Option(None, help="Bind address (default from settings)."),
    port: int | None = typer.Option(None, help="Port (default from settings)."),
    workers: int = typer.Option(1, help="Worker processes."),
    ssl_certfile: Path | None = typer.Option(None, help="TLS certificate (PEM)."),
    ssl_keyfile: Path | None = typer.Option(None, help="TLS private key (PEM)."),
    ssl_ca_certs: Path | None = typer.Option(None, help="CA bundle: when given, clients must present a certificate."),
    dev: bool = typer.Option(
        False, "--dev", help="Development mode: allow the published development secrets (loopback bind only)."
    ),
) -> None:
    """Serve the HTTP front doors (REST envelope, MCP, A2A/AAP, admin, health).

    Example: forecourt serve --dev (loopback, development secrets) or forecourt serve --host 0.0.0.0 --workers 4
    """
    if port is not None:
        within("--port", port, 1, 65535)
    within("--workers", workers, 1, 256)
    from forecourt.cli.serve import serve_http

    settings = load_settings(config, command_logs=True, host=host, port=port)
    serve_http(
        settings,
        config,
        workers=workers,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        ssl_ca_certs=ssl_ca_certs,
        dev=dev,
    )


@db_app.command("upgrade")
def db_upgrade(config: Path | None = ConfigOption) -> None:
    """Create or migrate the database schema to the latest version.

    The one command that does not go through the gateway (nor leave an audit record): it creates the schema the
    gateway needs, the audit table among it, so it runs before the gateway can. It writes no data.

    Example: forecourt db upgrade (once, before any replica of a new version starts)
    """
    from forecourt.store import upgrade

    settings = load_settings(config)
    upgrade(settings.database_url)
    typer.echo("database is up to date")


@app.command()
def demo(
    config: Path | None = ConfigOption,
    vehicles: int = typer.Option(60, help="Vehicles per demo dealership."),
    seed: int = typer.Option(7, help="Random seed (same seed, same data)."),
    bulk: bool = typer.Option(False, help="Generate a benchmark-sized data set instead."),
    dealerships: int = typer.Option(1000, help="With --bulk: number of dealerships."),
    as_json: bool = typer.Option(False, "--json", help="Print what was loaded (and the console key) as JSON."),
) -> None:
    """Load the demo tenants (idempotent), or with --bulk a benchmark-sized inventory.

    Example: forecourt demo (then sign in to the console with the key it prints)
    """
    within("--vehicles", vehicles, 0 if not bulk else 1, 1_000_000)
    within("--seed", seed, 0, 2**31 - 1)
    within("--dealerships", dealerships, 1, 100_000)
    data.load_demo_command(
        load_settings(config), vehicles=vehicles, seed=seed, bulk=bulk, dealerships=dealerships, as_json=as_json
    )


if _collection_paused:
    if gc.get_freeze_count() == 0:  # (else another part froze objects: leave that to it)
        gc.freeze()  # what the imports built moves to the oldest generation, unexamined: the first collection
        gc.unfreeze()  # after the pause would otherwise walk all of it
    gc.enable()

if __name__ == "__main__":  # pragma: no cover
    app()
