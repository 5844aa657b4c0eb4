"""Admin actions: companies, dealerships, members, API keys, policies and adapter settings.

They run through the gateway like every other action, so they are authenticated, rate-limited and
audited the same way. Only admin members (``is_admin``) may call them, and only for their own
company; the CLI calls them as an internal principal (the operator).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from forecourt.actions.admin_access import blocks_admin_path, check_members, check_policies, reopened
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.domain.tenancy import TOOLSET_NAMES, AdapterSetting, Company, Dealership, Member, Policy
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.domain.values import Rule, api_key_problem, expiry, field_error
from forecourt.errors import CompanyNotFound, Forbidden, InvalidParams, MemberNotFound, NotFound
from forecourt.outbound_urls import check_saved_urls, save_context, url_fields
from forecourt.store.base import ApiKeyRecord

if TYPE_CHECKING:
    from forecourt.actions.catalogue import TenancyChanged
    from forecourt.gateway.auth.apikeys import ApiKeyService

_M = TypeVar("_M", bound=BaseModel)
_COMPANY = {"type": "string", "minLength": 1, "maxLength": 128}
_OBJ: dict[str, Any] = {"type": "object"}


def _time_field(payload: Mapping[str, Any], name: str) -> datetime | None:
    """``payload[name]`` as an aware timestamp (``None`` when absent); anything else is a field error, never a 500."""
    value = payload.get(name)
    if value is None:
        return None
    try:
        return parse_rfc3339(str(value))
    except ValueError:
        problem = {"path": f"/{name}", "rule": "format", "expected": "date-time"}
        raise InvalidParams(
            f"{name} must be an RFC 3339 timestamp with an offset.", details={"errors": [problem]}
        ) from None


def _schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], "additionalProperties": False}


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description,
        input_schema=_schema({"company_id": _COMPANY, **props}, ["company_id", *required]),
        output_schema=None,
        adapter="admin",
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        idempotent=True,
        dealer_scoped=False,
        domain="admin",
        tags=("admin",),
    )


ADMIN_ACTIONS: list[Action] = [
    _admin("admin.companies.get", "Show the company.", {}, [], write=False),
    _admin("admin.companies.upsert", "Create or update the company.", {"company": _OBJ}, ["company"], write=True),
    _admin("admin.dealerships.list", "List the company's dealerships.", {}, [], write=False),
    _admin(
        "admin.dealerships.upsert", "Create or update a dealership.", {"dealership": _OBJ}, ["dealership"], write=True
    ),
    _admin("admin.members.list", "List the company's members.", {}, [], write=False),
    _admin("admin.members.upsert", "Create or update a member.", {"member": _OBJ}, ["member"], write=True),
    _admin("admin.keys.list", "List API keys (prefixes only).", {}, [], write=False),
    _admin(
        "admin.keys.create",
        "Create an API key for a member; the key is shown once.",
        {
            "member_id": {"type": "string", "minLength": 1, "maxLength": 128},
            "name": {"type": "string", "maxLength": 200},
            "scopes": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 64},
            "dealership_ids": {"type": "array", "items": {"type": "string", "maxLength": 128}, "maxItems": 1000},
            "expires_at": {"type": "string", "format": "date-time"},
            "toolset": {"enum": list(TOOLSET_NAMES), "description": "MCP toolset offered to this key's callers."},
        },
        ["member_id"],
        write=True,
    ),
    _admin(
        "admin.keys.revoke",
        "Revoke an API key by prefix.",
        {"prefix": {"type": "string", "maxLength": 64}},
        ["prefix"],
        write=True,
    ),
    _admin("admin.policies.list", "List the company's policies.", {}, [], write=False),
    _admin("admin.policies.upsert", "Create or update a policy.", {"policy": _OBJ}, ["policy"], write=True),
    _admin(
        "admin.policies.delete",
        "Delete a policy.",
        {"policy_id": {"type": "string", "maxLength": 128}},
        ["policy_id"],
        write=True,
    ),
    _admin(
        "admin.audit.list",
        "Audit records of the company, oldest first, for a SIEM export.",
        {
            "since": {"type": "string", "format": "date-time"},
            "after_id": {"type": "string", "maxLength": 64},
            "limit": {"type": "integer", "minimum": 1, "maximum": 5000},
        },
        [],
        write=False,
    ),
    _admin(
        "admin.access.restore",
        "Operator only: reopen the company's admin path (policies that deny the admin actions are relaxed).",
        {},
        [],
        write=True,
    ),
    _admin("admin.adapters.list", "List the company's adapter overrides.", {}, [], write=False),
    _admin(
        "admin.adapters.upsert",
        "Set the company's override of an adapter's configuration (settings/adapters/{adapterId}).",
        {"adapter_id": {"type": "string", "maxLength": 64}, "config": _OBJ},
        ["adapter_id", "config"],
        write=True,
    ),
]


def register_admin_actions(catalogue: Catalogue) -> None:
    """Add the admin actions to ``catalogue``."""
    for action in ADMIN_ACTIONS:
        catalogue.add(action)


def _key_view(record: ApiKeyRecord) -> dict[str, Any]:
    return {
        "prefix": record.prefix,
        "member_id": record.member_id,
        "name": record.name,
        "scopes": list(record.scopes),
        "dealership_ids": list(record.dealership_ids),
        "created_at": record.created_at.isoformat(),
        "expires_at": record.expires_at.isoformat() if record.expires_at else None,
        "revoked_at": record.revoked_at.isoformat() if record.revoked_at else None,
        "toolset": record.toolset,
    }


def _parse(model: type[_M], data: Any, company_id: str, ctx: ExecutionContext | None = None) -> _M:
    if not isinstance(data, dict):
        raise InvalidParams("An object is required.")
    context = save_context(allow_private=ctx.settings.allow_private_targets) if ctx is not None else None
    try:
        return model.model_validate({**data, "company_id": company_id}, context=context)
    except ValidationError as exc:
        problems = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:5]]
        raise InvalidParams("The record is invalid.", details={"errors": problems}) from None


async def _refuse_unsafe_urls(ctx: ExecutionContext, urls: list[tuple[str, str | None]]) -> None:
    """Refuse a record whose fetch-target URLs are not allowed (each host name resolved once, here)."""
    problems = await check_saved_urls(urls, allow_private=ctx.settings.allow_private_targets)
    if problems:
        raise InvalidParams("A URL in the record is not an allowed fetch target.", details={"errors": problems[:5]})


async def _require_company(ctx: ExecutionContext, company_id: str) -> None:
    """A write under a company that does not exist names the command that creates it (not a database error)."""
    from forecourt.actions.admin_tenants import missing_company

    async with ctx.store.read() as uow:
        if await uow.tenancy.get_company(company_id) is None:
            raise missing_company(company_id)


async def _refuse_unusable_key(ctx: ExecutionContext, company_id: str, member_id: str) -> None:
    """A key for a member that cannot sign in with one (OIDC or mTLS only, or inactive) is refused up front: it
    would be answered 401 on every call."""
    async with ctx.store.read() as uow:
        member = await uow.tenancy.get_member(company_id, member_id)
    if member is None:
        raise MemberNotFound(details={"member_id": member_id})
    problem = api_key_problem(member.security_type.value, member.active)
    if problem is not None:
        raise field_error("/member_id", Rule.KEY_NOT_USABLE, f"No API key for member {member_id}: {problem}.")


Handler = Callable[[Mapping[str, Any], ExecutionContext, str], Awaitable[Any]]


class AdminAdapter:
    """Runs admin actions against the store and the API-key service."""

    id = "admin"

    def __init__(self, api_keys: ApiKeyService, on_change: TenancyChanged | None = None) -> None:
        self.api_keys = api_keys
        self.on_change = on_change
        self._handlers: dict[str, Handler] = {
            "admin.companies.get": self._company_get,
            "admin.companies.upsert": self._company_upsert,
            "admin.dealerships.list": self._dealerships_list,
            "admin.dealerships.upsert": self._dealership_upsert,
            "admin.members.list": self._members_list,
            "admin.members.upsert": self._member_upsert,
            "admin.keys.list": self._keys_list,
            "admin.keys.create": self._keys_create,
            "admin.keys.revoke": self._keys_revoke,
            "admin.policies.list": self._policies_list,
            "admin.policies.upsert": self._policy_upsert,
            "admin.policies.delete": self._policy_delete,
            "admin.audit.list": self._audit_list,
            "admin.access.restore": self._access_restore,
            "admin.adapters.list": self._adapters_list,
            "admin.adapters.upsert": self._adapter_upsert,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check the caller administers the company, then run the action."""
        company_id = str(payload["company_id"])
        principal = context.principal
        if principal.method != "internal":
            member = principal.member
            if member is None or not member.is_admin or principal.company_id != company_id:
                raise Forbidden("Only the company's administrators may do this.")
        if context.action.name != "admin.companies.upsert":  # a company that does not exist is named, never empty
            await _require_company(context, company_id)
        output = await self._handlers[context.action.name](payload, context, company_id)
        if context.action.side_effect and self.on_change is not None:
            await self.on_change((company_id,))
        return AdapterResult(output=output, result_type="admin.result")

    async def _company_get(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            company = await uow.tenancy.get_company(company_id)
        if company is None:
            raise CompanyNotFound()
        return company.model_dump(mode="json")

    async def _company_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        data = payload["company"]
        company = _parse(Company, {**data, "id": company_id} if isinstance(data, dict) else data, company_id, ctx)
        await _refuse_unsafe_urls(
            ctx, [("/oidc_issuer", company.oidc_issuer), ("/oidc_jwks_url", company.oidc_jwks_url)]
        )
        if ctx.principal.method != "internal":
            async with ctx.store.transaction() as uow:
                existing = await uow.tenancy.get_company(company_id)
            if existing is None or existing.profile_id != company.profile_id:
                raise Forbidden("A company's profile cannot be changed here.")
        company = company.model_copy(update={"id": company_id})
        async with ctx.store.transaction() as uow:
            if await uow.tenancy.get_profile(company.profile_id) is None:
                raise NotFound(
                    f"profile {company.profile_id} does not exist; `forecourt companies create {company_id} "
                    f"--profile {company.profile_id}` creates both"
                )
            await uow.tenancy.upsert_company(company)
        return company.model_dump(mode="json")

    async def _dealerships_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            items = await uow.tenancy.list_dealerships(company_id)
        return {"items": [d.model_dump(mode="json") for d in items]}

    async def _dealership_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        dealership = _parse(Dealership, payload["dealership"], company_id, ctx)
        await _refuse_unsafe_urls(ctx, [("/crm_endpoint", dealership.crm_endpoint)])
        async with ctx.store.transaction() as uow:
            existing = await uow.tenancy.get_dealership(dealership.id)
            if existing is not None and existing.company_id != company_id:
                raise Forbidden("That dealership belongs to another company.")
            await uow.tenancy.upsert_dealership(dealership)
        return dealership.model_dump(mode="json")

    async def _members_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            items = await uow.tenancy.list_members(company_id)
        return {"items": [m.model_dump(mode="json") for m in items]}

    async def _member_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            company = await uow.tenancy.get_company(company_id)
            if company is None:
                raise CompanyNotFound()
            data = payload["member"]
            merged = {"profile_id": company.profile_id, **data} if isinstance(data, dict) else data
            member = _parse(Member, merged, company_id)
            own = {d.id for d in await uow.tenancy.list_dealerships(company_id)}
            if not set(member.dealership_ids) <= own:
                raise Forbidden("A member can only be granted the company's own dealerships.")
            others = [m for m in await uow.tenancy.list_members(company_id) if m.id != member.id]
            check_members([*others, member])
            await uow.tenancy.upsert_member(member)
        return member.model_dump(mode="json")

    async def _keys_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        return {"items": [_key_view(r) for r in await self.api_keys.list(company_id)]}

    async def _keys_create(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        expires = payload.get("expires_at")
        expires_at: datetime | None = expiry(str(expires), ctx.now) if expires else None
        await _refuse_unusable_key(ctx, company_id, str(payload["member_id"]))
        issued = await self.api_keys.create(
            company_id,
            str(payload["member_id"]),
            name=str(payload.get("name", "")),
            scopes=tuple(payload.get("scopes", ())),
            dealership_ids=tuple(payload.get("dealership_ids", ())),
            expires_at=expires_at,
            toolset=payload.get("toolset"),
        )
        return {"key": issued.key, **_key_view(issued.record)}

    async def _keys_revoke(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        prefix = str(payload["prefix"])
        keys = {r.prefix for r in await self.api_keys.list(company_id)}
        if prefix not in keys:
            raise NotFound("API key not found.")
        await self.api_keys.revoke(prefix)
        return {"prefix": prefix, "revoked": True}

    async def _policies_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            items = await uow.tenancy.list_policies(company_id)
        return {"items": [p.model_dump(mode="json") for p in items]}

    async def _policy_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        policy = _parse(Policy, payload["policy"], company_id)
        async with ctx.store.transaction() as uow:
            check_policies([policy])
            await uow.tenancy.upsert_policy(policy)
        return policy.model_dump(mode="json")

    async def _access_restore(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        if ctx.principal.method != "internal":
            raise Forbidden("Only the operator may restore a company's admin access.")
        changed: list[str] = []
        async with ctx.store.transaction() as uow:
            for policy in await uow.tenancy.list_policies(company_id):
                if blocks_admin_path(policy):
                    await uow.tenancy.upsert_policy(reopened(policy))
                    changed.append(policy.id)
            admins = [m.id for m in await uow.tenancy.list_members(company_id) if m.is_admin and m.active]
        return {"company_id": company_id, "reopened_policies": changed, "active_admins": admins}

    async def _policy_delete(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            deleted = await uow.tenancy.delete_policy(company_id, str(payload["policy_id"]))
        if not deleted:
            raise NotFound("Policy not found.")
        return {"deleted": True}

    async def _adapters_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            items = await uow.tenancy.list_adapter_settings(company_id)
        return {"items": [s.model_dump(mode="json") for s in items]}

    async def _adapter_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        setting = AdapterSetting(
            company_id=company_id, adapter_id=str(payload["adapter_id"]), config=dict(payload["config"])
        )
        await _refuse_unsafe_urls(ctx, list(url_fields(setting.config)))
        async with ctx.store.transaction() as uow:
            await uow.tenancy.upsert_adapter_setting(setting)
        return setting.model_dump(mode="json")

    async def _audit_list(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        since = _time_field(payload, "since")
        limit = int(payload.get("limit", 1000))
        after = payload.get("after_id")
        async with ctx.store.transaction() as uow:
            records = await uow.audit.page(company_id, since=since, limit=limit, after_id=str(after) if after else None)
        items = [r.model_dump(mode="json") for r in records]
        return {"items": items, "next_after_id": items[-1]["id"] if len(items) == limit else None}
