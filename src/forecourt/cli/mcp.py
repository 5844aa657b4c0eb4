"""``forecourt mcp --stdio``: the AutomotiveMCP server over stdin/stdout for desktop hosts (Claude Desktop, ...).

With ``--url https://forecourt.example.com/mcp`` (the default desktop set-up) the command is a bridge to a remote
Forecourt over Streamable HTTP (:mod:`forecourt.cli.mcp_bridge`): no database, pepper or secret on the desktop.
Without ``--url`` it serves from the database itself (the server's own settings).

The credential comes from ``FORECOURT_MCP_TOKEN`` (an API key ``fck_...`` or a JWT), or from the file named by
``FORECOURT_MCP_TOKEN_FILE`` or ``--token-file``; never from argv. Served locally, it is verified once at
start by the gateway's authenticators; every request then runs through ``Gateway.invoke`` as that principal
(its expiry is still checked on every call). Logs go to stderr: stdout carries only JSON-RPC. The host's
``initialize`` is answered while the app is still being built (:mod:`forecourt.surfaces.mcp.stdio`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import SecretStr

from forecourt.cli.common import (
    EXIT_REFUSED,
    ConfigOption,
    collector_paused,
    collector_resumed,
    load_settings,
    refuse,
)
from forecourt.errors import ForecourtError
from forecourt.settings import Settings

if TYPE_CHECKING:
    from forecourt.surfaces.mcp.stdio import EarlyHandshake


async def serve_stdio(settings: Settings, early: EarlyHandshake) -> None:
    """Build the services, authenticate the token and serve MCP on stdio until the host closes it.

    ``early`` has read the host's first line (and answered it, when it was an ``initialize``) meanwhile.
    """
    # What start-up builds lives as long as the server: no collection while it is built, none of it walked after.
    with collector_paused():
        from forecourt.bootstrap import build_services
        from forecourt.gateway.base import Credentials, Invocation
        from forecourt.surfaces.mcp.caller import Caller
        from forecourt.surfaces.mcp.server import McpSurface

        services = build_services(settings)
    token = settings.mcp_token.get_secret_value() if settings.mcp_token else ""
    await services.start()
    try:
        credentials = Credentials(bearer=token)
        principal = await services.gateway.principal_for(
            Invocation(action="", payload={}, credentials=credentials, surface="stdio")
        )
        caller = Caller(principal, credentials, "stdio")
        surface = McpSurface(
            services.gateway, settings, dispatcher=services.events, stdio_caller=caller, hub=services.upstreams
        )
        try:
            await early.serve(surface.server)
        finally:
            await surface.close()
    finally:
        await services.close()
        collector_resumed()


def _require_database(settings: Settings) -> None:
    """A desktop host starts us from anywhere: never fall back to (and create) a database in its directory."""
    from sqlalchemy.engine import make_url

    if "database_url" not in settings.model_fields_set:
        refuse(
            "no database configured: set FORECOURT_DATABASE_URL (e.g. sqlite+aiosqlite:////abs/path/forecourt.db, "
            "the database `forecourt serve` uses)"
        )
    url = make_url(settings.database_url)
    local = url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:"
    if local and not Path(str(url.database)).is_file():
        refuse(f"FORECOURT_DATABASE_URL names {url.database}, which does not exist (run `forecourt db upgrade`)")


def _token(settings: Settings, token_file: Path | None) -> str:
    """The credential: ``FORECOURT_MCP_TOKEN``, else the first line of the token file; empty when neither."""
    if settings.mcp_token and settings.mcp_token.get_secret_value():
        return settings.mcp_token.get_secret_value()
    path = token_file or settings.mcp_token_file
    if path is None:
        return ""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        refuse(f"cannot read the token file {path} ({type(exc).__name__})")
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def _check_url(url: str) -> str:
    """The remote MCP URL, refused when it would send the key in clear over a network."""
    from urllib.parse import urlsplit

    from forecourt.cli.preflight import is_loopback

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        refuse("--url must be the http(s) URL of a Forecourt MCP endpoint, e.g. https://forecourt.example.com/mcp")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        refuse(f"--url {url}: refusing to send the key over plain http to another host; use https")
    return url


def _bridge(url: str, token: str) -> None:
    from forecourt.cli.mcp_bridge import run_bridge

    try:
        asyncio.run(run_bridge(url, token))
    except KeyboardInterrupt:  # pragma: no cover - a host closing us
        raise typer.Exit(0) from None


def mcp(
    config: Path | None = ConfigOption,
    stdio: bool = typer.Option(False, "--stdio", help="Serve MCP on stdin/stdout (the only transport here)."),
    url: str | None = typer.Option(
        None,
        "--url",
        help="Bridge stdio to a remote Forecourt's MCP endpoint (https://HOST/mcp): no database on this machine.",
    ),
    token_file: Path | None = typer.Option(
        None, "--token-file", help="A file holding the API key or JWT (else FORECOURT_MCP_TOKEN[_FILE])."
    ),
) -> None:
    """Serve the AutomotiveMCP server on stdio, or bridge stdio to a remote Forecourt with --url.

    Streamable HTTP itself is served by `forecourt serve` at /mcp.
    """
    if not stdio:
        typer.echo("Streamable HTTP is served by `forecourt serve` at /mcp; use --stdio for a desktop host.", err=True)
        raise typer.Exit(2)
    settings = load_settings(config)
    if url is not None:
        remote = _check_url(url)
        token = _token(settings, token_file)
        if not token:
            refuse(
                "no credential: set FORECOURT_MCP_TOKEN, or FORECOURT_MCP_TOKEN_FILE (or --token-file) to a file "
                "holding an API key (forecourt keys create) or a JWT"
            )
        _bridge(remote, token)
        return
    _require_database(settings)
    token = _token(settings, token_file)
    if token and not settings.mcp_token:
        settings = settings.model_copy(update={"mcp_token": SecretStr(token)})
    if not settings.mcp_token:
        refuse("no credential: set FORECOURT_MCP_TOKEN to an API key (forecourt keys create) or a JWT")
    from forecourt.surfaces.mcp.stdio import EarlyHandshake

    early = EarlyHandshake.start()
    try:
        asyncio.run(serve_stdio(settings, early))
    except ForecourtError as exc:
        print(f"error {exc.code}: {exc.message}", file=sys.stderr, flush=True)
        raise typer.Exit(EXIT_REFUSED) from None  # the server refused (a bad or expired credential): 1, not usage
    except KeyboardInterrupt:  # pragma: no cover - a host closing us
        raise typer.Exit(0) from None
