"""Change events: the outbox dispatcher that turns committed outbox rows into live notifications."""

from __future__ import annotations

from forecourt.events.dispatcher import OutboxDispatcher, decode_event, encode_event, event_channel

__all__ = ["OutboxDispatcher", "decode_event", "encode_event", "event_channel"]
