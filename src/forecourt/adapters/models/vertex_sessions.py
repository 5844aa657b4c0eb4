"""Sessions and memory for ``vertex.invokeModel`` (seed 001 §5: "Handles session state, memory").

A call with ``memory: true`` and a session id (the envelope's ``caller.sessionId``, or the payload's
``session_id``) is sent with the session's earlier turns before its own, and its turns plus the model's answer are
kept for the next call, so a multi-turn conversation sends only the new turn. The history is:

- per company: the key is the company and the session id (another company's calls never see it);
- bounded: the newest ``sessions.max_turns`` turns (default 20), each cut at ``sessions.max_chars`` (default 8000);
- expiring: ``sessions.ttl_s`` (default 1 hour) after its last turn;
- redactable: ``vertex.sessions.delete`` erases it at once; ``vertex.sessions.get`` shows what is kept.

System instructions are never stored (each call sends its own). Stored in the gateway's session memory
(:mod:`forecourt.adapters.models.session_memory`: Redis when configured, else this process).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from forecourt.adapters.models.common import Message, ModelRequest
from forecourt.adapters.models.session_memory import SessionMemory, build_session_memory
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams

DEFAULT_MAX_TURNS = 20
DEFAULT_MAX_CHARS = 8000
DEFAULT_TTL_S = 3600.0
_SESSION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _limits(config: Mapping[str, Any]) -> tuple[int, int, float]:
    raw = config.get("sessions") or {}
    section: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}

    def number(name: str, default: float) -> float:
        value = section.get(name)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else default

    return (
        int(number("max_turns", DEFAULT_MAX_TURNS)),
        int(number("max_chars", DEFAULT_MAX_CHARS)),
        number("ttl_s", DEFAULT_TTL_S),
    )


def session_id(payload: Mapping[str, Any], context: ExecutionContext) -> str:
    """The call's session id (payload first, then the envelope's ``caller.sessionId``).

    Raises:
        InvalidParams: None is given, or it is not a plain identifier.
    """
    raw = payload.get("session_id") or context.session_id
    if not isinstance(raw, str) or not _SESSION_ID.match(raw):
        raise InvalidParams("memory needs a session id (caller.sessionId or session_id): letters, digits, ._:-")
    return raw


class ConversationMemory:
    """Loads and keeps a session's turns."""

    def __init__(self) -> None:
        self._store: SessionMemory | None = None

    def store(self, context: ExecutionContext) -> SessionMemory:
        """The session memory (built on first use from the process settings)."""
        if self._store is None:
            self._store = build_session_memory(context.settings)
        return self._store

    @staticmethod
    def key(context: ExecutionContext, sid: str) -> str:
        """The storage key: company and session id."""
        return f"vertex:{context.company_id or '-'}:{sid}"

    async def with_history(self, request: ModelRequest, key: str, context: ExecutionContext) -> ModelRequest:
        """``request`` with the session's earlier turns before its own."""
        turns = await self.store(context).load(key)
        history = tuple(Message("assistant" if t["role"] == "assistant" else "user", t["content"]) for t in turns)
        return replace(request, messages=history + request.messages)

    async def remember(self, key: str, request: ModelRequest, reply: str, context: ExecutionContext) -> int:
        """Keep the call's own turns and the answer; how many turns the session now holds (at most)."""
        max_turns, max_chars, ttl_s = _limits(context.adapter_config)
        turns = [{"role": m.role, "content": m.content[:max_chars]} for m in request.prompt_messages]
        turns.append({"role": "assistant", "content": reply[:max_chars]})
        store = self.store(context)
        await store.append(key, turns, max_turns=max_turns, ttl_s=ttl_s)
        return len(await store.load(key))

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """``vertex.sessions.get`` (the kept turns) and ``vertex.sessions.delete`` (erase them)."""
        sid = session_id(payload, context)
        key = self.key(context, sid)
        if context.action.name == "vertex.sessions.delete":
            deleted = await self.store(context).delete(key)
            return AdapterResult(output={"session_id": sid, "deleted": deleted}, result_type="model.session")
        turns = await self.store(context).load(key)
        return AdapterResult(output={"session_id": sid, "turns": turns}, result_type="model.session")

    async def aclose(self) -> None:
        """Close the session store's connections."""
        if self._store is not None:
            await self._store.aclose()
            self._store = None
