"""Which rate limits apply to a call: per company, per member, per (member, action), and per anonymous client.

Defaults come from settings; a company policy's ``rate_limits`` overrides them with keys
``company_per_minute``, ``member_per_minute``, ``action_per_minute``, ``anonymous_per_minute`` (each
anonymous client of the company's public dealer agents), ``anonymous_company_per_minute`` (all of them
together; default ``company_per_minute``) and ``<action name>`` (calls per minute for that action and member,
or for all anonymous callers together).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from forecourt.contract import Action
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

    def rules_for(
        self, action: Action, principal: Principal, policies: list[Policy], owner: str | None = None
    ) -> Iterator[LimitRule]:
        """The limits that count this call, tightest policy value winning.

        ``policies`` and ``owner`` are those of the company whose data the call reaches: for an anonymous
        caller of a public dealer agent, the dealership's company, whose limits apply to it too (its own
        client bucket, ``anonymous_per_minute``, and the company's ``company_per_minute`` and per-action limits).
        """
        if principal.method == "internal":
            return
        overrides: dict[str, int] = {}
        for policy in policies:
            for key, value in policy.rate_limits.items():
                overrides[key] = min(value, overrides.get(key, value))
        if principal.anonymous:
            client = principal.client_address or "unknown"
            per_client = overrides.get("anonymous_per_minute", self.anonymous_per_minute)
            yield LimitRule("anonymous", f"rl:anon:{client}", per_client)
            if owner is not None:
                yield LimitRule(
                    "company", f"rl:c:{owner}", overrides.get("company_per_minute", self.company_per_minute)
                )
                if action.name in overrides:
                    yield LimitRule("action", f"rl:anon-a:{owner}:{action.name}", overrides[action.name])
            return
        company = principal.company_id or "-"
        member = f"{company}/{principal.member_id}"
        yield LimitRule("company", f"rl:c:{company}", overrides.get("company_per_minute", self.company_per_minute))
        yield LimitRule("member", f"rl:m:{member}", overrides.get("member_per_minute", self.member_per_minute))
        budget = action.budget  # an action's twins (aap.inventory.search for inventory.search) share one budget
        per_action = overrides.get(budget, overrides.get("action_per_minute", self.action_per_minute))
        yield LimitRule("action", f"rl:a:{member}:{budget}", per_action)

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
