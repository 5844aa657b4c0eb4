"""``python -m forecourt.cli.mcp_doc [--write docs/mcp.md]``: docs/mcp.md's tool and toolset tables.

The tables are made by :mod:`forecourt.surfaces.mcp.doc` from the catalogue a server built from default settings
offers; building that server is bootstrap's work, so the command lives here, above it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from forecourt.contract import Catalogue
from forecourt.surfaces.mcp.doc import render, tool_table, toolset_table


def current_catalogue() -> Catalogue:
    """The catalogue a server built from default settings offers (admin actions included; they are filtered)."""
    from forecourt.bootstrap import build_services
    from forecourt.settings import Settings

    return build_services(Settings(database_url="sqlite+aiosqlite:///:memory:")).catalogue


def main(argv: list[str]) -> int:
    """Print the tables, or write them into the file after ``--write``."""
    catalogue = current_catalogue()
    if len(argv) == 2 and argv[0] == "--write":
        path = Path(argv[1])
        path.write_text(render(path.read_text(encoding="utf-8"), catalogue), encoding="utf-8")
        return 0
    sys.stdout.write(tool_table(catalogue) + "\n\n" + toolset_table(catalogue) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
