"""Errors of the gateway's own resources: the database.

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError

# raised in forecourt.gateway.store_faults ---


class StoreUnavailable(ForecourtError):
    """The database is unreachable; nothing was changed, retry shortly."""

    code = "store.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "The service's database is unavailable; try again shortly."
