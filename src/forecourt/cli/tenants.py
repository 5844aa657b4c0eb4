"""``forecourt companies|dealerships|members|apply|export-tenants|operator``: onboarding, run as the operator.

Every command is one admin action through ``Gateway.invoke`` with the operator principal, so it is checked,
audited and answered like a call from any other front door; this module only parses options and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from forecourt.cli.common import EXIT_REFUSED, ConfigOption, console, load_settings, refuse, run, services_for
from forecourt.cli.output import JsonOption, print_json, print_record, print_rows
from forecourt.settings import Settings

companies_app = typer.Typer(help="Companies (dealers and dealer groups).", no_args_is_help=True)
dealerships_app = typer.Typer(help="Dealerships (rooftops) of a company.", no_args_is_help=True)
members_app = typer.Typer(help="Members (agents and people) of a company.", no_args_is_help=True)
operator_app = typer.Typer(help="Operator keys: the deployment's own credentials.", no_args_is_help=True)

CompanyOption = typer.Option(..., "--company", help="Company id.")


async def invoke_operator(
    settings: Settings, action: str, payload: dict[str, Any], *, company_id: str | None = None
) -> Any:
    """Run one action as the operator through the gateway, audited under the company it concerns: ``company_id``,
    else the payload's, else the company of the rooftop it names; else the platform (``audit export --platform``)."""
    from forecourt.gateway.auth.operator import operator_principal
    from forecourt.gateway.base import Invocation

    company = company_id or payload.get("company_id")
    async with services_for(settings) as services:
        outcome = await services.gateway.invoke(
            Invocation(
                action=action,
                payload=payload,
                surface="cli",
                principal=operator_principal(str(company) if company else None),
            )
        )
        return outcome.output


def call(config: Path | None, action: str, payload: dict[str, Any], *, company_id: str | None = None) -> Any:
    """Settings, then the action as the operator; a refusal is one line and exit code 1."""
    settings = load_settings(config)
    return run(lambda: invoke_operator(settings, action, payload, company_id=company_id))


def _set(payload: dict[str, Any], **values: Any) -> dict[str, Any]:
    payload.update({k: v for k, v in values.items() if v is not None and v != []})
    return payload


# ---------------------------------------------------------------------------------------------- companies

_COMPANY_COLUMNS = ("id", "name", "profile_id", "dealerships")


