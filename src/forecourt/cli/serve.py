"""``forecourt serve``: uvicorn with a drain on SIGTERM, metrics that add up across workers, and optional (m)TLS."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import ssl
import sys
import tempfile
from pathlib import Path

import uvicorn

from forecourt.cli.drain import install_drain
from forecourt.errors import ForecourtError
from forecourt.settings import Settings

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def app_factory() -> object:
    """Factory used by uvicorn workers: settings come from the environment (and FORECOURT_CONFIG)."""
    from forecourt.bootstrap import create_app
    from forecourt.logs import configure_logging

    config = os.environ.get("FORECOURT_CONFIG")
    settings = Settings.load(Path(config) if config else None)
    configure_logging(settings.log_level, json_output=settings.log_json)
    from forecourt.gateway.cloud_observability import use_cloud_logging

    use_cloud_logging(settings)
    if settings.prometheus_multiproc_dir is not None:
        forget_dead_workers(settings.prometheus_multiproc_dir)
    app = create_app(settings)
    install_drain(app)
    # The objects built at start-up live for the whole process: moving them out of the collector's
    # generations keeps full collections (and the latency spikes they cause under load) short.
    gc.collect()
    gc.freeze()
    # A call allocates a few thousand short-lived objects: young collections every 20,000 allocations instead of
    # every 700 (and full ones less often) took p99 at 32 connections from ~49 to ~35 ms (docs/benchmarks.md).
    gc.set_threshold(20_000, 50, 100)
    return app


def bootstrap_operator_key(settings: Settings) -> str | None:
    """On a database without operator keys, create the bootstrap key (through the gateway, audited); else ``None``."""
    from sqlalchemy.exc import SQLAlchemyError

    from forecourt.cli.tenants import invoke_operator
    from forecourt.gateway.auth.operator import BOOTSTRAP_NAME, OperatorKeys
    from forecourt.store import open_store

    async def body() -> str | None:
        store = open_store(settings)
        try:
            if await OperatorKeys(store, settings.api_key_pepper).any():
                return None
        finally:
            await store.close()
        out = await invoke_operator(settings, "admin.operator_keys.create", {"name": BOOTSTRAP_NAME, "first": True})
        return str(out["key"]) if out.get("key") else None

    try:
        return asyncio.run(body())
    except (SQLAlchemyError, ForecourtError) as exc:  # e.g. not migrated yet: serving says so on the first request
        logger.warning("operator key bootstrap skipped: %s (run `forecourt db upgrade`)", type(exc).__name__)
        return None


BOOTSTRAP_KEY_FILE = "bootstrap-operator-key"


def bootstrap_key_path() -> Path:
    """Where the bootstrap operator key is written when standard output is not a terminal: the service's state
    directory (systemd's ``STATE_DIRECTORY``), else ``var/`` under the working directory."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    return Path(state or "var") / BOOTSTRAP_KEY_FILE


def announce_operator_key(key: str, *, terminal: bool | None = None) -> None:
    """Hand the bootstrap operator key to the person starting the server, never to a log.

    On a terminal it is printed once. Otherwise standard output is a log (systemd's journal, a container's log),
    so the key is written to a file only its owner can read (mode 600, never overwritten), and only the file's
    path is printed.
    """
    if terminal is None:
        terminal = sys.stdout.isatty()
    advice = (
        "Use it as `Authorization: Bearer` for the admin API (/admin/v1/...);\n"
        "make more with `forecourt operator create-key --name NAME`.\n\n"
    )
    if terminal:
        sys.stdout.write(
            "\nThis database had no operator key, so one was made. It is shown once; store it now:\n\n"
            f"    {key}\n\n" + advice
        )
        sys.stdout.flush()
        return
    path = bootstrap_key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        path = path.with_name(f"{BOOTSTRAP_KEY_FILE}-{os.getpid()}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key + "\n")
    sys.stdout.write(
        f"\nThis database had no operator key, so one was made and written to {path.resolve()} (mode 600):\n"
        "read it, store it, then delete the file. " + advice
    )
    sys.stdout.flush()


def prepare_multiprocess_metrics(settings: Settings, workers: int) -> Path | None:
    """With several workers, give prometheus-client an empty folder to add the workers up in.

    The operator's ``PROMETHEUS_MULTIPROC_DIR`` is used (and emptied: values left by an earlier run would be
    counted again) when set; otherwise a fresh temporary folder, removed at exit. Workers inherit the variable,
    so every one of them writes its values there and any one of them answers ``/metrics`` for all.

    Returns:
        A folder this call created (the caller removes it at exit), else ``None``.
    """
    if workers <= 1 and settings.prometheus_multiproc_dir is None:
        return None
    if settings.prometheus_multiproc_dir is not None:
        folder = settings.prometheus_multiproc_dir
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.db"):
            stale.unlink(missing_ok=True)
        os.environ[MULTIPROC_ENV] = str(folder)
        return None
    created = Path(tempfile.mkdtemp(prefix="forecourt-metrics-"))
    os.environ[MULTIPROC_ENV] = str(created)
    return created


def forget_dead_workers(folder: Path) -> None:
    """Drop the live gauges of workers that died (uvicorn restarts them; their counters stay counted)."""
    from prometheus_client import multiprocess

    for path in folder.glob("gauge_live*_*.db"):
        try:
            pid = int(path.stem.rsplit("_", 1)[1])
            os.kill(pid, 0)
        except ValueError:
            continue
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, str(folder))  # type: ignore[no-untyped-call]
        except PermissionError:
            continue


def serve_http(
    settings: Settings,
    config: Path | None,
    *,
    workers: int = 1,
    ssl_certfile: Path | None = None,
    ssl_keyfile: Path | None = None,
    ssl_ca_certs: Path | None = None,
    dev: bool = False,
) -> None:
    """Run uvicorn; SIGTERM drains (docs/operations.md, "Drain") and flushes audit before exit.

    ``dev``: ``--dev``, the one way to serve with development secrets (cli/preflight.py).
    """
    from forecourt.cli.preflight import refuse_unsafe_start
    from forecourt.logs import uvicorn_log_config

    refuse_unsafe_start(settings, dev=dev)
    if settings.prometheus_multiproc_dir is not None:
        # The bootstrap step below already counts into it; prepare_multiprocess_metrics empties it afterwards.
        settings.prometheus_multiproc_dir.mkdir(parents=True, exist_ok=True)
    if settings.bootstrap_operator_key:
        key = bootstrap_operator_key(settings)
        if key:
            announce_operator_key(key)
    if config is not None:
        os.environ["FORECOURT_CONFIG"] = str(config)
    os.environ.setdefault("FORECOURT_HOST", settings.host)
    os.environ.setdefault("FORECOURT_PORT", str(settings.port))
    created = prepare_multiprocess_metrics(settings, workers)
    if ssl_certfile is not None:  # the workers export its expiry
        os.environ["FORECOURT_TLS_CERTFILE"] = str(ssl_certfile.resolve())
    from forecourt.gateway.auth.tls_server import tls_protocol_class

    trusted = ",".join(settings.trusted_proxies)
    try:
        uvicorn.run(
            "forecourt.cli.serve:app_factory",
            http=tls_protocol_class(),
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=workers,
            log_config=uvicorn_log_config(settings.log_level, json_output=settings.log_json),
            log_level=settings.log_level.lower(),
            access_log=False,
            # X-Forwarded-For is believed only from the load balancers named in FORECOURT_TRUSTED_PROXIES.
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted or None,
            server_header=False,
            timeout_graceful_shutdown=int(settings.drain_timeout_s) + 5,
            timeout_worker_healthcheck=settings.worker_healthcheck_timeout_s,
            ssl_certfile=str(ssl_certfile) if ssl_certfile else None,
            ssl_keyfile=str(ssl_keyfile) if ssl_keyfile else None,
            ssl_ca_certs=str(ssl_ca_certs) if ssl_ca_certs else None,
            ssl_cert_reqs=ssl.CERT_REQUIRED if ssl_ca_certs else ssl.CERT_NONE,
        )
    finally:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
