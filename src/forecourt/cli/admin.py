"""``forecourt keys`` and ``forecourt admin``: the admin actions, run by the operator through the gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import ConfigOption, console, load_settings, run, services_for
from forecourt.cli.output import JsonOption, print_listing, print_record
from forecourt.gateway.base import Invocation, Principal

keys_app = typer.Typer(help="API keys (shown once at creation).", no_args_is_help=True)
admin_app = typer.Typer(help="Company admin: restore a company's admin access.", no_args_is_help=True)


def _operator(company_id: str) -> Principal:
    return Principal(method="internal", company_id=company_id, member_id=None, subject="operator")


async def invoke_admin(settings: Any, action: str, payload: dict[str, Any]) -> Any:
    """Run one admin action as the operator (audited like any other call)."""
    async with services_for(settings) as services:
        outcome = await services.gateway.invoke(
            Invocation(action=action, payload=payload, surface="cli", principal=_operator(payload["company_id"]))
        )
        return outcome.output


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        console.print(f"[red]error[/red] cannot read {path}: {exc.__class__.__name__}")
        raise typer.Exit(2) from None
    if not isinstance(data, dict):
        console.print("[red]error[/red] the file must hold a JSON object")
        raise typer.Exit(2)
    return data


@keys_app.command("create")
def keys_create(
    company: str = typer.Option(..., "--company", help="Company id."),
    member: str = typer.Option(..., "--member", help="Member id."),
    name: str = typer.Option("", help="A label for listings."),
    scope: list[str] | None = typer.Option(None, "--scope", help="Narrow the key to these scopes."),
    dealership: list[str] | None = typer.Option(None, "--dealership", help="Narrow the key to these dealerships."),
    expires_at: str | None = typer.Option(None, help="RFC 3339 expiry."),
    toolset: str | None = typer.Option(None, "--toolset", help="MCP toolset for this key (crm, service, ...)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"key": ...} as JSON.'),
    config: Path | None = ConfigOption,
) -> None:
    """Create an API key for a member; the key is printed once and never stored.

    Example: forecourt keys create --company demo-motor-group --member crm-agent --json
    """
    settings = load_settings(config)
    payload: dict[str, Any] = {"company_id": company, "member_id": member, "name": name}
    if scope:
        payload["scopes"] = scope
    if dealership:
        payload["dealership_ids"] = dealership
    if expires_at:
        payload["expires_at"] = expires_at
    if toolset:
        payload["toolset"] = toolset
    out = run(lambda: invoke_admin(settings, "admin.keys.create", payload))
    if as_json:
        typer.echo(json.dumps({"key": out["key"], "prefix": out["prefix"]}))
    else:
        typer.echo(out["key"])
        console.print(f"prefix {out['prefix']} — store the key now; it cannot be shown again.")


@keys_app.command("list")
def keys_list(
    company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
) -> None:
    """List a company's keys (prefixes, members, scopes; never secrets)."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.keys.list", {"company_id": company}))
    print_listing(out, as_json=as_json, columns=_KEY_COLUMNS, title="API keys")


