"""Where a dealership's data comes from and goes to on a schedule: inventory feed URLs and CRM lead inboxes."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class FeedSource(BaseModel):
    """A dealership's inventory feed URL, pulled every ``interval_s`` seconds by one replica at a time."""

    model_config = ConfigDict(frozen=True)

    dealership_id: str
    url: str
    interval_s: int = Field(ge=300, le=7 * 86_400)
    full: bool = False
    enabled: bool = True
    next_run_at: AwareDatetime
    lease_owner: str | None = None
    lease_until: AwareDatetime | None = None
    last_run_at: AwareDatetime | None = None
    last_status: str | None = None
    last_report: dict[str, Any] | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime


class SmtpSecurity(StrEnum):
    """How the connection to a CRM's mail server is protected."""

    STARTTLS = "starttls"
    TLS = "tls"
    NONE = "none"


class SecretRef(BaseModel):
    """Where a secret is, never the secret: an environment variable or a file (as adapter credentials)."""

    model_config = ConfigDict(frozen=True)

    env: str | None = None
    file: str | None = None


class CrmMailRoute(BaseModel):
    """ADF leads by e-mail to a dealership's CRM lead inboxes (what most dealer CRMs ingest)."""

    model_config = ConfigDict(frozen=True)

    dealership_id: str
    recipients: tuple[str, ...] = Field(min_length=1, max_length=10)
    host: str
    port: int = Field(default=587, ge=1, le=65_535)
    security: SmtpSecurity = SmtpSecurity.STARTTLS
    username: str | None = None
    password: SecretRef | None = None
    sender: str
    ca_file: str | None = None
    enabled: bool = True
    updated_at: datetime | None = None
