"""``forecourt adapters serve``: one adapter family as its own service (a remote adapter host)."""

from __future__ import annotations

from pathlib import Path

import typer

from forecourt.cli.common import ConfigOption, load_settings


def serve(
    family: str = typer.Option(..., "--family", help="models, knowledge, workflows or upstreams."),
    region: str | None = typer.Option(
        None, "--region", help="This host's region (companies pinned elsewhere never reach it)."
    ),
    host: str = typer.Option("0.0.0.0", "--host", help="Address to listen on."),  # noqa: S104 - a service in a pod
    port: int = typer.Option(8090, "--port", help="Port to listen on."),
    ssl_certfile: Path | None = typer.Option(
        None, "--ssl-certfile", help="TLS certificate (mTLS with --ssl-ca-certs)."
    ),
    ssl_keyfile: Path | None = typer.Option(None, "--ssl-keyfile", help="TLS private key."),
    ssl_ca_certs: Path | None = typer.Option(None, "--ssl-ca-certs", help="CA of the gateways' client certificates."),
    config: Path | None = ConfigOption,
) -> None:
    """Run one family's adapters as their own service; gateways list it in remote.yaml (docs/operations.md)."""
    import ssl

    import uvicorn

    from forecourt.adapters.remote import FAMILIES
    from forecourt.cli.adapter_host import create_host_app, host_secret

    if family not in FAMILIES:
        raise typer.BadParameter(f"one of {', '.join(FAMILIES)}", param_hint="--family")
    settings = load_settings(config)
    app = create_host_app(settings, family=family, region=region, secret=host_secret(settings))
    tls: dict[str, object] = {}
    if ssl_certfile is not None:
        tls = {"ssl_certfile": str(ssl_certfile), "ssl_keyfile": str(ssl_keyfile) if ssl_keyfile else None}
        if ssl_ca_certs is not None:
            tls.update(ssl_ca_certs=str(ssl_ca_certs), ssl_cert_reqs=ssl.CERT_REQUIRED)
    uvicorn.run(app, host=host, port=port, log_level="warning", **tls)  # type: ignore[arg-type]


def attach(app: typer.Typer, admin: object) -> None:
    """Add ``serve`` to the ``adapters`` command group (``admin.adapters_app`` where the admin commands define one)."""
    group = getattr(admin, "adapters_app", None)
    if not isinstance(group, typer.Typer):
        group = typer.Typer(help="Adapters: run a family of them as its own service.", no_args_is_help=True)
        app.add_typer(group, name="adapters")
    group.command("serve")(serve)
