"""Shared CLI plumbing: settings from ``--config``, a store, and a services container for one command."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from forecourt.errors import ForecourtError
from forecourt.logs import configure_logging
from forecourt.settings import Settings

T = TypeVar("T")
console = Console(stderr=True)
ConfigOption = typer.Option(None, "--config", help="TOML settings file (FORECOURT_* variables win over it).")


def load_settings(config: Path | None, **overrides: Any) -> Settings:
    """Settings for this command, with logs configured."""
    settings = Settings.load(config, **{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_level, json_output=settings.log_json)
    return settings


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; a ForecourtError becomes a one-line message and exit code 2."""
    try:
        return asyncio.run(coro_fn())  # type: ignore[arg-type]
    except ForecourtError as exc:
        console.print(f"[red]error[/red] {exc.code}: {exc.message}")
        raise typer.Exit(2) from None


@asynccontextmanager
async def services_for(settings: Settings) -> AsyncIterator[Any]:
    """A services container for a one-shot command (audit flushed on exit)."""
    from forecourt.bootstrap import build_services

    services = build_services(settings)
    await services.start()
    try:
        yield services
    finally:
        await services.close()
