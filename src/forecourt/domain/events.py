"""Change events written to the outbox in the same transaction as the change."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from forecourt.domain.timeutil import AwareDatetime


class ChangeType(StrEnum):
    """AutomotiveMCP Level 3 change types."""

    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


def change_of(*, was_listed: bool, is_listed: bool) -> ChangeType:
    """The change a consumer sees when a stored resource changes (seed 002 §3.6: created, updated, deleted).

    A resource that leaves its collection while its record is kept (a vehicle marked ``removed``) is
    ``deleted`` for a consumer; one that comes back is ``created`` again; anything else is ``updated``.
    """
    if was_listed and not is_listed:
        return ChangeType.DELETED
    if is_listed and not was_listed:
        return ChangeType.CREATED
    return ChangeType.UPDATED


class ResourceType(StrEnum):
    """Resource types that produce events (singular snake_case nouns)."""

    VEHICLE = "vehicle"
    LEAD = "lead"
    APPOINTMENT = "appointment"
    REPAIR_ORDER = "repair_order"
    CUSTOMER = "customer"
    CONSENT = "consent"


class ChangeEvent(BaseModel):
    """One change to one resource; ``seq`` orders events for replay (``events.list`` cursors)."""

    model_config = ConfigDict(frozen=True)

    id: str
    seq: int = 0
    dealership_id: str
    resource_type: ResourceType
    resource_id: str
    change_type: ChangeType
    status: str | None = None
    occurred_at: AwareDatetime
    payload: dict[str, Any] = Field(default_factory=dict)
