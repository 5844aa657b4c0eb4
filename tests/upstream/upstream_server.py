"""A small, real upstream MCP server for the federation tests (low-level ``mcp.server.Server``).

Run it as a process: ``python upstream_server.py http PORT`` (Streamable HTTP on 127.0.0.1:PORT, path ``/mcp``)
or ``python upstream_server.py stdio``. Tools:

- ``echo {text}``: text content;
- ``add {a, b}``: structured content with an ``outputSchema``;
- ``fail``: a tool-level error (``isError: true``);
- ``sessions``: how many ``initialize`` handshakes this process has seen (the gateway must reuse one session);
- ``grow``: adds a tool ``extra_<n>`` and announces ``notifications/tools/list_changed``;
- ``slow {seconds}``: waits, for timeout tests;
- ``progress``: sends progress 50/100 and 100/100 when the call carries a progress token;
- ``sample {prompt, tools?}``, ``ask {message}``, ``ask_url {url}``: ask the client (sampling, form and URL
  elicitation) during the call and report its answer, or the error code it got (2025-11-25: a request on the
  call's stream; 2026-07-28: ``input_required`` rounds);
- ``sample_unrelated``: a sampling request on the session's standalone stream (related to no call), with a
  2 s timeout; reports the answer or the error code;
- ``log {tag}``: three log messages ``<tag>-1..3`` on the call's stream; ``gate {name}`` logs ``<name> waiting``
  and waits until ``open {name}`` is called, then logs ``<name> done``;
- a tool whose name is 70 characters long (namespacing must shorten it).

Also a resource ``mem://greeting`` and a prompt ``greet``. Logs go to stderr only (stdout is the stdio wire).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import Mount

LONG_TOOL = "an_exceedingly_long_tool_name_that_no_mcp_host_would_accept_as_is_0123"
STATE: dict[str, Any] = {"initialize": 0, "extras": 0}
GATES: dict[str, asyncio.Event] = {}


def _tools() -> list[types.Tool]:
    obj = {"type": "object"}
    tools = [
        types.Tool(
            name="echo",
            description="Echo the text back.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name="add",
            description="Add two integers.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(name="fail", description="Always fails.", input_schema=obj),
        types.Tool(name="sessions", description="Count of initialize handshakes seen.", input_schema=obj),
        types.Tool(name="grow", description="Add a tool and announce it.", input_schema=obj),
        types.Tool(
            name="slow",
            description="Sleep for a while.",
            input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
        ),
        types.Tool(name=LONG_TOOL, description="A tool with a very long name.", input_schema=obj),
        types.Tool(name="progress", description="Reports progress 50/100 then 100/100.", input_schema=obj),
        *_asking_tools(),
    ]
    tools.extend(
        types.Tool(name=f"extra_{i}", description=f"Extra tool {i}.", input_schema=obj)
        for i in range(1, STATE["extras"] + 1)
    )
    tools.extend(_bulk_tools(int(os.environ.get("UPSTREAM_BULK_TOOLS", "0"))))
    return tools


_NOUNS = (
    "issue",
    "ticket",
    "invoice",
    "parts_order",
    "warranty_claim",
    "recall",
    "campaign",
    "coupon",
    "survey",
    "review",
    "floorplan",
    "title",
    "registration",
    "loaner",
    "shuttle",
    "tire",
    "battery",
    "key_fob",
    "detail_job",
    "payroll",
)
_VERBS = ("create", "list", "get", "update", "delete", "close", "assign", "export", "archive", "search")


def _bulk_tools(count: int) -> list[types.Tool]:
    """``count`` plainly named tools (``create_issue``, ``list_ticket``, ...): a big catalogue to search."""
    obj = {"type": "object", "properties": {"id": {"type": "string"}}}
    pairs = [(verb, noun) for noun in _NOUNS for verb in _VERBS][:count]
    return [
        types.Tool(
            name=f"{verb}_{noun}",
            description=f"{verb.capitalize()} a {noun.replace('_', ' ')} in the dealer back office.",
            input_schema=obj,
            annotations=types.ToolAnnotations(read_only_hint=verb in ("list", "get", "search", "export")),
        )
        for verb, noun in pairs
    ]


def _asking_tools() -> list[types.Tool]:
    def schema(**props: str) -> dict[str, Any]:
        return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}}

    return [
        types.Tool(name="sample", description="Asks the client's model.", input_schema=schema(prompt="string")),
        types.Tool(name="ask", description="Asks the user (form).", input_schema=schema(message="string")),
        types.Tool(name="ask_url", description="Asks the user (URL).", input_schema=schema(url="string")),
        types.Tool(name="sample_unrelated", description="Asks outside the call.", input_schema=schema()),
        types.Tool(name="log", description="Logs three messages.", input_schema=schema(tag="string")),
        types.Tool(name="gate", description="Waits for open.", input_schema=schema(name="string")),
        types.Tool(name="open", description="Opens a gate.", input_schema=schema(name="string")),
    ]


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your name", "default": "Sam"},
        "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]},
    },
    "required": ["name"],
}


def _input_request(name: str, args: dict[str, Any]) -> types.InputRequest:
    if name == "sample":
        message = types.SamplingMessage(role="user", content=types.TextContent(text=str(args.get("prompt", ""))))
        return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=50))
    if name == "ask":
        return types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=str(args.get("message", "")), requested_schema=FORM)
        )
    return types.ElicitRequest(
        params=types.ElicitRequestURLParams(message="Open this", url=str(args.get("url")), elicitation_id="e-1")
    )


def _report(answer: Any) -> types.CallToolResult:
    if isinstance(answer, types.CreateMessageResult):
        assert isinstance(answer.content, types.TextContent)
        return _text(f"sampled: {answer.content.text} ({answer.model})")
    return _text(f"elicited: {answer.action} {json.dumps(answer.content or {}, sort_keys=True)}")


async def _ask(
    ctx: ServerRequestContext[Any], name: str, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    args = dict(params.arguments or {})
    request = _input_request(name, args)
    result_type: type[Any] = types.CreateMessageResult if name == "sample" else types.ElicitResult
    if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:  # no requests to the client: a round
        if not params.input_responses:
            return types.InputRequiredResult(input_requests={"q": request}, request_state="asked")
        answer = result_type.model_validate(params.input_responses["q"].model_dump(by_alias=True, mode="json"))
        return _report(answer)
    try:
        answer = await ctx.session.send_request(
            request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    except MCPError as exc:
        return _text(f"refused {exc.code}", error=True)
    return _report(answer)


async def _log(ctx: ServerRequestContext[Any], data: str) -> None:
    note = types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(level="info", data=data))
    await ctx.session.send_notification(note, related_request_id=ctx.request_id)


async def _logging(ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]) -> types.CallToolResult:
    if name == "log":
        for i in (1, 2, 3):
            await _log(ctx, f"{args.get('tag')}-{i}")
        return _text("logged")
    gate = GATES.setdefault(str(args.get("name")), asyncio.Event())
    if name == "open":
        gate.set()
        return _text("opened")
    await _log(ctx, f"{args.get('name')} waiting")
    await asyncio.wait_for(gate.wait(), 20)
    await _log(ctx, f"{args.get('name')} done")
    return _text("passed")


async def _timed(ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]) -> types.CallToolResult:
    if name == "slow":
        await anyio.sleep(float(args.get("seconds", 5)))
        return _text("done")
    meta = ctx.meta or {}
    token = meta.get("progressToken", meta.get("progress_token"))
    if token is not None:
        for done in (50, 100):
            await ctx.session.send_progress_notification(token, done, 100, related_request_id=ctx.request_id)
    return _text("progressed")


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    args = dict(params.arguments or {})
    name = params.name
    if name in ("sample", "ask", "ask_url"):
        return await _ask(ctx, name, params)
    if name == "sample_unrelated":
        try:
            answer = await ctx.session.send_request(
                _input_request("sample", {"prompt": "unrelated"}), types.CreateMessageResult, 2.0
            )
        except MCPError as exc:
            return _text(f"refused {exc.code}", error=True)
        return _report(answer)
    if name in ("log", "gate", "open"):
        return await _logging(ctx, name, args)
    if name == "echo":
        return _text(str(args.get("text", "")))
    if name == "add":
        total = int(args["a"]) + int(args["b"])
        return types.CallToolResult(content=[types.TextContent(text=str(total))], structured_content={"sum": total})
    if name == "fail":
        return _text("this tool always fails", error=True)
    if name == "sessions":
        return _text(str(STATE["initialize"]))
    if name == "grow":
        STATE["extras"] += 1
        await ctx.session.send_tool_list_changed()
        return _text(f"extra_{STATE['extras']}")
    if name in ("slow", "progress"):
        return await _timed(ctx, name, args)
    if name == LONG_TOOL or name.startswith("extra_") or name.split("_", 1)[0] in _VERBS:
        return _text(name)
    return _text(f"unknown tool {name}", error=True)


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
) -> types.ListResourcesResult:
    resource = types.Resource(uri="mem://greeting", name="greeting", description="A greeting.", mime_type="text/plain")
    return types.ListResourcesResult(resources=[resource])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    if str(params.uri) != "mem://greeting":
        raise MCPError(-32002, "Resource not found")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri="mem://greeting", mime_type="text/plain", text="hello from upstream")]
    )


async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> types.ListPromptsResult:
    prompt = types.Prompt(
        name="greet",
        description="Greet someone.",
        arguments=[types.PromptArgument(name="who", required=True)],
    )
    return types.ListPromptsResult(prompts=[prompt])


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
    who = (params.arguments or {}).get("who", "you")
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=f"Hi {who}"))]
    )


async def count_handshakes(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    if ctx.method == "initialize":
        STATE["initialize"] += 1
    return await call_next(ctx)


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "upstream-test",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    server.middleware.append(count_handshakes)
    return server


def run_http(port: int) -> None:
    server = build_server()
    mcp_app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    app = Starlette(routes=[Mount("/", app=mcp_app)], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


async def run_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1] == "http":
        run_http(int(sys.argv[2]))
    else:
        asyncio.run(run_stdio())
