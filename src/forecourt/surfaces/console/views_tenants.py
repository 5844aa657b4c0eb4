"""Tenants (rooftops, members, keys, agent preview) and policies (with the pre-flight)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import orjson
from starlette.responses import Response

from forecourt.errors import InvalidParams
from forecourt.surfaces.console.core import Page
from forecourt.surfaces.console.tables import listing

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}$")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]


async def tenants(page: Page) -> Response:
    """Company, rooftops, members and keys: each table searched, sorted and paged on the server."""
    company = await page.call("admin.companies.get", {"company_id": page.company})
    rooftops = await listing(page, "rooftops", "tenants", prefix="r_", filters=("public_agent",))
    members = await listing(page, "members", "tenants", prefix="m_", filters=("kind", "is_admin"))
    keys = await listing(page, "keys", "tenants", prefix="k_", filters=("state", "member_id"))
    return page.render("tenants.html", company=company, rooftops=rooftops, members=members, keys=keys, active="tenants")


async def rooftop_exists(page: Page, dealership_id: str) -> bool:
    """Whether the company has the rooftop (and the caller may see it): one row read, not the list."""
    found = await page.call("console.rooftops.page", {"company_id": page.company, "id": dealership_id, "limit": 1})
    return bool(found["items"])


async def save_dealership(page: Page) -> Response:
    """Create a rooftop (or rename one)."""
    dealership_id = page.field("id").strip()
    if not _SLUG.match(dealership_id):
        raise InvalidParams("A rooftop id is lower-case letters, digits, '.', '_' or '-'.")
    record = {
        "id": dealership_id,
        "name": page.field("name").strip() or dealership_id,
        "timezone": page.field("timezone").strip() or "America/Los_Angeles",
        "public_agent": page.field("public_agent") == "on",
    }
    await page.call("admin.dealerships.upsert", {"company_id": page.company, "dealership": record})
    return page.redirect("tenants", flash=f"Rooftop {dealership_id} saved.")


async def toggle_public(page: Page) -> Response:
    """Switch a rooftop's dealer agent between public and bearer-only."""
    dealership_id = page.request.path_params["dealership_id"]
    items = (await page.call("admin.dealerships.list", {"company_id": page.company}))["items"]
    current = next((d for d in items if d["id"] == dealership_id), None)
    if current is None:
        raise InvalidParams("No such rooftop.")
    current = {**current, "public_agent": not current["public_agent"]}
    await page.call("admin.dealerships.upsert", {"company_id": page.company, "dealership": current})
    mode = "public" if current["public_agent"] else "bearer-only"
    return page.redirect("tenants", flash=f"{dealership_id} is now {mode}.")


async def create_key(page: Page) -> Response:
    """Create an API key; the page shows it once."""
    payload: dict[str, Any] = {"company_id": page.company, "member_id": page.field("member_id")}
    if page.field("name").strip():
        payload["name"] = page.field("name").strip()[:200]
    issued = await page.call("admin.keys.create", payload)
    return page.render("key_created.html", issued=issued, active="tenants")


async def revoke_key(page: Page) -> Response:
    """Revoke an API key."""
    prefix = page.request.path_params["prefix"]
    await page.call("admin.keys.revoke", {"company_id": page.company, "prefix": prefix})
    return page.redirect("tenants", flash=f"Key {prefix} revoked.")


async def save_member(page: Page) -> Response:
    """Create a member (agent or person) with tools, scopes and rooftops."""
    member_id = page.field("id").strip()
    if not _SLUG.match(member_id):
        raise InvalidParams("A member id is lower-case letters, digits, '.', '_' or '-'.")
    record = {
        "id": member_id,
        "name": page.field("name").strip() or member_id,
        "kind": page.field("kind") or "agent",
        "allowed_tools": _lines(page.field("allowed_tools")) or ["*"],
        "scopes": _lines(page.field("scopes")),
        "dealership_ids": _lines(page.field("dealership_ids")),
        "is_admin": page.field("is_admin") == "on",
    }
    await page.call("admin.members.upsert", {"company_id": page.company, "member": record})
    return page.redirect("tenants", flash=f"Member {member_id} saved.")


async def agent_preview(page: Page) -> Response:
    """A rooftop's agent card and AAP manifest, as buyer agents fetch them (through this app)."""
    dealership_id = page.request.path_params["dealership_id"]
    if not await rooftop_exists(page, dealership_id):
        raise InvalidParams("No such rooftop.")
    docs: dict[str, str] = {}
    transport = httpx.ASGITransport(app=page.request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console.internal") as http:
        for name in ("agent-card.json", "auto-agent-contract.json"):
            response = await http.get(f"/dealers/{dealership_id}/.well-known/{name}")
            try:
                docs[name] = orjson.dumps(response.json(), option=orjson.OPT_INDENT_2).decode()
            except ValueError:
                docs[name] = f"HTTP {response.status_code}"
    return page.render("agent.html", dealership_id=dealership_id, docs=docs, active="tenants")


# ---------------------------------------------------------------------------------------------- policies


def policy_from_form(page: Page) -> dict[str, Any]:
    """The policy the form describes (validated by the gateway and the pre-flight)."""
    limits: dict[str, int] = {}
    for line in _lines(page.field("rate_limits").replace(",", "\n")):
        key, _, value = line.partition("=")
        if not value.strip().isdigit():
            raise InvalidParams("Rate limits are lines of name=calls per minute.")
        limits[key.strip()] = int(value.strip())
    approval_text = page.field("require_approval").strip() or "[]"
    try:
        approvals = orjson.loads(approval_text)
    except orjson.JSONDecodeError as exc:
        raise InvalidParams("Approval rules must be a JSON list.") from exc
    return {
        "id": page.field("id").strip() or "default",
        "name": page.field("name").strip() or "default",
        "allowed_actions": _lines(page.field("allowed_actions")) or ["*"],
        "denied_actions": _lines(page.field("denied_actions")),
        "allowed_models": _lines(page.field("allowed_models")) or ["*"],
        "redact_fields": _lines(page.field("redact_fields")),
        "allow_side_effects": page.field("allow_side_effects") == "on",
        "rate_limits": limits,
        "require_approval": approvals,
        "toolsets": _lines(page.field("toolsets")),
    }


async def policies(page: Page) -> Response:
    """Every policy of the company, each in an editable form."""
    items = (await page.call("admin.policies.list", {"company_id": page.company}))["items"]
    return page.render("policies.html", policies=items, preflight=None, edited=None, active="policies")


async def save_policy(page: Page) -> Response:
    """Pre-flight the edited policy; save it only when it breaks no public agent (or only check it)."""
    proposed = policy_from_form(page)
    report = await page.call("admin.policies.preflight", {"company_id": page.company, "policy": proposed})
    saved = False
    if report["ok"] and page.field("intent") == "save":
        await page.call("admin.policies.upsert", {"company_id": page.company, "policy": proposed})
        saved = True
    items = (await page.call("admin.policies.list", {"company_id": page.company}))["items"]
    status = 200 if report["ok"] else 409
    return page.render(
        "policies.html",
        status=status,
        policies=items,
        preflight=report,
        edited=proposed,
        saved=saved,
        active="policies",
    )
