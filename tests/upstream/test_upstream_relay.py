"""What an upstream asks during a call (sampling, elicitation, log messages) reaches that call's caller, and only it.

A real upstream process behind the real app on loopback, driven by the SDK's own client in both eras.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from upstream_support import FED_KEY, PEPPER, LiveServer, UpstreamProcess, mcp_client, wait_for

BOUND_S = 20.0
FORECOURT = Path(sys.executable).parent / "forecourt"


async def _listed(live: LiveServer, keys: dict[str, str]) -> bool:
    hc, client = mcp_client(live.url, keys[FED_KEY])
    async with hc, client:
        return "up.sample" in {t.name for t in (await client.list_tools()).tools}


async def _ready(live: LiveServer, keys: dict[str, str], url: str, mode: str = "legacy") -> None:
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], {"url": url, "mode": mode})
    assert response.status_code == 200, response.text
    await wait_for(lambda: _listed(live, keys))


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def modern_client(url: str, key: str, **kwargs: Any) -> tuple[httpx2.AsyncClient, Client]:
    """An SDK client of the 2026-07-28 era (no handshake, no session)."""
    hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=60))
    return hc, Client(streamable_http_client(url, http_client=hc), mode="2026-07-28", **kwargs)


class Answers:
    """A client's side: what it was asked and logged, and what it answers."""

    def __init__(self, reply: str = "four") -> None:
        self.reply = reply
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []
        self.logs: list[Any] = []
        self.logged = asyncio.Event()

    async def sampling(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self.reply), model="m-1")

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        self.elicited.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"name": self.reply, "size": "m"})

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)
        self.logged.set()

    def callbacks(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "logging_callback": self.logging,
        }


