"""`forecourt inventory import` and `forecourt inventory feed`: reports, JSON progress lines, exit codes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.store import open_store_url, upgrade_async

from .conftest import DEALER, FEEDS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"

    async def prepare() -> None:
        await upgrade_async(url)
        store = open_store_url(url)
        try:
            async with store.transaction() as uow:
                await uow.tenancy.upsert_profile(Profile(id="p", name="Profile"))
                await uow.tenancy.upsert_company(Company(id="c", profile_id="p", name="Company"))
                await uow.tenancy.upsert_dealership(Dealership(id=DEALER, company_id="c", name="Dealer"))
        finally:
            await store.close()

    asyncio.run(prepare())
    return {"FORECOURT_DATABASE_URL": url, "FORECOURT_LOG_LEVEL": "WARNING"}


def test_json_import_prints_the_report_on_stdout_and_progress_lines_on_stderr(env: dict[str, str]) -> None:
    args = ["inventory", "import", str(FEEDS / "bad_rows.csv"), "--dealership", DEALER, "--json"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1  # some rows were rejected
    report = json.loads(result.stdout)
    assert (report["created"], report["rejected"]) == (2, 8)
    assert all(row["errors"] for row in report["rejected_rows"])
    progress = [json.loads(line) for line in result.stderr.splitlines() if line.startswith('{"event"')]
    assert progress
    assert progress[-1]["done"] == progress[-1]["total"] == 10
    assert set(progress[-1]) == {"event", "unit", "done", "total", "rate", "eta_s"}


def test_a_dry_run_prints_a_table_of_every_error_and_writes_nothing(env: dict[str, str]) -> None:
    args = ["inventory", "import", str(FEEDS / "bad_rows.csv"), "--dealership", DEALER, "--dry-run"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1
    assert "would be created 2" in result.stdout
    assert "unknown_condition" in result.stdout
    assert "salvage" not in result.stdout  # the value class, never the value
    again = CliRunner().invoke(cli, [*args[:-1], "--json"], env=env)
    assert json.loads(again.stdout)["created"] == 2  # nothing was written by the dry run


def test_an_unusable_feed_exits_2_with_its_error_code(env: dict[str, str], tmp_path: Path) -> None:
    feed = tmp_path / "broken.json"
    feed.write_text('[{"vin": "4T1DAACKXSU100101", "year": 20', encoding="utf-8")
    result = CliRunner().invoke(cli, ["inventory", "import", str(feed), "--dealership", DEALER], env=env)
    assert result.exit_code == 2
    assert "inventory.import_rejected" in result.stderr


def test_feed_commands_refuse_a_plain_http_url_and_report_a_missing_feed(env: dict[str, str]) -> None:
    runner = CliRunner()
    saved = runner.invoke(cli, ["inventory", "feed", "set", "--dealership", DEALER, "--url",
                                "http://dms.example.com/feed.csv"], env=env)  # fmt: skip
    assert saved.exit_code == 1  # refused
    assert "net.unsafe_target" in saved.stderr
    shown = runner.invoke(cli, ["inventory", "feed", "show", "--dealership", DEALER], env=env)
    assert shown.exit_code == 1  # refused
    assert "inventory.feed_not_found" in shown.stderr
