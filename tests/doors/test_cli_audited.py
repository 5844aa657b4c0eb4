"""The command line writes through the gateway as the operator: every write and every read of customer data is
an audit record under the company of the rooftop it touched, and ``audit export`` exports it (``--platform`` for
the operator's calls that concerned no one company)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from gateway.support import HONDA, MOTOR, TOYOTA, Template

FEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "feeds"


@pytest.fixture
def db(doors_template: Template, tmp_path: Path) -> Path:
    """A private copy of the demo database."""
    return doors_template.copy_to(tmp_path)


def _cli(db: Path, *args: str) -> Any:
    env = {"FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "FORECOURT_ALLOW_PRIVATE_TARGETS": "true"}
    return CliRunner().invoke(cli, list(args), env=env)


def _ok(db: Path, *args: str) -> Any:
    result = _cli(db, *args)
    assert result.exit_code == 0, result.output
    return result


def _rows(db: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, params)]


def _cli_records(db: Path) -> list[dict[str, Any]]:
    return _rows(db, "SELECT * FROM audit_records WHERE surface = 'cli' ORDER BY occurred_at, id")


def test_every_write_the_cli_makes_is_an_audited_operator_call_under_the_rooftops_company(db: Path) -> None:
    _ok(db, "inventory", "import", str(FEEDS / "canonical.csv"), "--dealership", TOYOTA)
    _ok(db, "crm", "http", "--dealership", TOYOTA, "--url", "http://127.0.0.1:9/adf")
    _ok(db, "crm", "mail", "set", "--dealership", HONDA, "--to", "leads@crm.example.com", "--host", "127.0.0.1",
        "--from", "forecourt@example.com", "--security", "none")  # fmt: skip
    _ok(db, "crm", "mail", "delete", "--dealership", HONDA)
    _ok(db, "inventory", "feed", "set", "--dealership", TOYOTA, "--url", "http://127.0.0.1:9/feed.csv")
    _ok(db, "inventory", "feed", "delete", "--dealership", TOYOTA)
    _ok(db, "queries", "install-examples", "--company", MOTOR)
    records = _cli_records(db)
    assert [r["action"] for r in records] == [
        "admin.inventory.import",
        "admin.crm.endpoint.set",
        "admin.crm.mail.set",
        "admin.crm.mail.remove",
        "admin.inventory.feed.set",
        "admin.inventory.feed.remove",
        "admin.queries.install_examples",
    ]
    assert {(r["member_id"], r["company_id"], r["result_class"]) for r in records} == {("operator", MOTOR, "ok")}
    assert [r["dealership_id"] for r in records[:4]] == [TOYOTA, TOYOTA, HONDA, HONDA]
    imported = json.loads(records[0]["args_redacted"])
    assert imported["feed_base64"].endswith("characters]")  # the feed's size, never its content


def test_a_refused_cli_write_is_audited_too_and_exits_1(db: Path) -> None:
    refused = _cli(db, "crm", "http", "--dealership", TOYOTA, "--url", "ftp://crm.example.com/adf")
    assert refused.exit_code == 1, refused.output
    assert "error invalid_params" in refused.output
    assert "/url: [unsafe_url]" in refused.output  # the rule the admin API names for a rooftop's crm_endpoint
    assert [(r["action"], r["result_class"]) for r in _cli_records(db)] == [("admin.crm.endpoint.set", "error")]


def test_reading_a_leads_adf_is_audited_as_a_read_of_that_rooftop(db: Path) -> None:
    lead_id = _rows(db, "SELECT id FROM leads WHERE dealership_id = ? ORDER BY id LIMIT 1", TOYOTA)[0]["id"]
    adf = _ok(db, "leads", "adf", lead_id)
    assert adf.stdout.startswith("<?xml")
    as_json = json.loads(_ok(db, "leads", "adf", lead_id, "--json").stdout)
    assert as_json["adf"] == adf.stdout
    reads = [r for r in _cli_records(db) if r["action"] == "admin.leads.adf"]
    assert [(r["member_id"], r["company_id"], r["dealership_id"]) for r in reads] == [("operator", MOTOR, TOYOTA)] * 2
    by_rooftop = _ok(db, "leads", "adf", lead_id, "--dealership", TOYOTA)
    assert by_rooftop.stdout == adf.stdout


def test_audit_export_of_an_unknown_company_is_an_error_and_platform_records_have_their_own_export(db: Path) -> None:
    unknown = _cli(db, "audit", "export", "--company", "nope")
    assert unknown.exit_code == 1
    assert "company nope does not exist" in unknown.output
    assert unknown.stdout == ""
    neither = _cli(db, "audit", "export")
    assert neither.exit_code == 2
    _ok(db, "companies", "list")  # the operator above every company: a platform record
    _ok(db, "companies", "show", MOTOR)
    platform = [json.loads(line) for line in _ok(db, "audit", "export", "--platform").stdout.splitlines()]
    assert [(r["action"], r["member_id"], r["company_id"]) for r in platform] == [
        ("admin.companies.list", "operator", None)
    ]
    company = [json.loads(line) for line in _ok(db, "audit", "export", "--company", MOTOR).stdout.splitlines()]
    assert "admin.companies.show" in [r["action"] for r in company]
    assert "admin.companies.list" not in [r["action"] for r in company]


def test_an_apply_is_audited_under_the_company_of_its_file_and_a_file_of_several_under_the_platform(
    db: Path, tmp_path: Path
) -> None:
    import yaml

    def company(company_id: str) -> dict[str, Any]:
        rooftop = {"id": f"{company_id}-store", "name": "Store", "timezone": "America/Chicago"}
        return {"id": company_id, "name": company_id, "rooftops": [rooftop]}

    one, several = tmp_path / "one.yaml", tmp_path / "several.yaml"
    one.write_text(yaml.safe_dump({"profile": {"id": "p1", "name": "P1"}, "companies": [company("solo-co")]}))
    several.write_text(yaml.safe_dump({"profile": {"id": "p2", "name": "P2"},
                                       "companies": [company("a-co"), company("b-co")]}))  # fmt: skip
    _ok(db, "apply", str(one))
    _ok(db, "apply", str(several))
    applied = [(r["company_id"], r["member_id"]) for r in _cli_records(db) if r["action"] == "admin.tenants.apply"]
    assert applied == [("solo-co", "operator"), (None, "operator")]
    platform = [json.loads(line) for line in _ok(db, "audit", "export", "--platform").stdout.splitlines()]
    assert [r["action"] for r in platform] == ["admin.tenants.apply"]


def test_audit_purge_is_an_audited_operator_call_under_its_company_and_an_unknown_company_is_refused(db: Path) -> None:
    purged = json.loads(_ok(db, "audit", "purge", "--company", MOTOR, "--json").stdout)
    assert purged == {"company_id": MOTOR, "purged": 0}  # the demo's records are all recent
    unknown = _cli(db, "audit", "purge", "--company", "nope")
    assert unknown.exit_code == 1
    assert "company nope does not exist" in unknown.output
    records = [(r["action"], r["member_id"], r["company_id"], r["result_class"]) for r in _cli_records(db)]
    assert records == [
        ("admin.audit.purge", "operator", MOTOR, "ok"),
        ("admin.audit.purge", "operator", "nope", "error"),
    ]


def test_demo_loads_through_the_gateway_and_its_console_key_is_an_audited_key_creation(db: Path) -> None:
    loaded = json.loads(_ok(db, "demo", "--vehicles", "2", "--json").stdout)
    assert loaded["console_key"]
    keys = _rows(db, "SELECT member_id FROM api_keys WHERE name = 'console sign-in (forecourt demo)'")
    assert [k["member_id"] for k in keys] == ["ops-admin"]
    _ok(db, "demo", "--bulk", "--dealerships", "2", "--vehicles", "3")
    assert _rows(db, "SELECT count(*) AS n FROM vehicles WHERE dealership_id LIKE 'bench-%'") == [{"n": 6}]
    records = [(r["action"], r["member_id"], r["company_id"], r["result_class"]) for r in _cli_records(db)]
    assert records == [
        ("admin.demo.load", "operator", None, "ok"),  # two companies: a platform record
        ("admin.keys.create", "operator", MOTOR, "ok"),
        ("admin.demo.load", "operator", "bench-motor-group", "ok"),
    ]
    platform = [json.loads(line) for line in _ok(db, "audit", "export", "--platform").stdout.splitlines()]
    assert [r["action"] for r in platform] == ["admin.demo.load"]
