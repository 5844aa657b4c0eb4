"""Uploading, listing and running a company's own BPMN definitions; invalid ones are rejected with a 4xx code."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from forecourt.bootstrap import create_app
from forecourt.cli.main import app as cli_app

from .bpmn_builder import HEADER, chain, script, service
from .conftest import MOTOR, PEPPER, TOYOTA, Rig, Template

GREETER = chain(
    "greeter",
    service("info", "dealer.information", result="dealer"),
    script(
        "greet",
        "greeting = f\"Welcome to {dealer['name']}, {inputs.get('name', 'friend')}!\"\n"
        'artifacts["greeting"] = greeting',
    ),
)


async def _upload(rig: Rig, workflow_id: str, bpmn: str, *, key: str = "admin") -> dict[str, object]:
    out = await rig.invoke(
        "admin.workflows.upload", {"company_id": MOTOR, "workflow_id": workflow_id, "bpmn": bpmn}, key=key
    )
    assert isinstance(out, dict)
    return out


async def test_an_uploaded_definition_is_listed_versioned_and_runs(rig: Rig) -> None:
    first = await _upload(rig, "greeter", GREETER)
    second = await _upload(rig, "greeter", GREETER.replace("Welcome to", "Hello from"))

    listing = await rig.invoke("admin.workflows.list", {"company_id": MOTOR}, key="admin")
    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "greeter", "inputs": {"name": "Sam"}}
    )
    pinned = await rig.invoke("workflow.run", {"dealership_id": TOYOTA, "workflow_id": "greeter", "version": 1})

    assert (first["version"], second["version"]) == (1, 2)
    assert first["process_id"] == "greeter"
    by_id = {item["workflow_id"]: item for item in listing["items"]}
    assert by_id["greeter"]["version"] == 2
    assert by_id["greeter"]["versions"] == [1, 2]
    assert by_id["new_lead_follow_up"]["source"] == "shipped"
    assert by_id["service_appointment_reminder"]["version"] == 0
    assert run["status"] == "completed"
    assert run["version"] == 2
    assert run["artifacts"]["greeting"] == "Hello from Demo Toyota San Francisco, Sam!"
    assert run["outputs"]["greeting"] == run["artifacts"]["greeting"]
    assert pinned["artifacts"]["greeting"] == "Welcome to Demo Toyota San Francisco, friend!"


async def test_another_companys_definitions_are_invisible(rig: Rig) -> None:
    await _upload(rig, "greeter", GREETER)

    error = await rig.error("workflow.run", {"workflow_id": "greeter"}, key="bay")

    assert error.code == "workflow.definition_not_found"


async def test_only_company_administrators_may_upload(rig: Rig) -> None:
    error = await rig.error(
        "admin.workflows.upload", {"company_id": MOTOR, "workflow_id": "greeter", "bpmn": GREETER}, key="crm"
    )
    other = await rig.error(
        "admin.workflows.upload", {"company_id": "demo-bay-autos", "workflow_id": "greeter", "bpmn": GREETER}
    )

    assert error.code in ("auth.forbidden", "auth.insufficient_scope")
    assert other.code in ("auth.forbidden", "auth.insufficient_scope")


XXE = (
    '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">'
    '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s" name="&x;"/></bpmn:process></bpmn:definitions>'
)
INVALID = {
    "not_xml": "this is not xml",
    "not_bpmn": '<?xml version="1.0"?><definitions xmlns="urn:other"/>',
    "xxe": XXE,
    "schema": HEADER
    + '<bpmn:process id="p" isExecutable="true"><bpmn:bogusTask id="t"/></bpmn:process></bpmn:definitions>',
    "no_process": HEADER + "</bpmn:definitions>",
    "service_without_operator": HEADER
    + '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:serviceTask id="t"/>'
    '<bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/></bpmn:process></bpmn:definitions>',
    "import": chain("p", script("s", "import os")),
    "dunder": chain("p", script("s", "x = ().__class__.__bases__")),
    "open": chain("p", script("s", "data = open('/etc/passwd')")),
    "loop": chain("p", script("s", "while True:\n    pass")),
    "lambda": chain("p", script("s", "f = lambda: 1")),
    "param": chain("p", service("t", "leads.get", {"lead_id": "__import__('os').getcwd()"})),
}


@pytest.mark.parametrize("case", sorted(INVALID))
async def test_invalid_definitions_are_rejected_with_a_clear_code(rig: Rig, case: str) -> None:
    error = await rig.error(
        "admin.workflows.upload", {"company_id": MOTOR, "workflow_id": "bad", "bpmn": INVALID[case]}, key="admin"
    )

    assert error.code == "workflow.invalid_definition"
    assert error.http_status == 422
    listing = await rig.invoke("admin.workflows.list", {"company_id": MOTOR}, key="admin")
    assert "bad" not in {item["workflow_id"] for item in listing["items"]}


async def test_a_workflow_may_not_start_other_workflows(rig: Rig) -> None:
    await _upload(
        rig, "recursive", chain("recursive", service("again", "workflow.run", {"workflow_id": '"recursive"'}))
    )

    run = await rig.invoke("workflow.run", {"dealership_id": TOYOTA, "workflow_id": "recursive"})

    assert run["status"] == "failed"
    assert run["error"]["code"] == "workflow.operator_not_allowed"


async def test_a_failing_script_fails_the_run_without_leaking_data(rig: Rig) -> None:
    await _upload(rig, "broken", chain("broken", script("boom", "x = inputs['missing']")))

    run = await rig.invoke("workflow.run", {"dealership_id": TOYOTA, "workflow_id": "broken"})

    assert run["status"] == "failed"
    assert run["error"] == {
        "code": "workflow.script_error",
        "message": "A script or expression in the workflow failed.",
        "task": "boom",
        "reason": "KeyError",
        "line": 1,
    }


async def test_a_script_that_grows_a_string_without_bound_fails_the_run(rig: Rig) -> None:
    doubling = "s = 'xxxxxxxxxx'\n" + "s = s + s\n" * 40
    await _upload(rig, "bomb", chain("bomb", script("grow", doubling)))

    run = await rig.invoke("workflow.run", {"dealership_id": TOYOTA, "workflow_id": "bomb"})

    assert run["status"] == "failed"
    assert run["error"]["reason"] == "UnsafeExpression"


async def test_definitions_are_uploaded_and_listed_through_the_admin_api(rig: Rig) -> None:
    app = create_app(services=rig.services)
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        put = await client.put(
            f"/admin/v1/companies/{MOTOR}/workflows/greeter", json={"bpmn": GREETER}, headers=headers
        )
        bad = await client.put(f"/admin/v1/companies/{MOTOR}/workflows/bad", json={"bpmn": "<nope"}, headers=headers)
        listing = await client.get(f"/admin/v1/companies/{MOTOR}/workflows", headers=headers)

    assert put.status_code == 200
    assert put.json()["workflow_id"] == "greeter"
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "workflow.invalid_definition"
    assert "greeter" in {item["workflow_id"] for item in listing.json()["items"]}


def test_the_cli_uploads_and_lists_definitions(template: Template, tmp_path: Path) -> None:
    db_path = tmp_path / "cli.db"
    shutil.copyfile(template.path, db_path)
    file = tmp_path / "greeter.bpmn"
    file.write_text(GREETER, encoding="utf-8")
    env = {
        **os.environ,
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db_path}",
        "FORECOURT_API_KEY_PEPPER": PEPPER,
    }
    runner = CliRunner()

    upload = runner.invoke(cli_app, ["workflows", "create", str(file), "--company", MOTOR, "--id", "greeter", "--json"],
                           env=env)  # fmt: skip
    listing = runner.invoke(cli_app, ["workflows", "list", "--company", MOTOR, "--json"], env=env)
    bad = tmp_path / "bad.bpmn"
    bad.write_text("<nope", encoding="utf-8")
    rejected = runner.invoke(cli_app, ["workflows", "upload", str(bad), "--company", MOTOR, "--id", "bad"], env=env)

    assert upload.exit_code == 0, upload.output
    assert json.loads(upload.stdout)["version"] == 1
    assert listing.exit_code == 0
    assert "greeter" in {item["workflow_id"] for item in json.loads(listing.stdout)["items"]}
    assert rejected.exit_code == 1  # refused