@companies_app.command("create")
def companies_create(
    company_id: str = typer.Argument(..., help="Company id, e.g. acme-auto."),
    name: str | None = typer.Option(None, help="Display name (default: the id)."),
    profile: str | None = typer.Option(None, "--profile", help="Owning profile (created if new; default: the id)."),
    oidc_issuer: str | None = typer.Option(None, help="The company's OIDC issuer URL."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Create a company (and its profile when new).

    Example: forecourt companies create acme-auto --name "Acme Auto" --json
    """
    payload = _set({"company_id": company_id}, name=name, profile_id=profile, oidc_issuer=oidc_issuer)
    print_record(call(config, "admin.companies.create", payload), as_json=as_json, title="company created")


@companies_app.command("list")
def companies_list(as_json: bool = JsonOption, config: Path | None = ConfigOption) -> None:
    """List every company."""
    out = call(config, "admin.companies.list", {})
    print_rows(out["items"], _COMPANY_COLUMNS, as_json=as_json, title="companies")


@companies_app.command("show")
def companies_show(
    company_id: str = typer.Argument(..., help="Company id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show a company with its rooftops, members and policies."""
    out = call(config, "admin.companies.show", {"company_id": company_id})
    if as_json:
        print_json(out)
        return
    print_record({k: v for k, v in out.items() if k not in ("dealerships", "members")}, as_json=False, title=out["id"])
    print_rows(out["dealerships"], ("id", "name", "domain"), as_json=False, title="dealerships")
    print_rows(out["members"], ("id", "name", "kind", "admin"), as_json=False, title="members")


@companies_app.command("update")
def companies_update(
    company_id: str = typer.Argument(..., help="Company id."),
    name: str | None = typer.Option(None, help="Display name."),
    profile: str | None = typer.Option(None, "--profile", help="Move to this (existing) profile."),
    oidc_issuer: str | None = typer.Option(None, help="OIDC issuer URL."),
    oidc_audience: str | None = typer.Option(None, help="Expected JWT audience."),
    oidc_jwks_url: str | None = typer.Option(None, help="JWKS URL."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Change a company's name, profile or OIDC issuer."""
    payload = _set(
        {"company_id": company_id},
        name=name,
        profile_id=profile,
        oidc_issuer=oidc_issuer,
        oidc_audience=oidc_audience,
        oidc_jwks_url=oidc_jwks_url,
    )
    print_record(call(config, "admin.companies.update", payload), as_json=as_json, title="company updated")


# ---------------------------------------------------------------------------------------------- dealerships

_DEALERSHIP_COLUMNS = ("id", "company_id", "name", "timezone", "domain", "public_agent")


def _phones(values: list[str] | None) -> dict[str, str] | None:
    """``--phone sales=+14155550100`` (repeat) as ``{"sales": "+14155550100"}``."""
    if not values:
        return None
    phones: dict[str, str] = {}
    for value in values:
        department, eq, number = value.partition("=")
        if not eq or not department.strip() or not number.strip():
            refuse(f"--phone takes DEPARTMENT=NUMBER, e.g. sales=+14155550100 (got {value!r})")
        phones[department.strip()] = number.strip()
    return phones


def _rooftop_fields(
    name: str | None,
    timezone: str | None,
    domain: str | None,
    public_agent: bool | None,
    crm_endpoint: str | None,
    brand: list[str] | None,
    address: dict[str, str | None],
    contact: dict[str, Any] | None = None,
) -> dict[str, Any]:
    fields = _set({}, name=name, timezone=timezone, domain=domain, public_agent=public_agent, brands=brand)
    fields = _set(fields, **(contact or {}))
    if crm_endpoint is not None:
        fields["crm"] = {"endpoint": crm_endpoint or None}
    if any(address.values()):
        fields["address"] = {k: v for k, v in address.items() if v is not None}
    return fields


PhoneOption = typer.Option(None, "--phone", help="DEPARTMENT=NUMBER, e.g. sales=+14155550100 (repeat).")
EmailOption = typer.Option(None, "--email", help="Sales e-mail address.")
WebsiteOption = typer.Option(None, "--website", help="Public website URL (http or https).")
CountryOption = typer.Option(None, "--country", help="ISO country code (US); the region of numbers without +.")


@dealerships_app.command("create")
def dealerships_create(
    dealership_id: str = typer.Argument(..., help="Dealership id, unique across the deployment."),
    company: str = CompanyOption,
    name: str = typer.Option(..., help="Display name."),
    timezone: str = typer.Option(..., help="IANA time zone, e.g. America/Chicago."),
    domain: str | None = typer.Option(None, help="Host name serving its root agent card."),
    public_agent: bool = typer.Option(True, "--public-agent/--private-agent", help="Anonymous buyer agents."),
    crm_endpoint: str | None = typer.Option(None, help="HTTPS URL receiving ADF leads."),
    brand: list[str] | None = typer.Option(None, "--brand", help="A franchised brand (repeat)."),
    street: str | None = typer.Option(None, help="Street address."),
    city: str | None = typer.Option(None, help="City."),
    region: str | None = typer.Option(None, help="State or region."),
    postal_code: str | None = typer.Option(None, help="Postal code."),
    country: str | None = CountryOption,
    phone: list[str] | None = PhoneOption,
    email: str | None = EmailOption,
    website: str | None = WebsiteOption,
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Create a rooftop of a company (all fields: see docs/tenants.md, or use `forecourt apply`).

    Example: forecourt dealerships create acme-toyota --company acme-auto --name "Acme Toyota"
    --timezone America/Chicago --phone sales=+15125550100
    """
    address = {"street": street, "city": city, "region": region, "postal_code": postal_code, "country": country}
    contact = {"phones": _phones(phone), "email": email, "website": website}
    fields = _rooftop_fields(name, timezone, domain, public_agent, crm_endpoint, brand, address, contact)
    payload = {"company_id": company, "dealership": {"id": dealership_id, **fields}}
    print_record(call(config, "admin.dealerships.create", payload), as_json=as_json, title="dealership created")


@dealerships_app.command("list")
def dealerships_list(
    company: str | None = typer.Option(None, "--company", help="Only this company's rooftops."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """List rooftops (of one company, or all)."""
    out = call(config, "admin.dealerships.find", _set({}, company_id=company))
    print_rows(out["items"], _DEALERSHIP_COLUMNS, as_json=as_json, title="dealerships")


@dealerships_app.command("show")
def dealerships_show(
    dealership_id: str = typer.Argument(..., help="Dealership id."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show one rooftop with every field."""
    found = [d for d in call(config, "admin.dealerships.find", {})["items"] if d["id"] == dealership_id]
    if not found:
        refuse(
            f"dealership {dealership_id} does not exist; create it with `forecourt dealerships create {dealership_id}`",
            code=EXIT_REFUSED,
        )
    print_record(found[0], as_json=as_json, title=dealership_id)


@dealerships_app.command("update")
def dealerships_update(
    dealership_id: str = typer.Argument(..., help="Dealership id."),
    company: str = CompanyOption,
    name: str | None = typer.Option(None, help="Display name."),
    timezone: str | None = typer.Option(None, help="IANA time zone."),
    domain: str | None = typer.Option(None, help="Host name serving its root agent card."),
    public_agent: bool | None = typer.Option(None, "--public-agent/--private-agent", help="Anonymous buyer agents."),
    crm_endpoint: str | None = typer.Option(None, help='HTTPS URL receiving ADF leads ("" removes it).'),
    brand: list[str] | None = typer.Option(None, "--brand", help="Franchised brands (repeat; replaces the list)."),
    street: str | None = typer.Option(None, help="Street address."),
    city: str | None = typer.Option(None, help="City."),
    region: str | None = typer.Option(None, help="State or region."),
    postal_code: str | None = typer.Option(None, help="Postal code."),
    country: str | None = CountryOption,
    phone: list[str] | None = typer.Option(None, "--phone", help="DEPARTMENT=NUMBER (repeat; replaces the list)."),
    email: str | None = EmailOption,
    website: str | None = WebsiteOption,
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Change some fields of a rooftop (the others stay)."""
    address = {"street": street, "city": city, "region": region, "postal_code": postal_code, "country": country}
    contact = {"phones": _phones(phone), "email": email, "website": website}
    changes = _rooftop_fields(name, timezone, domain, public_agent, crm_endpoint, brand, address, contact)
    if "address" in changes:
        console.print("address options replace the whole address", style="yellow")
    payload = {"company_id": company, "dealership_id": dealership_id, "changes": changes}
    print_record(call(config, "admin.dealerships.update", payload), as_json=as_json, title="dealership updated")


# ---------------------------------------------------------------------------------------------- members


def _member_fields(
    name: str | None,
    kind: str | None,
    tool: list[str] | None,
    scope: list[str] | None,
    dealership: list[str] | None,
    admin: bool | None,
    active: bool | None,
) -> dict[str, Any]:
    return _set(
        {}, name=name, kind=kind, allowed_tools=tool, scopes=scope, dealerships=dealership, admin=admin, active=active
    )


@members_app.command("create")
def members_create(
    member_id: str = typer.Argument(..., help="Member id, e.g. crm-agent."),
    company: str = CompanyOption,
    name: str = typer.Option(..., help="Display name."),
    kind: str = typer.Option("agent", help="agent or person."),
    tool: list[str] | None = typer.Option(None, "--tool", help="An allowed action or pattern (repeat)."),
    scope: list[str] | None = typer.Option(None, "--scope", help="A granted scope (repeat)."),
    dealership: list[str] | None = typer.Option(None, "--dealership", help="A granted rooftop (repeat)."),
    admin: bool = typer.Option(False, "--admin", help="May use the admin API for its company."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Create a member of a company.

    Example: forecourt members create crm-agent --company acme-auto --name "CRM agent" --dealership acme-toyota
    --scope amcp:inventory:read --scope amcp:leads:write
    """
    fields = _member_fields(name, kind, tool, scope, dealership, admin, None)
    payload = {"company_id": company, "member": {"id": member_id, **fields}}
    print_record(call(config, "admin.members.create", payload), as_json=as_json, title="member created")


@members_app.command("list")
def members_list(company: str = CompanyOption, as_json: bool = JsonOption, config: Path | None = ConfigOption) -> None:
    """List a company's members."""
    out = call(config, "admin.members.list", {"company_id": company})
    rows = [{**m, "admin": m.get("is_admin")} for m in out["items"]]
    print_rows(rows, ("id", "name", "kind", "admin", "dealership_ids", "active"), as_json=as_json, title="members")


@members_app.command("show")
def members_show(
    member_id: str = typer.Argument(..., help="Member id."),
    company: str = CompanyOption,
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Show one member with every field."""
    found = [m for m in call(config, "admin.members.list", {"company_id": company})["items"] if m["id"] == member_id]
    if not found:
        refuse(
            f"member {member_id} of company {company} does not exist; "
            f"create it with `forecourt members create {member_id} --company {company}`",
            code=EXIT_REFUSED,
        )
    print_record(found[0], as_json=as_json, title=member_id)


@members_app.command("update")
def members_update(
    member_id: str = typer.Argument(..., help="Member id."),
    company: str = CompanyOption,
    name: str | None = typer.Option(None, help="Display name."),
    kind: str | None = typer.Option(None, help="agent or person."),
    tool: list[str] | None = typer.Option(None, "--tool", help="Allowed actions (repeat; replaces the list)."),
    scope: list[str] | None = typer.Option(None, "--scope", help="Granted scopes (repeat; replaces the list)."),
    dealership: list[str] | None = typer.Option(None, "--dealership", help="Granted rooftops (repeat; replaces)."),
    admin: bool | None = typer.Option(None, "--admin/--no-admin", help="May use the admin API."),
    active: bool | None = typer.Option(None, "--active/--inactive", help="An inactive member cannot sign in."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Change some fields of a member (the others stay)."""
    changes = _member_fields(name, kind, tool, scope, dealership, admin, active)
    payload = {"company_id": company, "member_id": member_id, "changes": changes}
    print_record(call(config, "admin.members.update", payload), as_json=as_json, title="member updated")


# ---------------------------------------------------------------------------------------------- tenants files


def read_tenants_file(path: Path) -> Any:
    """The YAML document in ``path``; an unreadable file or a refused document (domain/yaml_documents.py: bad
    YAML, aliases, a key twice, too large or too deep...) is one line naming where, and exit code 2."""
    from forecourt.domain.errors import YamlRefused
    from forecourt.domain.yaml_documents import MAX_BYTES, load_yaml

    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)  # one byte over is enough to refuse it
        # Through JSON once: YAML dates and other non-JSON scalars become text the schema then judges.
        return json.loads(json.dumps(load_yaml(data), default=str))
    except OSError as exc:
        console.print(f"error: cannot read {path}: {exc.strerror}", markup=False)
    except YamlRefused as exc:
        console.print(f"error: {path} is {exc.message}", markup=False, highlight=False)
    raise typer.Exit(2)


def _only_company(document: Any) -> str | None:
    """The one company a tenants file describes (its apply is audited under it); ``None`` for several or none
    (audited as the platform's)."""
    companies = document.get("companies") if isinstance(document, dict) else None
    ids = {c.get("id") for c in companies if isinstance(c, dict)} if isinstance(companies, list) else set()
    only = next(iter(ids)) if len(ids) == 1 else None
    return only if isinstance(only, str) else None


_OP_STYLE = {"create": "green", "change": "yellow", "delete": "red", "unchanged": "dim"}


def print_plan(out: dict[str, Any], *, verbose: bool) -> None:
    """The plan as lines (``+ create dealership x``), then a one-line summary."""
    from forecourt.cli.output import out as stdout

    for step in out["plan"]:
        if step["op"] == "unchanged" and not verbose:
            continue
        owner = f" ({step['company_id']})" if step.get("company_id") else ""
        fields = f": {', '.join(step['fields'])}" if step.get("fields") else ""
        mark = {"create": "+", "change": "~", "delete": "-", "unchanged": "="}[step["op"]]
        line = f"{mark} {step['op']} {step['kind']} {step['id']}{owner}{fields}"
        stdout.print(line, style=_OP_STYLE[step["op"]], markup=False, highlight=False)
    s = out["summary"]
    if out["changes"] == 0:
        stdout.print(f"no changes ({s['unchanged']} unchanged)", markup=False)
        return
    verb = "would" if out["dry_run"] else "did"
    stdout.print(
        f"{verb} create {s['create']}, change {s['change']}, delete {s['delete']}; {s['unchanged']} unchanged",
        markup=False,
    )


def apply(
    file: Path = typer.Argument(..., help="Tenants file (YAML; see docs/tenants.md)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; write nothing."),
    prune: bool = typer.Option(False, "--prune", help="Delete what the file's profile has and the file omits."),
    show_unchanged: bool = typer.Option(False, "--show-unchanged", help="List unchanged records too."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Make the database match a tenants file: validate all of it, print the plan, apply it in one transaction.

    Example: forecourt apply examples/tenants.yaml --dry-run
    """
    document = read_tenants_file(file)
    payload = {"document": document, "dry_run": dry_run, "prune": prune}
    out = call(config, "admin.tenants.apply", payload, company_id=_only_company(document))
    if as_json:
        print_json(out)
    else:
        print_plan(out, verbose=show_unchanged)


def export_tenants(
    profile: str | None = typer.Option(None, "--profile", help="Profile to export (needed when there are several)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Write the current tenants of a profile in the `forecourt apply` format."""
    out = call(config, "admin.tenants.export", _set({}, profile_id=profile))
    document = out["document"]
    if as_json:
        print_json(document)
        return
    import yaml

    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        console.print(f"wrote {output}", markup=False)


# ---------------------------------------------------------------------------------------------- operator keys


operator_keys_app = typer.Typer(help="Operator keys (shown once at creation).", no_args_is_help=True)
operator_app.add_typer(operator_keys_app, name="keys")


@operator_keys_app.command("create")
def operator_create_key(
    name: str = typer.Option(..., "--name", help="A unique label, e.g. the operator's name."),
    as_json: bool = typer.Option(False, "--json", help='Print {"key": ..., "prefix": ...} as JSON.'),
    config: Path | None = ConfigOption,
) -> None:
    """Create an operator key; it is printed once and never stored."""
    out = call(config, "admin.operator_keys.create", {"name": name})
    if as_json:
        print_json({"key": out["key"], "prefix": out["prefix"], "name": out["name"]})
        return
    typer.echo(out["key"])
    console.print(f"operator key {out['prefix']} — store it now; it cannot be shown again.", markup=False)


@operator_keys_app.command("list")
def operator_list_keys(as_json: bool = JsonOption, config: Path | None = ConfigOption) -> None:
    """List operator keys (prefixes and names; never secrets)."""
    out = call(config, "admin.operator_keys.list", {})
    print_rows(out["items"], ("prefix", "name", "created_at", "revoked_at"), as_json=as_json, title="operator keys")


@operator_keys_app.command("delete")
def operator_revoke_key(
    prefix: str = typer.Argument(..., help="The key's prefix."),
    as_json: bool = JsonOption,
    config: Path | None = ConfigOption,
) -> None:
    """Revoke an operator key."""
    print_record(call(config, "admin.operator_keys.revoke", {"prefix": prefix}), as_json=as_json)


operator_app.command("create-key", hidden=True)(operator_create_key)
operator_app.command("list-keys", hidden=True)(operator_list_keys)
operator_app.command("revoke-key", hidden=True)(operator_revoke_key)
