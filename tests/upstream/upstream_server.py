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
- a tool whose name is 70 characters long (namespacing must shorten it).

Also a resource ``mem://greeting`` and a prompt ``greet``. Logs go to stderr only (stdout is the stdio wire).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount

LONG_TOOL = "an_exceedingly_long_tool_name_that_no_mcp_host_would_accept_as_is_0123"
STATE: dict[str, Any] = {"initialize": 0, "extras": 0}


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
    ]
    tools.extend(
        types.Tool(name=f"extra_{i}", description=f"Extra tool {i}.", input_schema=obj)
        for i in range(1, STATE["extras"] + 1)
    )
    return tools


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = dict(params.arguments or {})
    name = params.name
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
    if name == "slow":
        await anyio.sleep(float(args.get("seconds", 5)))
        return _text("done")
    if name == "progress":
        meta = ctx.meta or {}
        token = meta.get("progressToken", meta.get("progress_token"))
        if token is not None:
            for done in (50, 100):
                await ctx.session.send_progress_notification(token, done, 100, related_request_id=ctx.request_id)
        return _text("progressed")
    if name == LONG_TOOL or name.startswith("extra_"):
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
        from mcp import MCPError

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
