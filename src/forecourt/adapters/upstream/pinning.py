"""Pinned upstream tools at run time: what the hub offers of an upstream's listing, and approving changes.

The rules are :mod:`forecourt.domain.tool_pins`; this module reads and writes the pins (``upstream_tool_pins``),
asks the company's policies whether the upstream is auto-accepted, writes an audit record per change
(``upstream.tools.changed``, ``upstream.tools.approved``) and counts changes in ``/metrics``
(``forecourt_upstream_tool_changes_total{kind, outcome}``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from forecourt.domain.tool_pins import ToolPin, digest_of, reconcile
from forecourt.domain.upstreams import Registered
from forecourt.errors import InvalidParams
from forecourt.store.base import AuditRecord, Store

if TYPE_CHECKING:
    import mcp_types as types
    from prometheus_client import CollectorRegistry

logger = logging.getLogger(__name__)
CountFn = Callable[[str, str], None]
"""``(kind, outcome)``: one change of an upstream tool (``added|changed|removed``, ``held|accepted|approved``)."""


def change_counter(registry: CollectorRegistry) -> CountFn:
    """A counter of tool changes in ``registry`` (the app's ``/metrics``)."""
    from prometheus_client import Counter

    counter = Counter(
        "forecourt_upstream_tool_changes",
        "Changes of upstream MCP tools (names, descriptions, schemas) by kind and outcome",
        ["kind", "outcome"],
        registry=registry,
    )
    return lambda kind, outcome: counter.labels(kind, outcome).inc()


def _record(company_id: str, action: str, details: dict[str, Any], now: datetime, member: str | None) -> AuditRecord:
    return AuditRecord(
        id=uuid.uuid4().hex,
        company_id=company_id,
        dealership_id=None,
        member_id=member,
        action=action,
        action_type="admin",
        args_digest="-",
        args_redacted=details,
        result_class="ok",
        status_code=200,
        error_code=None,
        duration_ms=0.0,
        trace_id=uuid.uuid4().hex,
        surface="internal",
        processed_by="upstream-hub",
        occurred_at=now,
    )


def auto_accepted(upstream_id: str, globs: Iterable[str]) -> bool:
    """Whether a policy's ``auto_accept_upstreams`` names ``upstream_id``."""
    return any(g in ("*", upstream_id) or fnmatchcase(upstream_id, g) for g in globs)


class ToolPinning:
    """Pins of every upstream (see the module docstring)."""

    def __init__(self, store: Store, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock
        self.count: CountFn = lambda kind, outcome: None
        self.held: dict[str, frozenset[str]] = {}
        """Per upstream key: its own tool names that wait for approval (never callable, not even pass-through)."""
        self.signature: dict[str, str] = {}
        """Per upstream key: the digest of what was last offered (the hub reinstalls tools only when it moves)."""

    async def offered(self, reg: Registered, tools: list[types.Tool]) -> list[types.Tool]:
        """The tools of ``reg``'s listing that may be offered now (pins updated, changes audited and counted)."""
        import mcp_types as types

        listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        now = self.clock()
        company, upstream = reg.company_id, reg.spec.id
        async with self.store.transaction() as uow:
            pins = await uow.upstreams.pins(company, upstream)
            policies = await uow.tenancy.list_policies(company)
            auto = any(auto_accepted(upstream, p.protections.auto_accept_upstreams) for p in policies)
            result = reconcile(listed, pins, auto_accept=auto, now=now)
            if result.pins != pins:
                await uow.upstreams.save_pins(company, upstream, result.pins, now=now)
            records = [
                _record(company, "upstream.tools.changed", self._details(upstream, name, kind, ok), now, None)
                for name, kind, ok in result.changes
                if pins  # the first listing is the registration, not a change
            ]
            if records:
                await uow.audit.add_many(records)
        for name, kind, accepted in result.changes:
            if pins:
                self.count(kind, "accepted" if accepted else "held")
                logger.warning(
                    "upstream %s: tool %s %s (%s)", reg.key, name[:64], kind, "accepted" if accepted else "held"
                )
        self.held[reg.key] = frozenset(n for n, p in result.pins.items() if p.pending is not None)
        self.signature[reg.key] = digest_of({"tools": result.offered})
        return [types.Tool.model_validate(t) for t in result.offered]

    @staticmethod
    def _details(upstream: str, tool: str, kind: str, accepted: bool) -> dict[str, Any]:
        return {"upstream_id": upstream, "tool": tool[:128], "change": kind, "accepted": accepted}

    async def changes(self, company_id: str, upstream_id: str) -> list[dict[str, Any]]:
        """The changes of one upstream waiting for approval, each with its diff."""
        async with self.store.read() as uow:
            pins = await uow.upstreams.pins(company_id, upstream_id)
        return [p.diff() for _, p in sorted(pins.items()) if p.pending is not None]

    async def approve(
        self, company_id: str, upstream_id: str, tools: list[str] | None, *, by: str | None
    ) -> list[dict[str, Any]]:
        """Approve pending changes (``tools``: those tool names; ``None``: all); returns what was approved."""
        now = self.clock()
        async with self.store.transaction() as uow:
            pins = await uow.upstreams.pins(company_id, upstream_id)
            pending = {n: p for n, p in pins.items() if p.pending is not None}
            chosen = sorted(pending) if tools is None else tools
            unknown = [t for t in chosen if t not in pending]
            if unknown:
                raise InvalidParams("No change of that tool waits for approval.", details={"tools": unknown[:10]})
            approved: list[dict[str, Any]] = []
            kept: dict[str, ToolPin] = dict(pins)
            for name in chosen:
                approved.append(pending[name].diff())
                after = pending[name].approved()
                if after is None:
                    kept.pop(name)
                else:
                    kept[name] = after
            await uow.upstreams.save_pins(company_id, upstream_id, kept, now=now)
            await uow.audit.add_many(
                [
                    _record(company_id, "upstream.tools.approved", self._approved(upstream_id, item), now, by)
                    for item in approved
                ]
            )
        for item in approved:
            self.count(str(item["change"]), "approved")
        return approved

    @staticmethod
    def _approved(upstream: str, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "upstream_id": upstream,
            "tool": str(item["tool"])[:128],
            "change": item["change"],
            "digest": item["proposed_digest"],
        }


__all__ = ["ToolPinning", "auto_accepted", "change_counter"]
