"""GPU resource allocation (seed 001 §5 "Handles ... GPU resource allocation"): per-company quotas of concurrent
GPU work, held replica-wide.

Two quotas per company: ``inference`` (Triton calls in flight) and ``jobs`` (fine-tuning jobs not yet ended). The
limit is the tightest of the company's policies' ``rate_limits.gpu_inference_slots`` / ``gpu_job_slots`` and the
``nvidia`` adapter configuration's ``gpu.inference_slots`` / ``gpu.job_slots`` (the operator's value; a company
setting may lower it, never raise it); no value anywhere means no quota. Slots live in the gateway's slot pool
(:mod:`forecourt.adapters.models.slots`: Redis when configured, so every replica counts the same slots) with a
lease, so a replica that dies holding slots frees them: an inference slot's lease is the call's timeout plus a
margin; a job slot's lease is ``gpu.job_lease_s`` (default a week), released as soon as the job ends.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

from forecourt.adapters.errors import GpuQuotaExceeded
from forecourt.adapters.models.slots import SlotPool, build_slot_pool
from forecourt.contract import ExecutionContext

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

logger = logging.getLogger(__name__)

Kind = Literal["inference", "jobs"]
_POLICY_KEYS = {"inference": "gpu_inference_slots", "jobs": "gpu_job_slots"}
_CONFIG_KEYS = {"inference": "inference_slots", "jobs": "job_slots"}
DEFAULT_JOB_LEASE_S = 7 * 24 * 3600.0
INFERENCE_LEASE_MARGIN_S = 5.0


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


class GpuQuota:
    """Takes and gives back a company's GPU slots."""

    def __init__(self, operator: Mapping[str, Any], gateway: Callable[[], Gateway | None]) -> None:
        """Create the quota keeper.

        Args:
            operator: The operator's ``nvidia`` adapter configuration (its ``gpu`` section).
            gateway: Returns the gateway (for the company's policies), or ``None`` outside one.
        """
        raw = operator.get("gpu") or {}
        self._operator: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        self._gateway = gateway
        self._pool: SlotPool | None = None

    def pool(self, context: ExecutionContext) -> SlotPool:
        """The slot pool (built on first use from the process settings)."""
        if self._pool is None:
            self._pool = build_slot_pool(context.settings)
        return self._pool

    async def limit(self, context: ExecutionContext, kind: Kind) -> int | None:
        """The company's limit of ``kind`` slots (``None``: no quota)."""
        candidates: list[int] = []
        company = context.adapter_config.get("gpu") or {}
        for section in (self._operator, company if isinstance(company, Mapping) else {}):
            value = _positive_int(section.get(_CONFIG_KEYS[kind]))
            if value is not None:
                candidates.append(value)
        gateway = self._gateway()
        if gateway is not None and context.company_id and context.principal.method != "internal":
            for policy in await gateway.tenancy.policies(context.company_id):
                value = _positive_int(policy.rate_limits.get(_POLICY_KEYS[kind]))
                if value is not None:
                    candidates.append(value)
        return min(candidates) if candidates else None

    @staticmethod
    def key(kind: Kind, company_id: str | None) -> str:
        """The slot key of ``company_id``'s ``kind`` quota."""
        return f"gpu:{kind}:{company_id or '-'}"

    async def take(self, context: ExecutionContext, kind: Kind, holder: str, lease_s: float) -> bool:
        """Take a slot for ``holder``; ``False`` when no quota applies (nothing to give back).

        Raises:
            GpuQuotaExceeded: Every slot is held.
        """
        limit = await self.limit(context, kind)
        if limit is None:
            return False
        if not await self.pool(context).acquire(self.key(kind, context.company_id), holder, limit, lease_s):
            logger.info("GPU %s quota of company %s is in use (%d slots)", kind, context.company_id, limit)
            raise GpuQuotaExceeded(details={"quota": kind, "limit": limit})
        return True

    async def give_back(self, context: ExecutionContext, kind: Kind, company_id: str | None, holder: str) -> None:
        """Release ``holder``'s slot."""
        await self.pool(context).release(self.key(kind, company_id), holder)

    @asynccontextmanager
    async def inference_slot(self, context: ExecutionContext, timeout_s: float) -> AsyncIterator[None]:
        """Hold an inference slot for the duration of the block (the call's trace id holds it)."""
        holder = f"{context.trace_id}:{id(context)}"
        taken = await self.take(context, "inference", holder, timeout_s + INFERENCE_LEASE_MARGIN_S)
        try:
            yield
        finally:
            if taken:
                await self.give_back(context, "inference", context.company_id, holder)

    def job_lease_s(self) -> float:
        """How long a job slot is held at most."""
        value = self._operator.get("job_lease_s")
        return float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_JOB_LEASE_S

    async def aclose(self) -> None:
        """Close the slot pool's connections."""
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
