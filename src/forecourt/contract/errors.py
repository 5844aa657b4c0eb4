"""Errors of the contract between actions and adapters. Every one derives from
:class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError, InvalidParams

# raised in forecourt.contract.secrets and forecourt.gateway.credentials


class CredentialUnavailable(ForecourtError):
    """An adapter's credential could not be obtained (misconfigured, missing, or its issuer failed)."""

    code = "credentials.unavailable"
    http_status = 503
    jsonrpc_code = -32000
    default_message = "Credentials for this adapter are not available."


# raised in forecourt.gateway.host_calls (nested calls of remote adapter hosts)


class NestingTooDeep(InvalidParams):
    """A call nested through adapter hosts past ``contract.grants.MAX_DEPTH`` hops."""

    code = "adapters.nesting_too_deep"
    default_message = "This call nests too many calls through adapter hosts."
