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
