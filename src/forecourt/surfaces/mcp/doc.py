"""The tool table of docs/mcp.md, generated from the catalogue.

``python -m forecourt.surfaces.mcp.doc`` prints the table; ``--write docs/mcp.md`` replaces the text between
the ``<!-- tools:begin -->`` and ``<!-- tools:end -->`` markers. A test fails when the doc is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from forecourt.actions.base import Action, Catalogue
from forecourt.surfaces.mcp.tools import exposed, tool_name

BEGIN = "<!-- tools:begin -->"
END = "<!-- tools:end -->"


def _hints(action: Action) -> str:
    hints = ["read-only" if not action.side_effect else ("destructive" if action.destructive else "writes")]
    if action.idempotent:
        hints.append("idempotent")
    return ", ".join(hints)


def tool_table(catalogue: Catalogue) -> str:
    """A Markdown table of every MCP tool: name, title, scope (public or not) and behaviour hints."""
    lines = ["| tool | what it does | scope | hints |", "| --- | --- | --- | --- |"]
    for action in sorted((a for a in catalogue.all() if exposed(a)), key=lambda a: tool_name(a.name)):
        scope = f"`{action.scope}`" + (" (public)" if action.anonymous_allowed else "")
        lines.append(f"| `{tool_name(action.name)}` | {action.title} | {scope} | {_hints(action)} |")
    return "\n".join(lines)


def replace_table(document: str, table: str) -> str:
    """``document`` with the text between the markers replaced by ``table``."""
    head, _, rest = document.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def current_catalogue() -> Catalogue:
    """The catalogue a server built from default settings offers (admin actions included; they are filtered)."""
    from forecourt.bootstrap import build_services
    from forecourt.settings import Settings

    return build_services(Settings(database_url="sqlite+aiosqlite:///:memory:")).catalogue


def main(argv: list[str]) -> int:
    """Print the table, or write it into the file after ``--write``."""
    table = tool_table(current_catalogue())
    if len(argv) == 2 and argv[0] == "--write":
        path = Path(argv[1])
        path.write_text(replace_table(path.read_text(encoding="utf-8"), table), encoding="utf-8")
        return 0
    sys.stdout.write(table + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
