"""What an upstream asks during a tool call — sampling, elicitation, log messages — routed to that call's caller.

The pooled upstream session is shared by every caller of the company, so the session's callbacks must find
out whose call a server-initiated message belongs to. They do it through :data:`RELAY`, a context variable
the MCP front door sets around the one ``Gateway.invoke`` of a call (see ``surfaces/mcp/federation/relay.py``):

- Streamable HTTP upstreams: the SDK runs each POST in a copy of the context of the task that sent the
  request, and hands every message that arrives on that POST's response stream (the upstream's
  ``sampling/createMessage``, ``elicitation/create`` or ``notifications/message`` *related to* the call) to
  its handler in a copy of that same context. So the callback sees the caller's relay, and only its.
- 2026-07-28 upstreams answer ``input_required`` instead; the SDK's client resolves those rounds in the
  caller's own task, through the same callbacks.
- Messages that belong to no call — the upstream's standalone ``GET`` stream, any stdio upstream (a pipe
  carries no correlation at all) — arrive in the session's own context, where no relay is set: requests are
  refused with ``-32601`` and log messages are dropped. Nothing is ever guessed, so one caller can never see
  what belongs to another.

The session's background task is started in a context without a relay (:func:`detached`), whoever's call
happened to open it.
"""

from __future__ import annotations

import contextvars
from typing import Protocol

import mcp_types as types
from mcp.client.session import ClientRequestContext

RELAY_TIMEOUT_S = 600.0
"""Upper bound of one relayed request (the call's own timeout, at most 600 s, usually ends it first)."""

SAMPLING = types.SamplingCapability(tools=types.SamplingToolsCapability())
"""What the pooled session declares: whether a sampling request can be served is decided per call."""

SamplingAnswer = types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData
ElicitationAnswer = types.ElicitResult | types.ErrorData


class CallRelay(Protocol):
    """The caller of one upstream tool call, as the upstream session's callbacks see it."""

    @property
    def log_level(self) -> types.LoggingLevel | None:
        """The lowest level of log messages the caller wants (``None``: none)."""

    async def sampling(self, params: types.CreateMessageRequestParams) -> SamplingAnswer:
        """Ask the caller's client to sample; its result, or the error the upstream gets."""

    async def elicitation(self, params: types.ElicitRequestParams) -> ElicitationAnswer:
        """Ask the caller's client (its user) for input; its result, or the error the upstream gets."""

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Pass a log message on to the caller (best effort)."""


RELAY: contextvars.ContextVar[CallRelay | None] = contextvars.ContextVar("forecourt_upstream_relay", default=None)
"""Set by a front door around an upstream call: who gets what the upstream asks during it."""


def _refused(what: str) -> types.ErrorData:
    return types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"{what} is only available within a relayed call.")


async def on_sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> SamplingAnswer:
    """The pooled session's ``sampling_callback``."""
    relay = RELAY.get()
    return _refused("Sampling") if relay is None else await relay.sampling(params)


async def on_elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> ElicitationAnswer:
    """The pooled session's ``elicitation_callback``."""
    relay = RELAY.get()
    return _refused("Elicitation") if relay is None else await relay.elicitation(params)


async def on_log(params: types.LoggingMessageNotificationParams) -> None:
    """The pooled session's ``logging_callback``."""
    relay = RELAY.get()
    if relay is not None:
        await relay.log(params)


def detached() -> contextvars.Context:
    """A copy of the current context without a relay, for tasks that outlive the call that starts them."""
    context = contextvars.copy_context()
    context.run(RELAY.set, None)
    return context


__all__ = [
    "RELAY",
    "RELAY_TIMEOUT_S",
    "SAMPLING",
    "CallRelay",
    "ElicitationAnswer",
    "SamplingAnswer",
    "detached",
    "on_elicitation",
    "on_log",
    "on_sampling",
]