@keys_app.command("delete")
def keys_delete(
    prefix: str,
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Revoke a key by its prefix (effective at once on every replica; the record stays, revoked)."""
    settings = load_settings(config)
    out = run(lambda: invoke_admin(settings, "admin.keys.revoke", {"company_id": company, "prefix": prefix}))
    print_record(out, as_json=as_json)


keys_app.command("revoke", hidden=True)(keys_delete)


_KEY_COLUMNS = ("prefix", "member_id", "name", "scopes", "dealership_ids", "expires_at", "revoked_at")


def _list_command(action: str, help_text: str, columns: tuple[str, ...] = ()) -> Any:
    def command(
        company: str = typer.Option(..., "--company"), as_json: bool = JsonOption, config: Path | None = ConfigOption
    ) -> None:
        settings = load_settings(config)
        out = run(lambda: invoke_admin(settings, action, {"company_id": company}))
        if "items" in out:
            print_listing(out, as_json=as_json, columns=columns)
        else:
            print_record(out, as_json=as_json)

    command.__doc__ = help_text
    return command


def _upsert_command(action: str, body_key: str, help_text: str) -> Any:
    def command(
        file: Path = typer.Argument(..., help="JSON file with the record."),
        company: str = typer.Option(..., "--company"),
        as_json: bool = JsonOption,
        config: Path | None = ConfigOption,
    ) -> None:
        settings = load_settings(config)
        payload = {"company_id": company, body_key: _load_json(file)}
        print_record(run(lambda: invoke_admin(settings, action, payload)), as_json=as_json)

    command.__doc__ = help_text
    return command


# The company-scoped admin API from the command line. Records have one verb set (list, show, create, update,
# delete): `forecourt policies ...` and `forecourt adapters ...` (below), `forecourt dealerships|members ...`
# (cli/tenants.py). The older `forecourt admin <noun>` and `admin set-<noun>` spellings stay as hidden aliases.
policies_app = typer.Typer(help="Company policies (which actions, runtimes and models; limits).", no_args_is_help=True)
adapters_app = typer.Typer(help="A company's adapter settings (settings/adapters/{adapterId}).", no_args_is_help=True)

_company_show = _list_command("admin.companies.get", "Show the company.")
_dealerships_list = _list_command(
    "admin.dealerships.list", "List dealerships.", ("id", "name", "timezone", "domain", "public_agent")
)
_members_list = _list_command(
    "admin.members.list", "List members.", ("id", "name", "kind", "is_admin", "dealership_ids")
)
_policies_list = _list_command(
    "admin.policies.list", "List the company's policies.", ("id", "name", "allowed_actions", "denied_actions")
)
_adapters_list = _list_command("admin.adapters.list", "List the company's adapter overrides.", ("adapter_id", "config"))
_policy_update = _upsert_command("admin.policies.upsert", "policy", "Create or replace a policy from a JSON file.")

policies_app.command("list")(_policies_list)
policies_app.command("update")(_policy_update)
adapters_app.command("list")(_adapters_list)

admin_app.command("company", hidden=True)(_company_show)
admin_app.command("dealerships", hidden=True)(_dealerships_list)
admin_app.command("members", hidden=True)(_members_list)
admin_app.command("policies", hidden=True)(_policies_list)
admin_app.command("adapters", hidden=True)(_adapters_list)
admin_app.command("set-dealership", hidden=True)(
    _upsert_command("admin.dealerships.upsert", "dealership", "Create/update a dealership.")
)
admin_app.command("set-member", hidden=True)(
    _upsert_command("admin.members.upsert", "member", "Create/update a member.")
)
admin_app.command("set-policy", hidden=True)(_policy_update)


@policies_app.command("delete")
def policies_delete(
    policy_id: str = typer.Argument(..., help="Policy id."),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Delete a policy."""
    settings = load_settings(config)
    payload = {"company_id": company, "policy_id": policy_id}
    print_record(run(lambda: invoke_admin(settings, "admin.policies.delete", payload)), as_json=as_json)


@adapters_app.command("update")
def set_adapter(
    adapter_id: str,
    file: Path = typer.Argument(..., help="JSON file with the override."),
    company: str = typer.Option(..., "--company"),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Set the company's override of an adapter (settings/adapters/{adapterId})."""
    settings = load_settings(config)
    payload = {"company_id": company, "adapter_id": adapter_id, "config": _load_json(file)}
    print_record(run(lambda: invoke_admin(settings, "admin.adapters.upsert", payload)), as_json=as_json)


admin_app.command("set-adapter", hidden=True)(set_adapter)


@admin_app.command("restore-access")
def restore_access(
    company: str = typer.Option(..., "--company", help="Company id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Reopen a company's admin path: relax every policy that denies its admins the admin actions."""
    settings = load_settings(config)
    print_record(run(lambda: invoke_admin(settings, "admin.access.restore", {"company_id": company})), as_json=as_json)
