"""Errors of inventory feed import: a cell that cannot be parsed, and scheduled feed pulls.

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import Conflict, ForecourtError, InvalidParams, NotFound

# raised in forecourt.inventory_import.values ---


class FieldError(InvalidParams, ValueError):
    """A feed cell could not be parsed; ``code`` is the stable rejection code of the import report."""

    code = "inventory.invalid_field"

    def __init__(self, code: str, field: str, reason: str) -> None:
        self.code = code
        self.field = field
        self.reason = reason
        super().__init__(reason)


# raised in forecourt.inventory_import.schedule (scheduled inventory feeds) ---


class FeedFetchFailed(ForecourtError):
    """The feed URL did not answer with a feed (HTTP error, timeout, too large, redirect)."""

    code = "inventory.feed_fetch_failed"
    http_status = 502
    jsonrpc_code = -32000
    retryable = True
    default_message = "The inventory feed could not be fetched."


class FeedSourceNotFound(NotFound):
    code = "inventory.feed_not_found"
    default_message = "The dealership has no scheduled feed."


class FeedBusy(Conflict):
    code = "inventory.feed_busy"
    default_message = "The feed is being imported by another replica right now."
