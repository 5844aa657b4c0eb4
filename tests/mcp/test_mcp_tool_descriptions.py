"""Every tool's description is written for a model: what it does, when to use it, and one example call whose
arguments the tool accepts — checked for every Forecourt tool of the catalogue, with no internal jargon."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from forecourt.cli.mcp_doc import current_catalogue
from forecourt.contract import Action
from forecourt.surfaces.mcp.discovery import FIND_TOOLS_TOOL
from forecourt.surfaces.mcp.tools import ToolSet, exposed
from forecourt.surfaces.openapi import self_contained

CATALOGUE = current_catalogue()
TOOLS = ToolSet(CATALOGUE)
ACTIONS = sorted((a for a in CATALOGUE.all() if exposed(a)), key=lambda a: a.name)
WHEN = re.compile(r"(?:^|[.;:)]\s)Use\s")
EXAMPLE = re.compile(r"\sExample: (\{.*\})$")
JARGON = re.compile(r"§|\bseed \d|\benvelope\b|caller\.sessionId|model\.textCompletion|\bforecourt\.[a-z_]+\.|\.py\b")


def _example(description: str) -> dict[str, Any]:
    found = EXAMPLE.search(description)
    assert found, "the description ends with an Example: {...} line"
    value = json.loads(found.group(1))
    assert isinstance(value, dict)
    return value


def _errors(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


def test_the_catalogue_offers_the_tools_these_checks_are_about() -> None:
    assert len(ACTIONS) >= 50
    assert {"inventory.search", "leads.create", "vertex.invokeModel", "aap.lead.submit"} <= {a.name for a in ACTIONS}


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
def test_every_tool_says_what_it_does_when_to_use_it_and_shows_an_example_call_it_accepts(action: Action) -> None:
    tool = TOOLS.tool(action)
    description = tool.description or ""
    assert WHEN.search(description), f"{action.name}: no 'Use ...' sentence"
    example = _example(description)
    assert example == action.example
    assert not _errors(tool.input_schema, example), _errors(tool.input_schema, example)
    assert TOOLS.action_for(tool.name) is action  # as tools/call resolves it
    arguments, _ = TOOLS.prepare(action, dict(example))  # what the gateway validates (AAP `type` added)
    full = self_contained(action.input_schema) if "$ref" in json.dumps(action.input_schema) else action.input_schema
    assert not _errors(dict(full), arguments), _errors(dict(full), arguments)


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
def test_no_tool_definition_carries_internal_jargon(action: Action) -> None:
    text = json.dumps(TOOLS.tool(action).model_dump(mode="json", by_alias=True, exclude_none=True))
    assert not JARGON.search(text), JARGON.findall(text)


def test_find_tools_follows_the_same_rules() -> None:
    description = FIND_TOOLS_TOOL.description or ""
    assert WHEN.search(description)
    assert not _errors(FIND_TOOLS_TOOL.input_schema, _example(description))


def test_an_example_that_breaks_the_schema_is_caught() -> None:
    action = CATALOGUE.get("inventory.get")
    assert action is not None
    full = dict(action.input_schema)
    assert _errors(full, {"vin": "4T1B11HK5KU000001", "stock": "T1234"})  # exactly one of vehicle_id, vin, stock
    assert _errors(TOOLS.tool(action).input_schema, {"vin": 17})
