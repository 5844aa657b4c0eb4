"""Delegation to peer agents over A2A: ``agents.delegate`` (run by :mod:`forecourt.adapters.a2a_peers`)."""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue
from forecourt.adapters.a2a_peers import ADAPTER_ID, A2APeerAdapter

_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "peer": {"type": "string", "minLength": 1, "maxLength": 64, "description": "A configured peer's name."},
        "action": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The peer's action to run."},
        "payload": {"type": "object", "description": "The action's payload at the peer."},
        "task_id": {"type": "string", "maxLength": 128, "description": "Continue this input-required peer task."},
        "data": {"type": "object", "description": "With task_id: the answer the peer task waits for."},
    },
    "required": ["peer"],
    "additionalProperties": False,
}

PEER_ACTIONS: tuple[Action, ...] = (
    Action(
        name="agents.delegate",
        type="tool.run",
        title="Delegate to a peer agent over A2A",
        description=(
            "Send an action to a peer agent (configured per company) as an A2A task and return its final state, "
            "artifacts and message; an input-required task comes back with its task_id for a follow-up call. Use it "
            "to hand a task to a partner agent your company has set up (for example a finance agent)."
        ),
        input_schema=_INPUT,
        output_schema=None,
        adapter=ADAPTER_ID,
        scope="amcp:upstream:write",
        side_effect=True,
        idempotent=False,
        pii=True,
        timeout_s=120.0,
        dealer_scoped=False,
        domain="upstream",
        result_type="agents.task",
        tags=("a2a", "delegation"),
        example={"peer": "finance", "action": "credit.prequalify", "payload": {"lead_id": "lead_tsf_0001"}},
    ),
)


def register_agent_actions(catalogue: Catalogue) -> None:
    """Add ``agents.delegate`` and its adapter."""
    for action in PEER_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(A2APeerAdapter())
