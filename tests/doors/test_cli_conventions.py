"""The command line's conventions hold for every command: `--json` wherever data is printed, one verb set for
records (older spellings kept as hidden aliases), exit codes 0 / 1 / 2 as documented, examples in `--help`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from forecourt.cli.main import app
from forecourt.store import upgrade_async

RECORD_VERBS = {"list", "show", "create", "update", "delete"}
OPERATIONS = {
    "serve", "demo", "upgrade", "apply", "export-tenants", "import", "run", "export", "purge", "sink", "http",
    "check", "adf", "mcp", "install-examples", "restore-access", "approve",
}  # fmt: skip
NO_DATA = {"mcp", "crm sink", "db upgrade"}
"""Servers (and every ``... serve``), and the schema migration (one line saying it is done)."""
FIRST_DAY = [
    ["serve"], ["demo"], ["apply"], ["companies", "create"], ["dealerships", "create"], ["members", "create"],
    ["keys", "create"], ["inventory", "import"], ["crm", "http"], ["audit", "export"],
]  # fmt: skip


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = dict(_commands(typer.main.get_command(app)))
VISIBLE = {path: c for path, c in COMMANDS.items() if not c.hidden}
HIDDEN = {path: c for path, c in COMMANDS.items() if c.hidden}


def _options(command: Any) -> set[str]:
    return {o for p in command.params for o in getattr(p, "opts", [])}


def test_every_command_that_prints_data_takes_json() -> None:
    missing = [" ".join(p) for p, c in VISIBLE.items() if "--json" not in _options(c) and p[-1] != "serve"]
    assert sorted(missing) == sorted(NO_DATA)


def test_records_have_one_verb_set_and_other_verbs_name_an_operation() -> None:
    odd = [" ".join(p) for p in VISIBLE if p[-1] not in RECORD_VERBS | OPERATIONS]
    assert odd == []


def test_every_old_spelling_is_a_hidden_alias_of_a_visible_command() -> None:
    visible_callbacks = {c.callback.__wrapped__ for c in VISIBLE.values()}
    assert {" ".join(p) for p in HIDDEN} >= {
        "keys revoke", "operator create-key", "operator list-keys", "operator revoke-key", "admin set-policy",
        "admin set-member", "admin set-dealership", "admin set-adapter", "admin policies", "upstreams add",
        "upstreams remove", "queries upsert", "workflows upload", "knowledge ingest", "inventory feed set",
        "inventory feed remove", "crm mail set", "crm mail remove",
    }  # fmt: skip
    orphans = [" ".join(p) for p, c in HIDDEN.items() if c.callback.__wrapped__ not in visible_callbacks]
    assert [o for o in orphans if not o.startswith("admin ")] == []


@pytest.mark.parametrize("path", FIRST_DAY, ids=" ".join)
def test_first_day_commands_show_an_example_in_their_help(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output
    assert f"forecourt {' '.join(path)}" in " ".join(result.output.split())


def test_exit_codes_are_0_done_1_refused_2_not_understood(tmp_path: Path) -> None:
    db = tmp_path / "forecourt.db"
    asyncio.run(upgrade_async(f"sqlite+aiosqlite:///{db}"))
    env = {"FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    runner = CliRunner()
    done = runner.invoke(app, ["companies", "create", "acme", "--json"], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["id"] == "acme"
    for refused in (["companies", "show", "nope"], ["companies", "create", "acme"], ["dealerships", "show", "x"],
                    ["members", "list", "--company", "nope"], ["audit", "export", "--company", "nope"]):  # fmt: skip
        assert runner.invoke(app, refused, env=env).exit_code == 1, refused
    not_yaml = tmp_path / "not.yaml"
    not_yaml.write_text("profile: [", encoding="utf-8")
    for usage in (["companies", "create"], ["keys", "create", "--company", "acme"], ["demo", "--seed", "-1"],
                  ["apply", str(not_yaml)], ["audit", "export"], ["no-such-command"]):  # fmt: skip
        assert runner.invoke(app, usage, env=env).exit_code == 2, usage


def test_tools_list_prints_one_tool_a_line_for_a_person_and_the_listing_as_json_with_json(tmp_path: Path) -> None:
    db = tmp_path / "forecourt.db"
    asyncio.run(upgrade_async(f"sqlite+aiosqlite:///{db}"))
    env = {"FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    runner = CliRunner()
    assert runner.invoke(app, ["demo", "--vehicles", "1"], env=env).exit_code == 0
    member = ["tools", "list", "--member", "demo-motor-group/crm-agent"]
    text = runner.invoke(app, member, env=env)
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("demo-motor-group/crm-agent: toolset ")
    assert "\n  inventory.search\n" in text.stdout
    listing = json.loads(runner.invoke(app, [*member, "--json"], env=env).stdout)
    assert "inventory.search" in listing["tools"]
    assert text.stdout.rstrip().endswith(f"{len(listing['tools'])} tools")


def test_db_upgrade_says_in_its_help_why_it_is_the_one_command_outside_the_gateway() -> None:
    result = CliRunner().invoke(app, ["db", "upgrade", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "does not go through the gateway" in text
    assert "creates the schema the gateway needs" in text
