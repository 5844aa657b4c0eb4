"""Client faults inside the A2A SDK are not server errors.

The ``a2a-sdk`` logs a malformed request (bad JSON, a boolean id, unknown method, unparsable params,
streaming asked of an agent that does not stream, an unsupported ``A2A-Version``, a refused push URL) at
WARNING or ERROR, some with a stack trace and with parts of the request in the message. Any anonymous client
could then fill an operator's alerts. This filter, installed once on the SDK's loggers, turns each record
it recognises as a client fault into a fixed INFO line without arguments or traceback (the request may
carry personal data) and counts it in ``forecourt_client_faults_total{surface="a2a", kind}`` of the app
that was serving the request. Server faults (``Unhandled exception``, internal errors) keep their level.
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import AbstractContextManager

from prometheus_client import Counter

from forecourt.scoped import scoped

# (logger name prefix, message prefix, kind); a match at WARNING or above is a client fault.
_CLIENT_FAULTS: tuple[tuple[str, str, str], ...] = (
    ("a2a.server.routes.jsonrpc_dispatcher", "Failed to validate base JSON-RPC request", "invalid_request"),
    ("a2a.server.routes.jsonrpc_dispatcher", "Failed to parse request params", "invalid_params"),
    ("a2a.server.routes.jsonrpc_dispatcher", "Unhandled method", "unknown_method"),
    ("a2a.server.request_handlers", "Validation failure:", "unsupported_operation"),
    ("a2a.utils.error_handlers", "Parse error:", "parse_error"),
    ("a2a.utils.version_validator", "Version mismatch", "unsupported_version"),
    ("a2a.utils.push_url_validator", "Push-notification URL", "push_url_refused"),
)
# Logged at WARNING for client errors and at ERROR for internal ones: only the WARNING ones are downgraded.
_WARNING_ONLY: tuple[tuple[str, str, str], ...] = (
    ("a2a.server.routes.jsonrpc_dispatcher", "Request Error (ID", "request_error"),
    ("a2a.utils.error_handlers", "Request error:", "request_error"),
)
_LOGGERS = (
    "a2a.server.routes.jsonrpc_dispatcher",
    "a2a.server.request_handlers.request_handler",
    "a2a.utils.error_handlers",
    "a2a.utils.version_validator",
    "a2a.utils.push_url_validator",
)

_counter: contextvars.ContextVar[Counter | None] = contextvars.ContextVar("forecourt_a2a_fault_counter", default=None)


def client_fault_kind(record: logging.LogRecord) -> str | None:
    """The kind of client fault ``record`` reports, or ``None`` when it is not one."""
    if record.levelno < logging.WARNING or not isinstance(record.msg, str):
        return None
    for name, prefix, kind in _CLIENT_FAULTS:
        if record.name.startswith(name) and record.msg.startswith(prefix):
            return kind
    if record.levelno == logging.WARNING:
        for name, prefix, kind in _WARNING_ONLY:
            if record.name.startswith(name) and record.msg.startswith(prefix):
                return kind
    return None


class ClientFaultFilter(logging.Filter):
    """Rewrites the SDK's client-fault records to a fixed INFO line and counts them."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = client_fault_kind(record)
        if kind is None:
            return True
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = "A2A client fault: %s", (kind,)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        counter = _counter.get()
        if counter is not None:
            counter.labels("a2a", kind).inc()
        return True


def install() -> None:
    """Attach the filter to the SDK's loggers (once per process)."""
    for name in _LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(f, ClientFaultFilter) for f in log.filters):
            log.addFilter(ClientFaultFilter())


def counting_into(counter: Counter) -> AbstractContextManager[None]:
    """Count the client faults of the request being served into ``counter``."""
    return scoped(_counter, counter)
