"""The audit record of one gateway call, built from what the pipeline knows about it."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forecourt import caching
from forecourt.contract import Action
from forecourt.domain.frozen import frozen
from forecourt.gateway.base import Invocation, Principal
from forecourt.gateway.redact import PII_KEYS, digest, redact_for_audit
from forecourt.gateway.validation import compiled_schema
from forecourt.store.base import AuditRecord


def new_audit_id() -> str:
    """A new record id that sorts by time: 48-bit Unix milliseconds, then 80 random bits (32 hex, as a UUIDv7).

    Each new record lands at the end of the audit table's id index instead of on a random page: a batch
    dirties a few pages, not one per record (inserts into a table of two million records cost a third as much,
    docs/benchmarks.md). Ids of one millisecond are random among themselves; the random bits come from the
    process's generator (reseeded in a forked child), not the kernel's, as a record id is no secret.
    """
    return f"{time.time_ns() // 1_000_000:012x}{random.getrandbits(80):020x}"


def call_record(
    *,
    record_id: str,
    inv: Invocation,
    action: Action | None,
    principal: Principal | None,
    member_id: str | None = None,
    company_id: str | None,
    dealership_id: str | None,
    status: int,
    error_code: str | None,
    result_class: str,
    duration_s: float,
    trace_id: str,
    processed_by: str,
    extra_redactions: Iterable[str],
    clock: Callable[[], datetime],
    payload_form: Hashable | None = None,
) -> AuditRecord:
    """One call's record: arguments digested and redacted (personal data and the company's redact fields).

    ``payload_form``: ``inv.payload`` frozen (``CallState.audit_form``), when the pipeline has it.
    """
    extra = {f.lower() for f in extra_redactions}
    redact_keys = PII_KEYS | extra if extra else PII_KEYS
    payload: dict[str, Any] = dict(inv.payload) if action else {}
    form = payload_form if payload_form is not None and action else frozen(payload)
    # Every value is the pipeline's own, of the field's type: built without validating it again.
    return AuditRecord.model_construct(
        id=record_id,
        company_id=company_id,
        dealership_id=dealership_id,
        member_id=member_id if member_id is not None else (principal.member_id if principal else None),
        action=action.name if action else inv.action[:100],
        action_type=action.type if action else "-",
        args_digest=digest(payload, form),
        args_redacted=_redacted(payload, action.input_schema if action else None, redact_keys, form),
        result_class=result_class,
        status_code=status,
        error_code=error_code,
        duration_ms=round(duration_s * 1000, 3),
        trace_id=trace_id,
        surface=inv.surface,
        processed_by=processed_by,
        occurred_at=clock(),
    )


_REDACTIONS: caching.Cache[tuple[Hashable, bytes | None, frozenset[str]], Any] = caching.lru(
    "gateway.audit.redactions", 4096
)
_NONE: Any = object()


def _redacted(
    payload: dict[str, Any], schema: Mapping[str, Any] | None, keys: frozenset[str], form: Hashable | None
) -> Any:
    """:func:`redact_for_audit`, remembered for the same payload (by its frozen ``form``), schema (by its value) and
    redacted keys.

    Records only ever read what they hold (they are written to the journal and the database as they are).
    """
    if form is None:
        return redact_for_audit(payload, schema, keys)
    key = (form, compiled_schema(schema).key if schema is not None else None, keys)
    found = _REDACTIONS.get(key, _NONE)
    if found is not _NONE:
        return found
    redacted = redact_for_audit(payload, schema, keys)
    _REDACTIONS.put(key, redacted)
    return redacted


def audit_member(principal: Principal | None) -> str | None:
    """Who the audit record names: the member, or ``operator`` for the operator (command line or operator key)."""
    if principal is None:
        return None
    if principal.member_id is None and principal.method == "internal" and principal.subject == "operator":
        return "operator"
    return principal.member_id


@dataclass
class CallState:
    """Mutable state of one invocation, for the audit record."""

    inv: Invocation
    trace_id: str
    started: float
    recording: bool = True
    model: str = "-"
    action: Action | None = None
    principal: Principal | None = None
    dealership_id: str | None = None
    company_id: str | None = None
    status: int = 200
    error_code: str | None = None
    result_class: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)
    served_by: dict[str, Any] | None = None
    """A model call's answering runtime and model, after any fallback (``runtime``, ``model``, ``fallback_from``:
    the runtimes that failed first); the audit record keeps it as ``args_redacted._served_by``."""
    audit_id: str = field(default_factory=new_audit_id)
    form: Hashable | None = None
    """The payload the adapter gets, frozen once (``domain/frozen.py``): the key of the call's validation and
    digest memos (``None``: not frozen yet, or not plain JSON)."""
    audit_form: Hashable | None = None
    """``inv.payload`` frozen: the key of the audit record's memos. The same form when the adapter's payload is the
    call as sent; frozen apart when the pipeline lifted lone strings into lists (the audit keeps the call as sent)."""

    def freeze(self, payload: dict[str, Any]) -> None:
        """Freeze the call's payload once, with ``inv`` the call as addressed (see :attr:`form`)."""
        self.form = frozen(payload)
        self.audit_form = self.form if payload == self.inv.payload else frozen(self.inv.payload)
