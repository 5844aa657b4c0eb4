"""Which rate limits apply to a call: per company, per member, per (member, action), and per anonymous client.

Defaults come from settings; a company policy's ``rate_limits`` overrides them with keys
``company_per_minute``, ``member_per_minute``, ``action_per_minute`` and ``<action name>`` (calls
per minute for that action and member).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from forecourt.actions.base import Action
from forecourt.domain.tenancy import Policy
from forecourt.errors import RateLimited
from forecourt.gateway.base import Principal, RateDecision
from forecourt.settings import Settings


@dataclass(frozen=True)
class LimitRule:
    """One limit: ``limit`` calls per ``window_s`` seconds counted under ``key``."""

    scope: str
    key: str
    limit: int
    window_s: float = 60.0


@dataclass(frozen=True)
class LimitPlan:
    """Default limits per minute."""

    company_per_minute: int = 60_000
    member_per_minute: int = 6_000
    action_per_minute: int = 3_000
    anonymous_per_minute: int = 600

    @classmethod
    def from_settings(cls, settings: Settings) -> LimitPlan:
        """The defaults configured for this process."""
        return cls(
            company_per_minute=settings.rate_company_per_minute,
            member_per_minute=settings.rate_member_per_minute,
            action_per_minute=settings.rate_action_per_minute,
            anonymous_per_minute=settings.rate_anonymous_per_minute,
        )

    def rules_for(self, action: Action, principal: Principal, policies: list[Policy]) -> Iterator[LimitRule]:
        """The limits that count this call, tightest policy value winning."""
        if principal.method == "internal":
            return
        if principal.anonymous:
            yield LimitRule("anonymous", f"rl:anon:{principal.client_address or 'unknown'}", self.anonymous_per_minute)
            return
        overrides: dict[str, int] = {}
        for policy in policies:
            for key, value in policy.rate_limits.items():
                overrides[key] = min(value, overrides.get(key, value))
        company = principal.company_id or "-"
        member = f"{company}/{principal.member_id}"
        yield LimitRule("company", f"rl:c:{company}", overrides.get("company_per_minute", self.company_per_minute))
        yield LimitRule("member", f"rl:m:{member}", overrides.get("member_per_minute", self.member_per_minute))
        per_action = overrides.get(action.name, overrides.get("action_per_minute", self.action_per_minute))
        yield LimitRule("action", f"rl:a:{member}:{action.name}", per_action)

    @staticmethod
    def error(decision: RateDecision, rule: LimitRule) -> RateLimited:
        """The structured, retryable error for a rejected call, with HTTP headers attached."""
        err = RateLimited(decision.retry_after_s, scope=rule.scope)
        retry_after = max(1, int(decision.retry_after_s + 0.999))
        err.headers = {
            "Retry-After": str(retry_after),
            "RateLimit-Limit": str(rule.limit),
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(retry_after),
        }
        return err
