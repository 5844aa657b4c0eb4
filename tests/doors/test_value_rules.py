"""One validation per value, on every door: each bad value is fed to the CLI, the admin API, the console,
``forecourt apply`` and the agents' tools, and each door refuses it with the same code and the same field rule.

The doors' answers are reduced to ``(code, rules)``: the error code, and the ``rule`` of every field error
(``details.errors[].rule``; the CLI prints it as ``path: message [rule]``).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from forecourt.cli.main import app as cli
from gateway.support import MOTOR, TOYOTA, Rig

from .conftest import console_client, sign_in_console

Refusal = tuple[str | None, set[str]]

# value name -> (rooftop field, bad value, CLI options, rule)
ROOFTOP_VALUES: dict[str, tuple[str, Any, list[str], str]] = {
    "timezone": ("timezone", "Mars/Olympus", ["--timezone", "Mars/Olympus"], "timezone"),
    "phone": ("phones", {"sales": "555-0100"}, ["--phone", "sales=555-0100"], "phone"),
    "vanity phone too short": ("phones", {"sales": "1-800-FLOW"}, ["--phone", "sales=1-800-FLOW"], "phone"),
    "email": ("email", "sales@@example.com", ["--email", "sales@@example.com"], "format"),
    "published link": ("website", "javascript:alert(1)", ["--website", "javascript:alert(1)"], "invalid_link"),
    "fetched url": ("crm", {"endpoint": "ftp://crm.example.com/adf"}, ["--crm-endpoint", "ftp://crm.example.com/adf"],
                    "unsafe_url"),
}  # fmt: skip

_CLI_ERROR = re.compile(r"error ([a-z_.]+):")
_CLI_RULE = re.compile(r"\[([a-z_]+)\]\s*$", re.MULTILINE)


def _db_env(rig: Rig) -> dict[str, str]:
    return {"FORECOURT_DATABASE_URL": rig.services.settings.database_url}


async def cli_refusal(rig: Rig, *args: str) -> Refusal:
    """Run ``forecourt ARGS`` on the rig's database (in a thread: the command runs its own event loop)."""
    result = await asyncio.to_thread(CliRunner().invoke, cli, list(args), env=_db_env(rig))
    assert result.exit_code == 1, result.output  # refused (not a usage error, not a crash)
    code = _CLI_ERROR.search(result.output)
    return (code.group(1) if code else None), set(_CLI_RULE.findall(result.output))


def api_refusal(response: httpx.Response) -> Refusal:
    """The admin API's (and the REST envelope's) error code and field rules."""
    body = response.json()
    error = body["error"] if "error" in body else body["status"]["error"]
    return error["code"], {e["rule"] for e in error.get("details", {}).get("errors", []) if "rule" in e}


def _rooftop(field: str, value: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "Door Rooftop", "timezone": "America/Chicago"}
    return {**base, field: value}


async def _admin_put_rooftop(rig: Rig, field: str, value: Any) -> Refusal:
    body = _rooftop(field, value)
    if field == "crm":  # the admin API's record names it crm_endpoint
        body = {**_rooftop("timezone", "America/Chicago"), "crm_endpoint": value["endpoint"]}
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/dealerships/door-rooftop",
        json=body,
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert response.status_code == 422, response.text
    return api_refusal(response)


async def _apply(rig: Rig, tmp_path: Path, field: str, value: Any) -> Refusal:
    rooftop = {"id": "door-rooftop", **_rooftop(field, value)}
    document = {
        "profile": {"id": "door-profile", "name": "Door"},
        "companies": [{"id": "door-co", "name": "Door Co", "rooftops": [rooftop]}],
    }
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return await cli_refusal(rig, "apply", str(path))


@pytest.mark.parametrize("value_name", sorted(ROOFTOP_VALUES))
async def test_a_bad_rooftop_value_is_refused_with_the_same_rule_by_the_cli_the_admin_api_and_apply(
    rig: Rig, tmp_path: Path, value_name: str
) -> None:
    field, value, options, rule = ROOFTOP_VALUES[value_name]
    base = ["--company", MOTOR, "--name", "Door Rooftop"]
    created = await cli_refusal(rig, "dealerships", "create", "door-rooftop", *base, "--timezone", "America/Chicago",
                                *options)  # fmt: skip
    updated = await cli_refusal(rig, "dealerships", "update", TOYOTA, "--company", MOTOR, *options)
    answers = {
        "cli create": created,
        "cli update": updated,
        "admin api": await _admin_put_rooftop(rig, field, value),
        "apply": await _apply(rig, tmp_path, field, value),
    }
    assert {door: rule in rules for door, (_, rules) in answers.items()} == dict.fromkeys(answers, True), answers
    codes = {door: code for door, (code, _) in answers.items()}
    assert codes == {"cli create": "invalid_params", "cli update": "invalid_params", "admin api": "invalid_params",
                     "apply": "tenants.invalid_file"}  # fmt: skip
    async with rig.services.store.read() as uow:
        assert await uow.tenancy.get_dealership("door-rooftop") is None


