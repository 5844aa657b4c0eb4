"""Errors of the contract between actions and adapters. Every one derives from
:class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError

# raised in forecourt.contract.secrets and forecourt.gateway.credentials


class CredentialUnavailable(ForecourtError):
    """An adapter's credential could not be obtained (misconfigured, missing, or its issuer failed)."""

    code = "credentials.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    default_message = "Credentials for this adapter are not available."
