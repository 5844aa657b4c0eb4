"""JSON logs with trace ids; configured once by the CLI or the app factory."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson
from opentelemetry import trace

_configured = False


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, trace and span ids."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        span_ctx = trace.get_current_span().get_span_context()
        if span_ctx.is_valid:
            entry["trace_id"] = format(span_ctx.trace_id, "032x")
            entry["span_id"] = format(span_ctx.span_id, "016x")
        fields = record.__dict__.get("fields")
        if isinstance(fields, dict):  # structured fields of a line (the access log's), None values left out
            entry.update((k, v) for k, v in fields.items() if v is not None)
        if record.exc_info and record.exc_info[0] is not None:
            # The exception type is useful to operators; the traceback stays out of structured logs
            # unless debugging, because exception messages can carry values from requests.
            entry["exc_type"] = record.exc_info[0].__name__
            if logging.getLogger().isEnabledFor(logging.DEBUG):
                entry["traceback"] = self.formatException(record.exc_info)
        # orjson: a log line per request (the access log) must cost little; str() for anything it cannot encode
        return orjson.dumps(entry, default=str).decode()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of each record.

    A plain ``StreamHandler(sys.stderr)`` keeps the stream object it was given; when something swaps
    ``sys.stderr`` (test runners, Typer's ``CliRunner``) and closes the old one, every later record fails.
    """

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        del value


def uvicorn_log_config(level: str = "INFO", *, json_output: bool = True) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn: its own lines in Forecourt's format, on stderr.

    uvicorn applies it in the supervisor and in every worker before anything is logged, so "Started server
    process", "Waiting for connections to close" and errors are JSON lines like every other. uvicorn's access
    log stays off: the ``forecourt.access`` logger writes one line per request with the path template.
    """
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"}
        if json_output
        else {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"forecourt": formatter},
        "handlers": {"stderr": {"()": f"{__name__}._StderrHandler", "formatter": "forecourt"}},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            # Levels set here, or a level uvicorn (or an embedding app) set earlier would still filter them.
            "uvicorn": {"handlers": [], "propagate": True, "level": level.upper()},
            "uvicorn.error": {"handlers": [], "propagate": True, "level": level.upper()},
            "uvicorn.access": {"handlers": [], "propagate": False},
        },
    }


def configure_logging(level: str = "INFO", *, json_output: bool = True) -> None:
    """Install the root handler once (stderr, so stdout stays free for ``forecourt mcp --stdio``)."""
    global _configured
    if _configured:
        logging.getLogger().setLevel(level.upper())
        return
    handler = _StderrHandler()
    if json_output:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "aiosqlite", "sqlalchemy.engine", "alembic.runtime.plugins"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _configured = True
