"""Errors of the gateway's own resources: credentials and the database.

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError

# raised in forecourt.gateway.credentials.secret ---


class CredentialUnavailable(ForecourtError):
    """An adapter's credential could not be obtained (misconfigured, missing, or its issuer failed)."""

    code = "credentials.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    default_message = "Credentials for this adapter are not available."


# raised in forecourt.gateway.store_faults ---


class StoreUnavailable(ForecourtError):
    """The database is unreachable; nothing was changed, retry shortly."""

    code = "store.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    retryable = True
    default_message = "The service's database is unavailable; try again shortly."
