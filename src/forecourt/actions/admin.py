"""Admin actions: companies, dealerships, members, API keys, policies and adapter settings.

They run through the gateway like every other action, so they are authenticated, rate-limited and
audited the same way. Only admin members (``is_admin``) may call them, and only for their own
company; the CLI calls them as an internal principal (the operator).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.domain.tenancy import AdapterSetting, Company, Dealership, Member, Policy
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import CompanyNotFound, Forbidden, InvalidParams, NotFound
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.store.base import ApiKeyRecord

_M = TypeVar("_M", bound=BaseModel)
_COMPANY = {"type": "string", "minLength": 1, "maxLength": 128}
_OBJ: dict[str, Any] = {"type": "object"}


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
    }


def _parse(model: type[_M], data: Any, company_id: str) -> _M:
    if not isinstance(data, dict):
        raise InvalidParams("An object is required.")
    try:
        return model.model_validate({**data, "company_id": company_id})
    except ValidationError as exc:
        problems = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:5]]
        raise InvalidParams("The record is invalid.", details={"errors": problems}) from None


Handler = Callable[[Mapping[str, Any], ExecutionContext, str], Awaitable[Any]]


class AdminAdapter:
    """Runs admin actions against the store and the API-key service."""

    id = "admin"

    def __init__(self, api_keys: ApiKeyService, on_change: Callable[[], None] | None = None) -> None:
        self.api_keys = api_keys
        self.on_change = on_change or (lambda: None)
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
        output = await self._handlers[context.action.name](payload, context, company_id)
        if context.action.side_effect:
            self.on_change()
        return AdapterResult(output=output, result_type="admin.result")

    async def _company_get(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            company = await uow.tenancy.get_company(company_id)
        if company is None:
            raise CompanyNotFound()
        return company.model_dump(mode="json")

    async def _company_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        data = payload["company"]
        company = _parse(Company, {**data, "id": company_id} if isinstance(data, dict) else data, company_id)
        if ctx.principal.method != "internal":
            async with ctx.store.transaction() as uow:
                existing = await uow.tenancy.get_company(company_id)
            if existing is None or existing.profile_id != company.profile_id:
                raise Forbidden("A company's profile cannot be changed here.")
        company = company.model_copy(update={"id": company_id})
        async with ctx.store.transaction() as uow:
            await uow.tenancy.upsert_company(company)
        return company.model_dump(mode="json")

    async def _dealerships_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        async with ctx.store.transaction() as uow:
            items = await uow.tenancy.list_dealerships(company_id)
        return {"items": [d.model_dump(mode="json") for d in items]}

    async def _dealership_upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        dealership = _parse(Dealership, payload["dealership"], company_id)
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
            await uow.tenancy.upsert_member(member)
        return member.model_dump(mode="json")

    async def _keys_list(self, _: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        return {"items": [_key_view(r) for r in await self.api_keys.list(company_id)]}

    async def _keys_create(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        expires = payload.get("expires_at")
        expires_at: datetime | None = parse_rfc3339(str(expires)) if expires else None
        issued = await self.api_keys.create(
            company_id,
            str(payload["member_id"]),
            name=str(payload.get("name", "")),
            scopes=tuple(payload.get("scopes", ())),
            dealership_ids=tuple(payload.get("dealership_ids", ())),
            expires_at=expires_at,
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
            await uow.tenancy.upsert_policy(policy)
        return policy.model_dump(mode="json")

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
        async with ctx.store.transaction() as uow:
            await uow.tenancy.upsert_adapter_setting(setting)
        return setting.model_dump(mode="json")

    async def _audit_list(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        since = parse_rfc3339(str(payload["since"])) if payload.get("since") else None
        limit = int(payload.get("limit", 1000))
        after = payload.get("after_id")
        async with ctx.store.transaction() as uow:
            records = await uow.audit.page(company_id, since=since, limit=limit, after_id=str(after) if after else None)
        items = [r.model_dump(mode="json") for r in records]
        return {"items": items, "next_after_id": items[-1]["id"] if len(items) == limit else None}
