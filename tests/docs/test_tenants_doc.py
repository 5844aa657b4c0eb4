"""docs/tenants.md is generated from the schema `forecourt apply` validates with (regenerate with the command below)."""

from __future__ import annotations

from pathlib import Path

from forecourt.cli.tenants_doc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "tenants.md"
REGENERATE = ".venv/bin/python -m forecourt.cli.tenants_doc --write docs/tenants.md"


def test_the_committed_tenants_doc_is_the_generated_one() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), f"run: {REGENERATE}"


def test_the_tenants_doc_describes_every_field_of_a_rooftop_and_a_member() -> None:
    text = render()
    for field in ("`timezone`", "`public_agent`", "`crm`", "`allowed_tools`", "`dealerships`", "`scopes`"):
        assert field in text
