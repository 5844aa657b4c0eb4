"""Onboarding from the command line: each command is an audited operator call, errors name the missing parent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from forecourt.store import upgrade_async

from .conftest import EXAMPLE, example


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "forecourt.db"
    asyncio.run(upgrade_async(f"sqlite+aiosqlite:///{path}"))
    return path


_LOG_LINE = re.compile(r'"level": "|^\S+ \S+ (DEBUG|INFO|WARNING) ', re.MULTILINE)


def _cli(db: Path, *args: str) -> Any:
    env = {"FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "FORECOURT_LOG_LEVEL": "INFO"}
    return CliRunner().invoke(cli, list(args), env=env)


def _ok(db: Path, *args: str) -> Any:
    result = _cli(db, *args)
    assert result.exit_code == 0, result.output
    assert not _LOG_LINE.search(result.output)  # no log lines without --verbose
    return json.loads(result.stdout) if "--json" in args else result.stdout


def _audit(db: Path) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM audit_records ORDER BY occurred_at, id")]


def test_a_group_is_onboarded_record_by_record_and_every_step_is_audited_as_the_operator(db: Path) -> None:
    assert _ok(db, "companies", "create", "acme-auto", "--name", "Acme Auto", "--json")["profile_id"] == "acme-auto"
    _ok(db, "dealerships", "create", "acme-toyota", "--company", "acme-auto", "--name", "Acme Toyota",
        "--timezone", "America/Chicago", "--city", "Austin", "--brand", "Toyota", "--json")  # fmt: skip
    member = _ok(db, "members", "create", "crm", "--company", "acme-auto", "--name", "CRM",
                 "--dealership", "acme-toyota", "--scope", "amcp:inventory:read", "--json")  # fmt: skip
    assert member["dealership_ids"] == ["acme-toyota"]
    listed = _ok(db, "companies", "list", "--json")["items"]
    assert [(c["id"], c["dealerships"]) for c in listed] == [("acme-auto", 1)]
    assert "acme-toyota" in _ok(db, "companies", "show", "acme-auto")
    changed = _ok(db, "dealerships", "update", "acme-toyota", "--company", "acme-auto", "--private-agent", "--json")
    assert changed["public_agent"] is False
    assert changed["address"]["city"] == "Austin"  # fields not named stay
    assert _ok(db, "members", "update", "crm", "--company", "acme-auto", "--inactive", "--json")["active"] is False
    assert [m["id"] for m in _ok(db, "members", "list", "--company", "acme-auto", "--json")["items"]] == ["crm"]
    assert [d["id"] for d in _ok(db, "dealerships", "list", "--json")["items"]] == ["acme-toyota"]
    _ok(db, "companies", "update", "acme-auto", "--name", "Acme Automotive")
    assert _ok(db, "dealerships", "show", "acme-toyota", "--json")["timezone"] == "America/Chicago"
    assert "amcp:inventory:read" in _ok(db, "members", "show", "crm", "--company", "acme-auto")
    records = [r for r in _audit(db) if r["company_id"] == "acme-auto"]
    assert {r["action"] for r in records} >= {
        "admin.companies.create",
        "admin.dealerships.create",
        "admin.members.create",
        "admin.dealerships.update",
        "admin.members.update",
        "admin.companies.update",
    }
    assert {(r["member_id"], r["surface"], r["result_class"]) for r in records} == {("operator", "cli", "ok")}


def test_a_missing_parent_is_named_with_the_command_that_creates_it(db: Path, tmp_path: Path) -> None:
    orphan = _cli(db, "dealerships", "create", "x", "--company", "ghost", "--name", "X", "--timezone", "UTC")
    assert orphan.exit_code == 1  # refused
    assert "tenancy.company_not_found" in orphan.output
    assert "forecourt companies create ghost" in orphan.output
    record = tmp_path / "dealership.json"
    record.write_text(json.dumps({"id": "x", "name": "X"}), encoding="utf-8")
    legacy = _cli(db, "admin", "set-dealership", str(record), "--company", "ghost")
    assert legacy.exit_code == 1  # refused
    assert "tenancy.company_not_found" in legacy.output
    assert "internal_error" not in legacy.output
    _ok(db, "companies", "create", "acme-auto")
    stray = _cli(db, "members", "create", "m", "--company", "acme-auto", "--name", "M", "--dealership", "nowhere")
    assert stray.exit_code == 1  # refused
    assert "tenancy.dealership_not_found" in stray.output
    bad_zone = _cli(db, "dealerships", "create", "y", "--company", "acme-auto", "--name", "Y", "--timezone", "Mars/X")
    assert bad_zone.exit_code == 1  # refused
    assert "dealership.timezone" in bad_zone.output
    assert "Traceback" not in orphan.output + legacy.output + stray.output + bad_zone.output


def test_apply_prints_the_plan_applies_once_and_an_export_applies_back_unchanged(db: Path, tmp_path: Path) -> None:
    assert "would create 10, change 0, delete 0" in _ok(db, "apply", str(EXAMPLE), "--dry-run")
    assert _ok(db, "companies", "list", "--json")["items"] == []
    applied = _ok(db, "apply", str(EXAMPLE))
    assert "+ create dealership lonestar-used-sanmarcos (lonestar-motors)" in applied
    assert "no changes" in _ok(db, "apply", str(EXAMPLE))
    exported = tmp_path / "exported.yaml"
    _ok(db, "export-tenants", "--profile", "lonestar", "--output", str(exported))
    assert yaml.safe_load(exported.read_text(encoding="utf-8"))["profile"]["id"] == "lonestar"
    assert _ok(db, "apply", str(exported), "--json")["changes"] == 0
    assert {r["action"] for r in _audit(db) if r["member_id"] == "operator"} >= {
        "admin.tenants.apply",
        "admin.tenants.export",
    }


def test_an_invalid_file_lists_every_problem_with_its_path_and_writes_nothing(db: Path, tmp_path: Path) -> None:
    data = example()
    data["companies"][0]["rooftops"][0]["timezone"] = "Nowhere/Zone"
    data["companies"][0]["members"][0]["dealerships"] = ["elsewhere"]
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = _cli(db, "apply", str(broken))
    assert result.exit_code == 1  # refused; a file that is not YAML at all is a usage error (2)
    assert "tenants.invalid_file" in result.output
    assert "companies[0].rooftops[0].timezone" in result.output
    assert "companies[0].members[0].dealerships[0]" in result.output
    assert _ok(db, "companies", "list", "--json")["items"] == []
    not_yaml = tmp_path / "not.yaml"
    not_yaml.write_text("profile: [unclosed", encoding="utf-8")
    unreadable = _cli(db, "apply", str(not_yaml))
    assert unreadable.exit_code == 2
    assert "not valid YAML at line 1" in unreadable.output


def test_operator_keys_are_shown_once_listed_by_prefix_and_revoked(db: Path) -> None:
    made = _ok(db, "operator", "create-key", "--name", "alice", "--json")
    assert made["key"].startswith("fco_")
    listed = _ok(db, "operator", "list-keys", "--json")["items"]
    assert [(k["prefix"], k["name"]) for k in listed] == [(made["prefix"], "alice")]
    assert made["key"] not in json.dumps(listed)
    _ok(db, "operator", "revoke-key", made["prefix"])
    assert _ok(db, "operator", "list-keys", "--json")["items"][0]["revoked_at"] is not None
    taken = _cli(db, "operator", "create-key", "--name", "alice")
    assert taken.exit_code == 1  # refused
    assert "already_exists" in taken.output


def test_version_and_absurd_numbers_are_answered_in_one_line(db: Path) -> None:
    version = _cli(db, "--version")
    assert version.exit_code == 0
    assert version.stdout.startswith("forecourt ")
    for args in (["demo", "--vehicles", "-5"], ["demo", "--seed", "-1"], ["serve", "--workers", "0"]):
        refused = _cli(db, *args)
        assert refused.exit_code == 2, args
        assert len(refused.output.strip().splitlines()) == 1, refused.output
        assert args[1] in refused.output


def test_the_verbose_flag_lets_a_command_print_its_log_lines(db: Path) -> None:
    _ok(db, "companies", "create", "acme-auto")
    _ok(db, "members", "create", "crm", "--company", "acme-auto", "--name", "CRM")
    quiet = _cli(db, "keys", "create", "--company", "acme-auto", "--member", "crm", "--json")
    assert quiet.exit_code == 0
    assert "created API key" not in quiet.output
    loud = _cli(db, "--verbose", "keys", "create", "--company", "acme-auto", "--member", "crm", "--json")
    assert loud.exit_code == 0
    assert "created API key" in loud.output  # the service's INFO line, in the process's log format


def test_a_one_shot_command_runs_no_background_loop_beside_its_own_call(db: Path) -> None:
    from forecourt.cli.common import services_for
    from forecourt.settings import Settings

    async def started() -> tuple[int, int]:
        settings = Settings.load(None, database_url=f"sqlite+aiosqlite:///{db}")
        async with services_for(settings) as services:
            return len(services.background), len(services.tasks)

    registered, running = asyncio.run(started())
    assert registered > 0  # a serving process would run these
    assert running == 0
