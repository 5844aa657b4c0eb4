"""The audit record a side-effect call's own transaction must carry.

The gateway sets :data:`pending_audit` while a side-effect action runs; the SQL store adds that record to
the first of the call's write transactions that commits, in the same transaction as the effect. So no effect
can commit without its audit record, whatever happens to the process a moment later (``kill -9``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from forecourt.store.base import AuditRecord


@dataclass
class PendingAudit:
    """Builds the call's record (as committed) on demand; ``written`` once a transaction committed it."""

    build: Callable[[], AuditRecord]
    written: bool = False


pending_audit: ContextVar[PendingAudit | None] = ContextVar("forecourt_pending_audit", default=None)
