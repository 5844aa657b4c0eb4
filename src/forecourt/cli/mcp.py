"""``forecourt mcp --stdio``: the AutomotiveMCP server over stdin/stdout for desktop hosts (Claude Desktop, ...).

The credential comes from ``FORECOURT_MCP_TOKEN`` (an API key ``fck_...`` or a JWT). It is verified once at
start by the gateway's authenticators; every request then runs through ``Gateway.invoke`` as that principal
(its expiry is still checked on every call). Logs go to stderr: stdout carries only JSON-RPC.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import typer

from forecourt.cli.common import ConfigOption, load_settings
from forecourt.errors import ForecourtError
from forecourt.settings import Settings


async def serve_stdio(settings: Settings) -> None:
    """Build the services, authenticate the token and serve MCP on stdio until the host closes it."""
    from mcp.server.stdio import stdio_server

    from forecourt.bootstrap import build_services
    from forecourt.gateway.base import Credentials, Invocation
    from forecourt.surfaces.mcp import Caller, McpSurface

    token = settings.mcp_token.get_secret_value() if settings.mcp_token else ""
    if not token:
        raise typer.BadParameter("set FORECOURT_MCP_TOKEN to an API key or JWT", param_hint="FORECOURT_MCP_TOKEN")
    services = build_services(settings)
    await services.start()
    try:
        credentials = Credentials(bearer=token)
        principal = await services.gateway.principal_for(
            Invocation(action="", payload={}, credentials=credentials, surface="stdio")
        )
        caller = Caller(principal, credentials, "stdio")
        surface = McpSurface(services.gateway, settings, dispatcher=services.events, stdio_caller=caller)
        from forecourt.adapters.upstream.mcp_federation import install_federation

        install_federation(surface, services.upstreams)  # upstream MCP servers (adapters/upstream)
        try:
            async with stdio_server() as (read, write):
                await surface.server.run(read, write, surface.server.create_initialization_options())
        finally:
            await surface.close()
    finally:
        await services.close()


def mcp(
    config: Path | None = ConfigOption,
    stdio: bool = typer.Option(False, "--stdio", help="Serve MCP on stdin/stdout (the only transport here)."),
) -> None:
    """Serve the AutomotiveMCP server on stdio (Streamable HTTP is at /mcp of `forecourt serve`)."""
    if not stdio:
        typer.echo("Streamable HTTP is served by `forecourt serve` at /mcp; use --stdio for a desktop host.", err=True)
        raise typer.Exit(2)
    settings = load_settings(config)
    try:
        asyncio.run(serve_stdio(settings))
    except ForecourtError as exc:
        print(f"error {exc.code}: {exc.message}", file=sys.stderr, flush=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:  # pragma: no cover - a host closing us
        raise typer.Exit(0) from None
