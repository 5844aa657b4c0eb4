"""The parts of relaying on their own: capability checks, legacy session ids, the back channel, reply routing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from starlette.types import Message

from forecourt.adapters.upstream.relay import RELAY, detached, on_elicitation, on_log, on_sampling
from forecourt.surfaces.mcp.backchannel import BackChannel, MemoryReplies, ReplyRouter
from forecourt.surfaces.mcp.errors import NoBackChannel
from forecourt.surfaces.mcp.federation.relay import at_least, elicitation_refusal, sampling_refusal
from forecourt.surfaces.mcp.sessions import (
    RedisRegistry,
    SessionIds,
    capability_code,
    replies_for,
    session_capabilities,
)

BOUND_S = 10.0
SAMPLE = types.CreateMessageRequestParams(
    messages=[types.SamplingMessage(role="user", content=types.TextContent(text="hi"))], max_tokens=5
)
FORM = types.ElicitRequestFormParams(message="name?", requested_schema={"type": "object", "properties": {}})
URL = types.ElicitRequestURLParams(message="open", url="https://example.com", elicitation_id="e")


def test_the_capabilities_of_initialize_survive_in_the_signed_session_id() -> None:
    ids = SessionIds("secret-0123456789")
    declared = {"sampling": {"tools": {}}, "elicitation": {}, "roots": {}}
    session_id = ids.issue("alice", capability_code(declared))
    assert ids.valid(session_id, "alice")
    assert not ids.valid(session_id, "bob")
    caps = session_capabilities(session_id)
    assert caps.sampling is not None
    assert caps.sampling.tools is not None
    assert caps.sampling.context is None
    assert caps.elicitation is not None
    assert caps.elicitation.form is not None
    assert caps.elicitation.url is None
    nonce, _code, mac = session_id.split(".")
    assert not ids.valid(f"{nonce}.sfu.{mac}", "alice")  # the code is covered by the MAC
    plain = ids.issue("alice")
    assert session_capabilities(plain) == types.ClientCapabilities()
    assert capability_code({"elicitation": {"url": {}}}) == "u"
    assert capability_code(None) == ""


def test_requests_are_refused_unless_the_client_declared_the_capability() -> None:
    none = types.ClientCapabilities()
    plain = types.ClientCapabilities(sampling=types.SamplingCapability(), elicitation=types.ElicitationCapability())
    with_tools = SAMPLE.model_copy(update={"tools": [types.Tool(name="t", input_schema={"type": "object"})]})
    assert sampling_refusal(none, SAMPLE) is not None
    assert sampling_refusal(None, SAMPLE) is not None
    assert sampling_refusal(plain, SAMPLE) is None
    refused = sampling_refusal(plain, with_tools)
    assert refused is not None
    assert refused.code == types.METHOD_NOT_FOUND
    assert elicitation_refusal(none, FORM) is not None
    assert elicitation_refusal(plain, FORM) is None  # {} means form
    assert elicitation_refusal(plain, URL) is not None
    url_only = types.ClientCapabilities(elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability()))
    assert elicitation_refusal(url_only, URL) is None
    assert elicitation_refusal(url_only, FORM) is not None


def test_log_levels_pass_only_at_or_above_the_opt_in() -> None:
    assert at_least("error", "warning")
    assert at_least("warning", "warning")
    assert not at_least("info", "warning")
    assert not at_least("emergency", None)


async def test_outside_a_relayed_call_the_upstream_is_refused_and_logs_are_dropped() -> None:
    sampled = await on_sampling(None, SAMPLE)  # type: ignore[arg-type]
    elicited = await on_elicitation(None, FORM)  # type: ignore[arg-type]
    assert isinstance(sampled, types.ErrorData)
    assert sampled.code == types.METHOD_NOT_FOUND
    assert isinstance(elicited, types.ErrorData)
    assert elicited.code == types.METHOD_NOT_FOUND
    await on_log(types.LoggingMessageNotificationParams(level="info", data="nobody hears this"))


async def test_a_detached_context_carries_no_relay() -> None:
    class Relay:
        log_level = None

    token = RELAY.set(Relay())  # type: ignore[arg-type]
    try:
        assert detached().run(RELAY.get) is None
        assert RELAY.get() is not None
    finally:
        RELAY.reset(token)


class Wire:
    """The ASGI ``send`` of one response, recording what went out."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.event_written = asyncio.Event()

    async def send(self, message: Message) -> None:
        self.messages.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            self.event_written.set()

    def events(self) -> list[dict[str, Any]]:
        found = []
        for message in self.messages:
            body = message.get("body", b"")
            if body.startswith(b"event: message"):
                found.append(json.loads(body.split(b"data: ", 1)[1]))
        return found


