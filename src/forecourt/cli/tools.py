"""``forecourt tools list``: the MCP tools a member is offered, with their size in bytes and tokens.

The listing is the one the member's host gets from a serving replica: Forecourt's tools of its toolset, its
company's upstream servers' tools (connected here first), and behind ``find_tools`` what does not fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import ConfigOption, load_settings, run, services_for
from forecourt.settings import Settings

tools_app = typer.Typer(help="The MCP tools members are offered.", no_args_is_help=True)


async def connect_upstreams(hub: Any, company: str) -> None:
    """Connect to ``company``'s upstream MCP servers and install their tools, as a serving replica has.

    A one-shot command runs no sync loop, so without this the listing would hold none of the upstream tools the
    member really gets. An upstream that cannot be reached is left out (the server would not list it either).
    """
    await hub.load()
    for key in [k for k in hub.sessions if k.split("/", 1)[0] == company]:
        await hub.refresh(key)


async def member_tools(settings: Settings, company: str, member: str, names: str | None, tokens: bool) -> Any:
    """What ``tools/list`` shows ``company/member`` (its toolset, policy and naming mode), optionally measured."""
    from forecourt.gateway.auth.devmode import configured_member
    from forecourt.gateway.base import Credentials
    from forecourt.surfaces.mcp.caller import Caller
    from forecourt.surfaces.mcp.listing import ToolListing

    async with services_for(settings) as services:
        principal = await configured_member(services.store, f"{company}/{member}")
        if services.upstreams is not None:
            await connect_upstreams(services.upstreams, company)
        # The MCP surface's own listing, without the SDK's server: the command serves nothing. Names alone need no
        # tool definitions (nor the protocol's types); measuring them does.
        listing = ToolListing(services.gateway, settings)
        caller = Caller(principal, Credentials(), "mcp", names=names)
        if tokens:
            from forecourt.surfaces.mcp.tokens import measure

            listed: dict[str, Any] = measure(await listing.listed_tools(caller))
        else:
            listed = {"tools": await listing.listed_names(caller)}
        policies = await services.gateway.tenancy.policies(company)
    toolset = principal.member.toolset if principal.member is not None else None
    result: dict[str, Any] = {"member": f"{company}/{member}", "toolset": toolset or "(all)"}
    restricting = {p.id: list(p.toolsets) for p in policies if p.toolsets}
    if restricting:  # what the company's policies offer; the member's own toolset narrows it (docs/mcp.md)
        result["policy_toolsets"] = restricting
    result.update(listed)
    return result


@tools_app.command("list")
def tools_list(
    member: str = typer.Option(..., "--member", help="Member id (or company/member)."),
    company: str | None = typer.Option(None, "--company", help="Company id (default: the one in --member)."),
    names: str | None = typer.Option(None, "--names", help="llm: list LLM-safe names, as /mcp?names=llm does."),
    tokens: bool = typer.Option(
        False, "--tokens", help="Measure the tools/list: bytes, and tokens in cl100k_base and o200k_base."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the listing (or the measurement) as one JSON object."),
    config: Path | None = ConfigOption,
) -> None:
    """List the MCP tools a member is offered (``--tokens``: with bytes and tokens, per tool and in total).

    Example: forecourt tools list --member demo-motor-group/crm-agent --tokens
    """
    settings = load_settings(config)
    if company is None:
        company, _, member = member.rpartition("/")
    if not company:
        raise typer.BadParameter("give --company or --member COMPANY/MEMBER", param_hint="--member")
    result = run(lambda: member_tools(settings, company, member, names, tokens))
    typer.echo(json.dumps(result, indent=2) if as_json else render(result))


def render(result: dict[str, Any]) -> str:
    """The listing for a person: the member, its toolset, then one tool a line (with bytes and tokens if measured)."""
    lines = [f"{result['member']}: toolset {result['toolset']}"]
    for policy, toolsets in result.get("policy_toolsets", {}).items():
        lines.append(f"policy {policy} offers toolsets {', '.join(toolsets)}")
    if "per_tool" not in result:
        lines += [f"  {name}" for name in result["tools"]]
        lines.append(f"{len(result['tools'])} tools")
        return "\n".join(lines)
    encodings = sorted(result["tokens"])
    width = max([len(t["name"]) for t in result["per_tool"]] + [4])
    lines.append(f"  {'tool':<{width}} {'bytes':>7} " + " ".join(f"{e:>12}" for e in encodings))
    for tool in result["per_tool"]:
        counts = " ".join(f"{tool['tokens'][e]:>12}" for e in encodings)
        lines.append(f"  {tool['name']:<{width}} {tool['bytes']:>7} {counts}")
    counts = " ".join(f"{result['tokens'][e]:>12}" for e in encodings)
    lines.append(f"  {'total (' + str(result['tools']) + ' tools)':<{width}} {result['bytes']:>7} {counts}")
    return "\n".join(lines)
