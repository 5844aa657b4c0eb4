"""The tool and toolset tables of docs/mcp.md, generated from the catalogue.

``python -m forecourt.cli.mcp_doc`` prints the tables; ``--write docs/mcp.md`` replaces the text between
the ``<!-- tools:begin -->`` and ``<!-- tools:end -->`` markers (and ``toolsets:``). A test fails when the doc
is out of date. Toolset sizes are the ``tools/list`` of a member allowed every tool, counted in cl100k_base and
o200k_base.
"""

from __future__ import annotations

from forecourt.actions.toolsets import TOOLSETS, in_toolset
from forecourt.contract import Action, Catalogue
from forecourt.surfaces.mcp.tokens import measure
from forecourt.surfaces.mcp.tools import ToolSet, exposed, tool_name

BEGIN = "<!-- tools:begin -->"
END = "<!-- tools:end -->"
TOOLSETS_BEGIN = "<!-- toolsets:begin -->"
TOOLSETS_END = "<!-- toolsets:end -->"


def _hints(action: Action) -> str:
    hints = ["read-only" if not action.side_effect else ("destructive" if action.destructive else "writes")]
    if action.idempotent:
        hints.append("idempotent")
    return ", ".join(hints)


def tool_table(catalogue: Catalogue) -> str:
    """A Markdown table of every MCP tool: name, LLM-safe name, title, scope (public or not) and hints."""
    toolset = ToolSet(catalogue)
    lines = ["| tool | `?names=llm` | what it does | scope | hints |", "| --- | --- | --- | --- | --- |"]
    for action in sorted((a for a in catalogue.all() if exposed(a)), key=lambda a: tool_name(a.name)):
        scope = f"`{action.scope}`" + (" (public)" if action.anonymous_allowed else "")
        safe = toolset.name_of(action, "llm")
        lines.append(f"| `{tool_name(action.name)}` | `{safe}` | {action.title} | {scope} | {_hints(action)} |")
    return "\n".join(lines)


def toolset_table(catalogue: Catalogue) -> str:
    """A Markdown table of the role toolsets: tool count, ``tools/list`` bytes and tokens, LLM-safe names."""
    toolset = ToolSet(catalogue)
    lines = [
        "| toolset | tools | bytes | tokens (cl100k_base) | tokens (o200k_base) | tools (`?names=llm`) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in TOOLSETS:
        tools = toolset.tools((a for a in catalogue.all() if exposed(a) and in_toolset(a, name)), "llm")
        size = measure(tools)
        shown = ", ".join(f"`{t.name}`" for t in tools) if name != "admin" else "every tool"
        tokens = size["tokens"]
        counts = f"{tokens['cl100k_base']:,} | {tokens['o200k_base']:,}"
        lines.append(f"| `{name}` | {size['tools']} | {size['bytes']:,} | {counts} | {shown} |")
    return "\n".join(lines)


def replace_table(document: str, table: str, begin: str = BEGIN, end: str = END) -> str:
    """``document`` with the text between the markers replaced by ``table``."""
    head, _, rest = document.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{table}\n{end}{tail}"


def render(document: str, catalogue: Catalogue) -> str:
    """``document`` with both generated tables brought up to date."""
    document = replace_table(document, tool_table(catalogue))
    if TOOLSETS_BEGIN in document:
        document = replace_table(document, toolset_table(catalogue), TOOLSETS_BEGIN, TOOLSETS_END)
    return document