async def test_an_upstream_tool_that_samples_gets_the_callers_answer_on_the_shared_session(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    answers = Answers()
    hc, client = mcp_client(live.url, keys["crm"], **answers.callbacks())
    async with hc, client:
        first = await client.call_tool("up.sample", {"prompt": "two plus two?"})
        second = await client.call_tool("up.sample", {"prompt": "again?"})
        sessions = await client.call_tool("up.sessions", {})
    assert _text(first) == "sampled: four (m-1)"
    assert not second.is_error
    content = answers.sampled[0].messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "two plus two?"
    assert answers.sampled[0].max_tokens == 50
    assert _text(sessions) == "1"  # relaying never opened another upstream session


async def test_an_upstream_tool_that_elicits_reaches_the_caller_with_its_schema_unchanged(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    answers = Answers(reply="Ada")
    hc, client = mcp_client(live.url, keys["crm"], **answers.callbacks())
    async with hc, client:
        form = await client.call_tool("up.ask", {"message": "Who are you?"})
        url = await client.call_tool("up.ask_url", {"url": "https://example.com/consent"})
    assert _text(form) == 'elicited: accept {"name": "Ada", "size": "m"}'
    asked = answers.elicited[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.message == "Who are you?"
    assert asked.requested_schema["properties"]["name"]["default"] == "Sam"
    assert asked.requested_schema["properties"]["size"]["enumNames"] == ["Small", "Medium", "Large"]
    assert _text(url) == "elicited: decline {}"
    assert isinstance(answers.elicited[1], types.ElicitRequestURLParams)


async def test_upstream_log_messages_of_a_call_reach_its_caller(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    answers = Answers()
    hc, client = mcp_client(live.url, keys["crm"], **answers.callbacks())
    async with hc, client:
        result = await client.call_tool("up.log", {"tag": "t"})
    assert _text(result) == "logged"
    assert answers.logs == ["t-1", "t-2", "t-3"]


async def test_a_callers_relayed_requests_and_logs_never_reach_another_caller(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    a, b = Answers(reply="for-a"), Answers(reply="for-b")
    hca, client_a = mcp_client(live.url, keys["crm"], **a.callbacks())
    hcb, client_b = mcp_client(live.url, keys["crm"], **b.callbacks())
    async with hca, client_a, hcb, client_b:
        # A's call is in flight (waiting at the gate) while B's calls log and sample on the same upstream session.
        gated = asyncio.create_task(client_a.call_tool("up.gate", {"name": "a"}))
        await asyncio.wait_for(a.logged.wait(), BOUND_S)
        b_log = await client_b.call_tool("up.log", {"tag": "b"})
        a_sample, b_sample = await asyncio.gather(
            client_a.call_tool("up.sample", {"prompt": "a?"}), client_b.call_tool("up.sample", {"prompt": "b?"})
        )
        await client_b.call_tool("up.open", {"name": "a"})
        passed = await asyncio.wait_for(gated, BOUND_S)
    assert _text(b_log) == "logged"
    assert _text(passed) == "passed"
    assert a.logs == ["a waiting", "a done"]
    assert b.logs == ["b-1", "b-2", "b-3"]
    assert _text(a_sample) == "sampled: for-a (m-1)"
    assert _text(b_sample) == "sampled: for-b (m-1)"
    assert [m.messages[0].content.text for m in a.sampled] == ["a?"]  # type: ignore[union-attr]
    assert [m.messages[0].content.text for m in b.sampled] == ["b?"]  # type: ignore[union-attr]


async def test_a_caller_without_the_capability_makes_the_upstream_get_method_not_found(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    only_sampling = Answers()
    hc, client = mcp_client(live.url, keys["crm"])
    hc2, sampler = mcp_client(live.url, keys["crm"], sampling_callback=only_sampling.sampling)
    async with hc, client, hc2, sampler:
        sampled = await client.call_tool("up.sample", {"prompt": "?"})
        elicited = await client.call_tool("up.ask", {"message": "?"})
        form = await sampler.call_tool("up.ask", {"message": "?"})
        after = await client.call_tool("up.echo", {"text": "still fine"})
    assert sampled.is_error
    assert _text(sampled) == f"refused {types.METHOD_NOT_FOUND}"
    assert _text(elicited) == f"refused {types.METHOD_NOT_FOUND}"
    assert _text(form) == f"refused {types.METHOD_NOT_FOUND}"
    assert _text(after) == "still fine"


async def test_a_2026_client_answers_upstream_requests_in_input_required_rounds(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    answers = Answers(reply="Grace")
    hc, client = modern_client(live.url, keys["crm"], log_level="info", **answers.callbacks())
    async with hc, client:
        assert client.protocol_version == "2026-07-28"
        await client.list_tools()
        sampled = await client.call_tool("up.sample", {"prompt": "modern?"})
        elicited = await client.call_tool("up.ask", {"message": "name?"})
        logged = await client.call_tool("up.log", {"tag": "m"})
    assert _text(sampled) == "sampled: Grace (m-1)"
    assert _text(elicited) == 'elicited: accept {"name": "Grace", "size": "m"}'
    assert _text(logged) == "logged"
    assert answers.logs == ["m-1", "m-2", "m-3"]


async def test_a_2026_client_without_the_capability_gets_the_upstream_refusal(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    hc, client = modern_client(live.url, keys["crm"])
    async with hc, client:
        await client.list_tools()
        sampled = await client.call_tool("up.sample", {"prompt": "?"})
    assert _text(sampled) == f"refused {types.METHOD_NOT_FOUND}"


async def test_a_2026_upstream_asking_in_rounds_is_relayed_to_a_handshake_client(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url, mode="auto")
    answers = Answers(reply="Lin")
    hc, client = mcp_client(live.url, keys["crm"], **answers.callbacks())
    async with hc, client:
        sampled = await client.call_tool("up.sample", {"prompt": "rounds?"})
        elicited = await client.call_tool("up.ask", {"message": "name?"})
    assert live.hub.session("demo-motor-group/up").protocol_version == "2026-07-28"
    assert _text(sampled) == "sampled: Lin (m-1)"
    assert _text(elicited) == 'elicited: accept {"name": "Lin", "size": "m"}'
    assert json.loads(json.dumps(answers.elicited[0].model_dump(mode="json")))["message"] == "name?"


async def test_a_stdio_client_is_asked_through_the_sdks_own_server_requests(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    env = {
        "FORECOURT_DATABASE_URL": live.settings.database_url,
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_MCP_TOKEN": keys[FED_KEY],  # lists the upstream tools (the crm toolset keeps them behind find_tools)
        "FORECOURT_ALLOW_PRIVATE_TARGETS": "true",
        "FORECOURT_LOG_LEVEL": "WARNING",
    }
    answers = Answers(reply="stdio")
    params = StdioServerParameters(command=str(FORECOURT), args=["mcp", "--stdio"], env=env)
    async with Client(params, mode="legacy", **answers.callbacks()) as client:

        async def listed() -> bool:
            return "up.sample" in {t.name for t in (await client.list_tools()).tools}

        await wait_for(listed, BOUND_S)
        sampled = await client.call_tool("up.sample", {"prompt": "pipe?"})
        logged = await client.call_tool("up.log", {"tag": "p"})
    assert _text(sampled) == "sampled: stdio (m-1)"
    assert _text(logged) == "logged"
    assert answers.logs == ["p-1", "p-2", "p-3"]


async def test_a_client_that_never_answers_is_bounded_by_the_calls_timeout_and_the_session_survives(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    response = await live.admin(
        "PUT", "/upstreams/up", keys["admin"], {"url": upstream.url, "mode": "legacy", "timeout_s": 1}
    )
    assert response.status_code == 200, response.text
    await wait_for(lambda: _listed(live, keys))
    asked, release = asyncio.Event(), asyncio.Event()

    async def silent(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        asked.set()
        await asyncio.wait_for(release.wait(), BOUND_S)
        return types.ErrorData(code=types.INTERNAL_ERROR, message="too late")

    hc, client = mcp_client(live.url, keys["crm"], sampling_callback=silent)
    async with hc, client:
        try:
            hung = await client.call_tool("up.sample", {"prompt": "?"})
            after = await client.call_tool("up.echo", {"text": "next"})
            sessions = await client.call_tool("up.sessions", {})
        finally:
            release.set()
    assert asked.is_set()
    assert json.loads(_text(hung))["error"]["code"] == "timeout"
    assert _text(after) == "next"
    assert _text(sessions) == "1"


async def test_a_2026_call_waiting_for_input_cannot_be_continued_by_another_caller(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    answers = Answers(reply="mine")
    hca, client_a = modern_client(live.url, keys["crm"], **answers.callbacks())
    hcb, client_b = modern_client(live.url, keys["bay"], **answers.callbacks())
    async with hca, client_a, hcb, client_b:
        await client_a.list_tools()
        first = await client_a.session.call_tool("up.sample", {"prompt": "?"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        assert first.request_state is not None
        [(key, request)] = first.input_requests.items()
        assert isinstance(request, types.CreateMessageRequest)
        reply = types.CreateMessageResult(role="assistant", content=types.TextContent(text="stolen"), model="x")
        with pytest.raises(MCPError) as refused:
            await client_b.session.call_tool(
                "up.sample",
                {"prompt": "?"},
                input_responses={key: reply},
                request_state=first.request_state,
                allow_input_required=True,
            )
        own = reply.model_copy(update={"content": types.TextContent(text="mine")})
        done = await client_a.session.call_tool(
            "up.sample", {"prompt": "?"}, input_responses={key: own}, request_state=first.request_state
        )
    assert refused.value.code == types.INVALID_PARAMS
    assert _text(done) == "sampled: mine (x)"


async def test_a_request_related_to_no_call_is_refused_even_when_a_callers_call_opened_the_session(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _ready(live, keys, upstream.url)
    upstream.kill()
    await upstream.start()
    a, b = Answers(reply="for-a"), Answers(reply="for-b")
    hca, client_a = mcp_client(live.url, keys["crm"], **a.callbacks())
    hcb, client_b = mcp_client(live.url, keys["crm"], **b.callbacks())
    async with hca, client_a, hcb, client_b:

        async def reopened_by_a() -> bool:  # the pooled session is reopened by A's call, in A's context
            return not (await client_a.call_tool("up.echo", {"text": "a"})).is_error

        await wait_for(reopened_by_a, BOUND_S)

        async def asked_on_the_standalone_stream() -> str:
            return _text(await client_b.call_tool("up.sample_unrelated", {}))

        outcome = await asked_on_the_standalone_stream()
        if outcome == f"refused {types.REQUEST_TIMEOUT}":  # the upstream had not seen the stream open yet
            outcome = await asked_on_the_standalone_stream()
    assert outcome == f"refused {types.METHOD_NOT_FOUND}"
    assert a.sampled == []
    assert b.sampled == []
