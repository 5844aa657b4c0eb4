"""Shared CLI plumbing: settings from ``--config``, a store, and a services container for one command."""

from __future__ import annotations

import asyncio
import atexit
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from forecourt.errors import ForecourtError
from forecourt.logs import configure_logging
from forecourt.settings import Settings

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")


class LazyConsole:
    """A rich ``Console``, made when something is first printed through it: a command that prints JSON and no
    error never imports rich (~60 modules)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def rich(self) -> Console:
        """The console itself (for rich's own widgets, which draw on it)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich(), name)


console: Any = LazyConsole(stderr=True, soft_wrap=True)
ConfigOption = typer.Option(None, "--config", help="TOML settings file (FORECOURT_* variables win over it).")


VERBOSE = {"on": False}
"""Set by ``forecourt --verbose``: commands print their log lines (``serve`` always does)."""


def load_settings(config: Path | None, *, command_logs: bool = False, **overrides: Any) -> Settings:
    """Settings for this command, with logs configured.

    One-shot commands print no log lines (only errors) unless ``--verbose``; ``serve`` passes
    ``command_logs=True`` and logs at the configured level.
    """
    settings = Settings.load(config, **{k: v for k, v in overrides.items() if v is not None})
    level = settings.log_level if command_logs or VERBOSE["on"] else "ERROR"
    configure_logging(level, json_output=settings.log_json)
    from forecourt.gateway.cloud_observability import use_cloud_logging

    use_cloud_logging(settings)
    return settings


EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2
"""Exit codes of every command: done; refused (the server's answer: invalid value, not found, not allowed...);
not understood (an option, an argument or an input file that cannot be used)."""


def refuse(message: str, *, code: int = EXIT_USAGE) -> NoReturn:
    """Stop the command with a one-line reason (exit code 2, a usage error, unless ``code`` says otherwise)."""
    console.print(f"error: {message}", markup=False, highlight=False)
    raise typer.Exit(code)


def within(name: str, value: int, low: int, high: int) -> int:
    """``value`` when ``low <= value <= high``; else the command stops naming the option and its range."""
    if not low <= value <= high:
        refuse(f"{name} must be between {low} and {high} (got {value})")
    return value


def run(coro_fn: Callable[[], Awaitable[T]], *, usage_errors: tuple[type[ForecourtError], ...] = ()) -> T:
    """Run an async command body; a ForecourtError (a refusal) becomes a one-line message, one line per field
    error (``path: message [rule]``), and exit code 1 (2 for ``usage_errors``: an input file that is unusable)."""
    try:
        return asyncio.run(coro_fn())  # type: ignore[arg-type]
    except ForecourtError as exc:
        console.print(f"[red]error[/red] {exc.code}: {exc.message}", markup=True, highlight=False)
        for problem in exc.details.get("errors", []) if isinstance(exc.details.get("errors"), list) else []:
            if isinstance(problem, dict) and "path" in problem:
                text = " ".join(str(problem[k]) if k != "rule" else f"[{problem[k]}]" for k in ("message", "rule")
                                if k in problem)  # fmt: skip
                console.print(f"  {problem['path']}: {text}", markup=False, highlight=False)
        raise typer.Exit(EXIT_USAGE if isinstance(exc, usage_errors) else EXIT_REFUSED) from None


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a command starts; what it built is then left out of later collections.

    Start-up (imports, the catalogue, the gateway) allocates objects that live until the command ends: the ~300
    collections it set off found next to nothing to free and took ~15 % of a one-shot command's CPU. On the way
    out those objects are frozen (no collection walks them again while the command runs) and collection resumes;
    :func:`collector_resumed` hands them back to the collector when the command is done.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def collector_resumed() -> None:
    """Give the objects frozen by :func:`collector_paused` back to the collector (a process running several
    commands, such as a test run, then frees what they left behind), and spare the process's exit a collection.

    When the interpreter exits it runs full collections over every object still alive (~0.35 s of a one-shot
    command's ~1.3 s of CPU, measured with and without them): pure waste for a process that is ending, whose
    files and connections the command has already closed. A handler run at exit freezes what is left first, so
    those collections walk nothing (the objects are still released as the modules are torn down).
    """
    gc.unfreeze()
    if not _EXIT_FREEZE["registered"]:
        _EXIT_FREEZE["registered"] = True
        atexit.register(gc.freeze)


_EXIT_FREEZE = {"registered": False}


@asynccontextmanager
async def services_for(settings: Settings) -> AsyncIterator[Any]:
    """A services container for a one-shot command: no background loop at all (not even the audit flusher: the
    command's audit records are written when it closes), nor the parts that only run in loops."""
    try:
        with collector_paused():
            from forecourt.bootstrap import build_services

            services = build_services(settings, serving=False)
        try:
            await services.audit.recover()  # records a killed command left in the journal
            yield services
        finally:
            await services.close()
    finally:
        collector_resumed()
