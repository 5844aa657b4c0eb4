"""What a company policy says about protecting its agents (``Policy.protections``; docs/security.md).

- ``after_untrusted``: once a session (an MCP session, an A2A context) has received output that can carry
  third-party text, the side-effect actions named here need a person's approval (``require_approval``) or are
  refused (``refuse``) for the rest of that session;
- ``budgets``: per member and per API key, calls, model tokens in and out, and model spend (in minor units of
  ``currency``), per ``period`` (calendar ``day`` or ``month``, UTC);
- ``auto_accept_upstreams``: upstream MCP servers (ids, globs allowed) whose changed tools are accepted without
  an administrator's approval.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _listed(value: object) -> object:
    return [value] if isinstance(value, str) else value


Globs = Annotated[tuple[Annotated[str, Field(min_length=1, max_length=128)], ...], BeforeValidator(_listed)]


class AfterUntrusted(BaseModel):
    """Per-turn restrictions once a session has read untrusted output."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    require_approval: Globs = ()
    refuse: Globs = ()


class Budget(BaseModel):
    """Limits of one member or one API key per period (``None``: no limit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int | None = Field(default=None, ge=0)
    tokens_in: int | None = Field(default=None, ge=0)
    tokens_out: int | None = Field(default=None, ge=0)
    spend_minor: int | None = Field(default=None, ge=0)

    def limits(self) -> dict[str, int]:
        """The limits that are set, by meter name."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Budgets(BaseModel):
    """Budgets of a company's members and keys: a default, and overrides by member id or key id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    period: Literal["day", "month"] = "month"
    currency: str = Field(default="USD", min_length=3, max_length=3)
    member: Budget | None = None
    key: Budget | None = None
    members: dict[str, Budget] = Field(default_factory=dict)
    keys: dict[str, Budget] = Field(default_factory=dict)


class Protections(BaseModel):
    """A policy's protections (all off by default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    after_untrusted: AfterUntrusted = AfterUntrusted()
    budgets: Budgets | None = None
    auto_accept_upstreams: Globs = ()


__all__ = ["AfterUntrusted", "Budget", "Budgets", "Protections"]
