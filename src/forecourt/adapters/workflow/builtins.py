"""Operators a service task may name besides gateway actions.

- ``workflow.rotation.next`` ``{pool, members}``: the next member of a round-robin rotation, counted per
  dealership in the database (so every replica shares one rotation).

Everything else a service task names is a gateway action, called through the gateway as the run's member.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from forecourt.adapters.workflow.repository import WorkflowRepository
from forecourt.contract import ExecutionContext
from forecourt.errors import InvalidParams

Builtin = Callable[[dict[str, Any], ExecutionContext, str], Awaitable[Any]]


class Builtins:
    """The built-in operators, by name."""

    def __init__(self) -> None:
        self._ops: dict[str, Builtin] = {
            "workflow.rotation.next": self._rotation_next,
        }

    def __contains__(self, name: str) -> bool:
        return name in self._ops

    async def run(self, name: str, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        """Run the operator ``name`` for a run at ``dealership_id``."""
        return await self._ops[name](params, ctx, dealership_id)

    async def _rotation_next(self, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        members = params.get("members")
        pool = str(params.get("pool") or "default")[:64]
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise InvalidParams("members must be a non-empty list of member ids.")
        position = await WorkflowRepository(ctx.store).next_in_rotation(dealership_id, pool)
        return {"pool": pool, "member": members[(position - 1) % len(members)], "position": position}
