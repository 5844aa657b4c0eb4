"""docs/mcp.md lists every MCP tool the catalogue offers (regenerate with the command in the failure)."""

from __future__ import annotations

from pathlib import Path

from forecourt.cli.mcp_doc import current_catalogue
from forecourt.surfaces.mcp.doc import BEGIN, END, TOOLSETS_BEGIN, TOOLSETS_END, tool_table, toolset_table
from forecourt.surfaces.mcp.tools import exposed, tool_name

REGENERATE = ".venv/bin/python -m forecourt.cli.mcp_doc --write docs/mcp.md"
DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def test_the_mcp_doc_lists_every_tool() -> None:
    text = DOC.read_text(encoding="utf-8")
    catalogue = current_catalogue()
    documented = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    missing = [tool_name(a.name) for a in catalogue.all() if exposed(a) and f"`{tool_name(a.name)}`" not in documented]
    assert not missing, f"run: {REGENERATE} (missing {missing})"
    assert documented == tool_table(catalogue), f"run: {REGENERATE}"


def test_the_mcp_doc_lists_the_toolsets_with_their_generated_token_counts() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented = text.split(TOOLSETS_BEGIN, 1)[1].split(TOOLSETS_END, 1)[0].strip()
    assert documented == toolset_table(current_catalogue()), f"run: {REGENERATE}"
