"""``events.list``: the dealership's change feed, replayable from a signed cursor.

The cursor encodes the outbox sequence number of the last event scanned (signed with the cursor codec
and bound to the dealership and ``resource_type`` filter). ``next_cursor`` is present while more events
are waiting; ``resume_cursor`` is always present so a poller can come back later for what happens next.
Events are delivered at least once: consumers must be idempotent on ``event_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    CURSOR,
    ID,
    NULLABLE_STRING,
    TIMESTAMP,
    dealer_action,
    input_schema,
    obj,
    opt_str,
    output_schema,
    require_dealership,
    result,
)
from forecourt.actions.representations import event_repr
from forecourt.contract.paging import decode_cursor, encode_cursor, page_limit, query_key
from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType
from forecourt.store.base import OutboxRepository

READ = "amcp:events:read"
SCAN_BATCH = 200
MAX_SCANS = 10

EVENT: dict[str, Any] = obj(
    {
        "event_id": ID,
        "resource_type": {"enum": [r.value for r in ResourceType]},
        "resource_id": ID,
        "change_type": {"enum": [c.value for c in ChangeType]},
        "status": NULLABLE_STRING,
        "occurred_at": TIMESTAMP,
        "dealership_id": ID,
    }
)


async def _scan(
    outbox: OutboxRepository, dealership_id: str, after: int, limit: int, resource_type: str | None
) -> tuple[list[ChangeEvent], int, bool]:
    """``(events, last seq scanned, more waiting)`` after ``after``, filtered by resource type."""
    batch_size = limit + 1 if resource_type is None else max(limit + 1, SCAN_BATCH)
    items: list[ChangeEvent] = []
    last = after
    for _ in range(MAX_SCANS):
        batch = await outbox.list_after(last, batch_size, dealership_id)
        for event in batch:
            if len(items) == limit:
                return items, last, True
            last = event.seq
            if event.dealership_id == dealership_id and resource_type in (None, event.resource_type.value):
                items.append(event)
        if len(batch) < batch_size:
            return items, last, False
    return items, last, True


async def events_list(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Change events after the cursor, oldest first."""
    dealership_id = require_dealership(ctx)
    resource_type = opt_str(payload, "resource_type")
    key = query_key(ctx.action.name, dealership_id, {"resource_type": resource_type})
    after = decode_cursor(ctx.settings, payload.get("cursor"), key, now=ctx.now)
    limit = page_limit(ctx.settings, payload.get("limit"))
    async with ctx.store.transaction() as uow:
        events, last, more = await _scan(uow.outbox, dealership_id, after, limit, resource_type)
    resume = encode_cursor(ctx.settings, last, key, now=ctx.now)
    out: dict[str, Any] = {"items": [event_repr(e) for e in events]}
    if more:
        out["next_cursor"] = resume
    out["resume_cursor"] = resume
    return result(out)


ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "events.list",
        title="List change events",
        description=(
            "Read the dealership's change feed, oldest first: each event names a resource (vehicle, lead, "
            "appointment, repair_order, customer, consent) by resource_type and resource_id, its change_type "
            "(created, updated, deleted), the new status if any, and when it happened. Omit `cursor` to replay from "
            "the beginning; pass `next_cursor` to continue while it is present, and keep `resume_cursor` to poll "
            "for newer events later. Delivery is at-least-once: de-duplicate on event_id. Fetch the resource itself "
            "(e.g. leads.get) for its current state. Use it to catch up on what changed since you last looked."
        ),
        input=input_schema({"resource_type": {"enum": [r.value for r in ResourceType]}}, paged=True),
        output=output_schema(
            obj(
                {
                    "items": {"type": "array", "items": EVENT},
                    "next_cursor": {**CURSOR, "description": "Present while more events are waiting."},
                    "resume_cursor": {**CURSOR, "description": "Where to continue later; always present."},
                },
                ["items", "resume_cursor"],
            )
        ),
        scope=READ,
        pii=False,
        tags=("events",),
        example={"resource_type": "lead", "limit": 20},
    ),
)

HANDLERS: dict[str, Handler] = {"events.list": events_list}