async def _stream(channel: BackChannel) -> None:
    await channel.send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )


async def test_the_back_channel_writes_a_request_event_and_returns_the_clients_answer() -> None:
    wire, replies = Wire(), MemoryReplies()
    channel = BackChannel(wire.send, "session-a", replies)
    await _stream(channel)
    asking = asyncio.create_task(channel.request("sampling/createMessage", {"maxTokens": 5}))
    await asyncio.wait_for(wire.event_written.wait(), BOUND_S)
    [request] = wire.events()
    assert request["method"] == "sampling/createMessage"
    assert request["params"] == {"maxTokens": 5}
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}}
    assert not await replies.deliver("session-b", answer)  # another session cannot answer it
    assert await replies.deliver("session-a", answer)
    assert await asyncio.wait_for(asking, BOUND_S) == {"ok": True}
    assert not await replies.deliver("session-a", answer)  # answered once


async def test_a_clients_error_answer_becomes_that_json_rpc_error() -> None:
    wire, replies = Wire(), MemoryReplies()
    channel = BackChannel(wire.send, "s", replies)
    await _stream(channel)
    asking = asyncio.create_task(channel.request("elicitation/create", {}))
    await asyncio.wait_for(wire.event_written.wait(), BOUND_S)
    [request] = wire.events()
    await replies.deliver("s", {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}})
    with pytest.raises(MCPError) as caught:
        await asyncio.wait_for(asking, BOUND_S)
    assert caught.value.code == -32601


async def test_the_back_channel_refuses_when_the_response_is_not_an_open_event_stream() -> None:
    wire = Wire()
    json_channel = BackChannel(wire.send, "s", MemoryReplies())
    await json_channel.send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    with pytest.raises(NoBackChannel):
        await json_channel.request("sampling/createMessage", {})
    ended = BackChannel(wire.send, "s", MemoryReplies())
    await _stream(ended)
    await ended.send({"type": "http.response.body", "body": b"", "more_body": False})
    with pytest.raises(NoBackChannel):
        await ended.request("sampling/createMessage", {})
    never = BackChannel(wire.send, "s", MemoryReplies())
    never.end()  # the app returned without answering at all
    with pytest.raises(NoBackChannel):
        await never.request("sampling/createMessage", {})


async def test_an_answer_posted_to_another_replica_reaches_the_asker_through_redis(
    redis_url: str, redis_prefix: str
) -> None:
    asker_registry = RedisRegistry(redis_url, redis_prefix, 60)
    other_registry = RedisRegistry(redis_url, redis_prefix, 60)
    try:
        asker: ReplyRouter = replies_for(asker_registry)
        other: ReplyRouter = replies_for(other_registry)
        waiter = await asker.expect("session-a", "fc-1")
        try:
            assert not await other.deliver("session-b", {"jsonrpc": "2.0", "id": "fc-1", "result": {}})
            assert not await other.deliver("session-a", {"jsonrpc": "2.0", "id": "fc-2", "result": {}})
            assert await other.deliver("session-a", {"jsonrpc": "2.0", "id": "fc-1", "result": {"n": 1}})
            reply = await asyncio.wait_for(waiter.wait(), BOUND_S)
        finally:
            waiter.close()
        assert reply["result"] == {"n": 1}
    finally:
        await asker_registry.close()
        await other_registry.close()
