"""``forecourt serve``: uvicorn with graceful shutdown and optional (m)TLS."""

from __future__ import annotations

import gc
import logging
import os
import ssl
from pathlib import Path

import uvicorn

from forecourt.settings import Settings

logger = logging.getLogger(__name__)


def app_factory() -> object:
    """Factory used by uvicorn workers: settings come from the environment (and FORECOURT_CONFIG)."""
    from forecourt.bootstrap import create_app
    from forecourt.logs import configure_logging

    config = os.environ.get("FORECOURT_CONFIG")
    settings = Settings.load(Path(config) if config else None)
    configure_logging(settings.log_level, json_output=settings.log_json)
    app = create_app(settings)
    # The objects built at start-up live for the whole process: moving them out of the collector's
    # generations keeps full collections (and the latency spikes they cause under load) short.
    gc.collect()
    gc.freeze()
    return app


_DEV_MARKER = "change-me"


def _warn_on_dev_secrets(settings: Settings) -> None:
    """Say loudly when a server reachable from other hosts runs with the development secrets."""
    loopback = settings.host in ("127.0.0.1", "localhost", "::1")
    weak = [
        name
        for name, secret in (
            ("FORECOURT_CURSOR_SECRET", settings.cursor_secret),
            ("FORECOURT_API_KEY_PEPPER", settings.api_key_pepper),
        )
        if _DEV_MARKER in secret.get_secret_value()
    ]
    if weak and not loopback:
        logger.warning("serving on %s with development secrets; set %s", settings.host, ", ".join(weak))


def serve_http(
    settings: Settings,
    config: Path | None,
    *,
    workers: int = 1,
    ssl_certfile: Path | None = None,
    ssl_keyfile: Path | None = None,
    ssl_ca_certs: Path | None = None,
) -> None:
    """Run uvicorn; SIGTERM stops accepting, drains in-flight calls and flushes audit before exit."""
    _warn_on_dev_secrets(settings)
    if config is not None:
        os.environ["FORECOURT_CONFIG"] = str(config)
    os.environ.setdefault("FORECOURT_HOST", settings.host)
    os.environ.setdefault("FORECOURT_PORT", str(settings.port))
    from forecourt.gateway.auth.tls_server import tls_protocol_class

    uvicorn.run(
        "forecourt.cli.serve:app_factory",
        http=tls_protocol_class(),
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level=settings.log_level.lower(),
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=int(settings.drain_timeout_s) + 5,
        ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
        ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
        ssl_ca_certs=str(ssl_ca_certs) if ssl_ca_certs else None,
        ssl_cert_reqs=ssl.CERT_REQUIRED if ssl_ca_certs else ssl.CERT_NONE,
    )
