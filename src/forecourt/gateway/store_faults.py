"""What "the database is unavailable" looks like to a caller: a retryable 503, never a 500.

While PostgreSQL restarts (or a network path to it drops), a call that needs the database fails with
a driver or pool error. The gateway maps exactly those errors to :class:`StoreUnavailable` so that
clients back off and retry; the change they asked for was not made (the unit of work rolled back,
and its outbox event with it, because both are written in one transaction).
"""

from __future__ import annotations

from sqlalchemy.exc import DisconnectionError, InterfaceError, OperationalError

STORE_UNAVAILABLE: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    DisconnectionError,
    ConnectionError,
)
"""Driver and pool errors that mean the database cannot be reached right now (not that the query was wrong)."""