async def test_a_time_zone_that_is_not_iana_is_refused_by_the_console_as_by_every_other_door(rig: Rig) -> None:
    async with console_client(rig) as client:
        csrf = await sign_in_console(client, rig.keys["admin"])
        form = {"csrf": csrf, "id": "door-rooftop", "name": "Door", "timezone": "Mars/Olympus"}
        await client.post("/console/tenants/dealerships", data=form)
    records = [r for r in await rig.audit(MOTOR) if r.surface == "console" and r.action == "admin.dealerships.upsert"]
    assert [r.error_code for r in records] == ["invalid_params"]
    async with rig.services.store.read() as uow:
        assert await uow.tenancy.get_dealership("door-rooftop") is None


# ---------------------------------------------------------------------------------------------- a buyer's contact


async def _lead(rig: Rig, customer: dict[str, Any]) -> httpx.Response:
    customer = {"first_name": "Door", "last_name": "Test", **customer}
    return await rig.call("leads.create", {"dealership_id": TOYOTA, "customer": customer})


@pytest.mark.parametrize(
    ("customer", "rule"),
    [
        ({"phone": "555-0100"}, "phone"),
        ({"phone": "+1 415 555 01"}, "phone"),
        ({"email": "ana@@example.com"}, "format"),
    ],
)
async def test_the_agents_tools_refuse_a_bad_contact_value_with_the_same_rule(
    rig: Rig, customer: dict[str, Any], rule: str
) -> None:
    response = await _lead(rig, customer)
    assert api_refusal(response) == ("invalid_params", {rule}), response.text


async def test_a_vanity_number_is_stored_in_e164_read_in_the_rooftops_country_never_half_normalised(rig: Rig) -> None:
    response = await _lead(rig, {"phone": "1-800-FLOWERS"})
    assert response.status_code == 200, response.text
    local = await _lead(rig, {"phone": "(415) 555-0134", "email": "door.local@example.com"})
    assert local.status_code == 200, local.text
    async with rig.services.store.read() as uow:
        customers, _ = await uow.customers.page(TOYOTA, 0, 10_000)
    phones = {c.phone for c in customers if c.first_name == "Door"}
    assert phones == {"+18003569377", "+14155550134"}


# ---------------------------------------------------------------------------------------------- API keys


async def _admin_key(rig: Rig, body: dict[str, Any]) -> httpx.Response:
    return await rig.client.post(
        f"/admin/v1/companies/{MOTOR}/keys", json=body, headers={"Authorization": f"Bearer {rig.keys['admin']}"}
    )


@pytest.mark.parametrize(("expires_at", "rule"), [("yesterday", "format"), ("2020-01-01T00:00:00Z", "expired")])
async def test_a_key_expiry_that_is_not_a_future_time_is_a_field_error_on_the_cli_and_the_admin_api(
    rig: Rig, expires_at: str, rule: str, caplog: pytest.LogCaptureFixture
) -> None:
    by_cli = await cli_refusal(rig, "keys", "create", "--company", MOTOR, "--member", "crm-agent",
                               "--expires-at", expires_at)  # fmt: skip
    by_api = api_refusal(await _admin_key(rig, {"member_id": "crm-agent", "expires_at": expires_at}))
    assert by_cli == by_api == ("invalid_params", {rule})
    assert [r for r in caplog.records if r.levelname == "ERROR"] == []


async def test_no_door_makes_an_api_key_for_a_member_that_signs_in_with_oidc_only(rig: Rig) -> None:
    member = {"name": "Person", "kind": "person", "security_type": "oidc", "oidc_subject": "sub-door"}
    made = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/members/oidc-person",
        json=member,
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert made.status_code == 200, made.text
    by_cli = await cli_refusal(rig, "keys", "create", "--company", MOTOR, "--member", "oidc-person")
    by_api = api_refusal(await _admin_key(rig, {"member_id": "oidc-person"}))
    async with console_client(rig) as client:
        csrf = await sign_in_console(client, rig.keys["admin"])
        await client.post("/console/tenants/keys", data={"csrf": csrf, "member_id": "oidc-person"})
    by_console = [
        r.error_code for r in await rig.audit(MOTOR) if r.surface == "console" and r.action == "admin.keys.create"
    ]
    assert by_cli == by_api == ("invalid_params", {"key_not_usable"})
    assert by_console == ["invalid_params"]
    assert [k for k in await rig.gateway_keys(MOTOR) if k.member_id == "oidc-person"] == []
