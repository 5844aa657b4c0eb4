"""Operator actions: companies, rooftops and members, tenants files, operator keys and lead reports.

The operator sits above every company (it creates them), so these actions take no caller company and only
the operator may run them: the command line (``forecourt companies|dealerships|members|apply|operator``),
or an operator key over the wire. They go through the gateway like every other call, so each is audited
(under the company it concerns, with ``member_id`` ``operator``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from forecourt.actions.admin_operator import NOT_TENANCY, OPERATOR_ACTIONS, OPERATOR_HANDLERS
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.domain.tenancy import Company, Dealership, Member, Profile
from forecourt.errors import (
    AlreadyExists,
    CompanyNotFound,
    DealershipNotFound,
    Forbidden,
    InvalidParams,
    MemberNotFound,
)
from forecourt.outbound_urls import refuse_unsafe_records
from forecourt.store.base import UnitOfWork

if TYPE_CHECKING:
    from forecourt.actions.catalogue import TenancyChanged
    from forecourt.gateway.auth.operator import OperatorKeys

ADAPTER_ID = "tenants"
_ID = {"type": "string", "minLength": 1, "maxLength": 128}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
_OBJ: dict[str, Any] = {"type": "object"}


def _action(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description + " Operator only.",
        input_schema={"type": "object", "properties": props, "required": required, "additionalProperties": False},
        output_schema=None,
        adapter=ADAPTER_ID,
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        idempotent=not write,
        dealer_scoped=False,
        domain="admin",
        tags=("admin", "operator"),
        timeout_s=60.0,
    )


_COMPANY_FIELDS = {
    "name": _NAME,
    "profile_id": _ID,
    "oidc_issuer": {"type": ["string", "null"], "maxLength": 500},
    "oidc_audience": {"type": ["string", "null"], "maxLength": 500},
    "oidc_jwks_url": {"type": ["string", "null"], "maxLength": 500},
}
_OIDC_FIELDS = ("oidc_issuer", "oidc_audience", "oidc_jwks_url")
"""A company's OIDC settings: ``null`` or ``""`` clears one (sign-in by OIDC then stops)."""

TENANT_ACTIONS: list[Action] = [
    _action(
        "admin.companies.create",
        "Create a company (and its profile).",
        {"company_id": _ID, **_COMPANY_FIELDS},
        ["company_id"],
        write=True,
    ),
    _action("admin.companies.list", "List every company.", {}, [], write=False),
    _action(
        "admin.companies.show",
        "A company with its rooftops and members.",
        {"company_id": _ID},
        ["company_id"],
        write=False,
    ),
    _action(
        "admin.companies.update",
        "Change a company.",
        {"company_id": _ID, **_COMPANY_FIELDS},
        ["company_id"],
        write=True,
    ),
    _action(
        "admin.dealerships.create",
        "Create a rooftop of a company (tenants-file rooftop fields).",
        {"company_id": _ID, "dealership": _OBJ},
        ["company_id", "dealership"],
        write=True,
    ),
    _action("admin.dealerships.find", "List rooftops (of one company, or all).", {"company_id": _ID}, [], write=False),
    _action(
        "admin.dealerships.update",
        "Change a rooftop (tenants-file rooftop fields).",
        {"company_id": _ID, "dealership_id": _ID, "changes": _OBJ},
        ["company_id", "dealership_id", "changes"],
        write=True,
    ),
    _action(
        "admin.members.create",
        "Create a member of a company (tenants-file member fields).",
        {"company_id": _ID, "member": _OBJ},
        ["company_id", "member"],
        write=True,
    ),
    _action(
        "admin.members.update",
        "Change a member (tenants-file member fields).",
        {"company_id": _ID, "member_id": _ID, "changes": _OBJ},
        ["company_id", "member_id", "changes"],
        write=True,
    ),
    _action(
        "admin.tenants.apply",
        "Make the database match a tenants file (plan first; all or nothing).",
        {"document": _OBJ, "dry_run": {"type": "boolean"}, "prune": {"type": "boolean"}},
        ["document"],
        write=True,
    ),
    _action("admin.tenants.export", "The tenants file of a profile.", {"profile_id": _ID}, [], write=False),
    _action(
        "admin.operator_keys.create",
        "Create an operator key (shown once); with `first`, only when no operator key was ever made.",
        {"name": _NAME, "first": {"type": "boolean"}},
        ["name"],
        write=True,
    ),
    _action("admin.operator_keys.list", "List operator keys (prefixes only).", {}, [], write=False),
    _action("admin.operator_keys.revoke", "Revoke an operator key.", {"prefix": _ID}, ["prefix"], write=True),
    _action(
        "admin.leads.report",
        "A lead's status and its CRM deliveries.",
        {"lead_id": _ID, "dealership_id": _ID},
        ["lead_id"],
        write=False,
    ),
]


def register_tenant_actions(catalogue: Catalogue) -> None:
    """Add the operator's tenant and data actions to ``catalogue`` (the adapter is added by bootstrap)."""
    for action in (*TENANT_ACTIONS, *OPERATOR_ACTIONS):
        catalogue.add(action)


def missing_company(company_id: str) -> CompanyNotFound:
    """The error for a parent company that does not exist, naming the command that creates it."""
    return CompanyNotFound(
        f"company {company_id} does not exist; create it with `forecourt companies create {company_id}`",
        details={"company_id": company_id},
    )


def _problems(exc: ValidationError, prefix: str) -> InvalidParams:
    from forecourt.domain.tenants_file import Problem, value_rule, yaml_path  # (tenants files: see _rooftop_from)

    errors = [
        Problem(yaml_path((prefix, *e["loc"])), e["msg"], value_rule(e["type"])).as_dict()
        for e in exc.errors(include_url=False)
    ]
    return InvalidParams("The record is invalid.", details={"errors": errors[:50]})


def _companies_touched(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """The companies a tenant change touched: the one it names, a tenants file's, else any (``"*"``)."""
    if isinstance(payload.get("company_id"), str):
        return (payload["company_id"],)
    document = payload.get("document")
    companies = document.get("companies") if isinstance(document, Mapping) else None
    if isinstance(companies, list):
        found = tuple(str(c["id"]) for c in companies if isinstance(c, Mapping) and isinstance(c.get("id"), str))
        return (*found, "*") if payload.get("prune") else found
    return ("*",)


def _company_of(data: Mapping[str, Any]) -> Company:
    try:
        return Company.model_validate(dict(data))
    except ValidationError as exc:
        raise _problems(exc, "company") from None


def _rooftop_from(company_id: str, data: Mapping[str, Any]) -> Dealership:
    # The tenants-file models load with the first change to tenants: a command that changes none never needs them.
    from forecourt.domain.tenants_file import RooftopSpec, dealership_of

    try:
        spec = RooftopSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise _problems(exc, "dealership") from None
    return dealership_of(company_id, spec)


def _member_from(profile_id: str, company_id: str, data: Mapping[str, Any]) -> Member:
    from forecourt.domain.tenants_file import MemberSpec, member_of

    try:
        spec = MemberSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise _problems(exc, "member") from None
    return member_of(profile_id, company_id, spec)


async def _company(uow: UnitOfWork, company_id: str) -> Company:
    company = await uow.tenancy.get_company(company_id)
    if company is None:
        raise missing_company(company_id)
    return company


async def _check_grants(uow: UnitOfWork, member: Member) -> None:
    own = {d.id for d in await uow.tenancy.list_dealerships(member.company_id)}
    unknown = sorted(set(member.dealership_ids) - own)
    if unknown:
        raise DealershipNotFound(
            f"dealership {unknown[0]} is not a rooftop of company {member.company_id}; "
            f"create it with `forecourt dealerships create {unknown[0]} --company {member.company_id}`",
            details={"dealership_id": unknown[0]},
        )


Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]


class TenantsAdapter:
    """Runs the operator's tenant actions against the store."""

    id = ADAPTER_ID

    def __init__(self, operator_keys: OperatorKeys, on_change: TenancyChanged | None = None) -> None:
        self.operator_keys = operator_keys
        self.on_change = on_change
        self._handlers: dict[str, Handler] = {
            "admin.companies.create": self._company_create,
            "admin.companies.list": self._companies_list,
            "admin.companies.show": self._company_show,
            "admin.companies.update": self._company_update,
            "admin.dealerships.create": self._dealership_create,
            "admin.dealerships.find": self._dealerships_find,
            "admin.dealerships.update": self._dealership_update,
            "admin.members.create": self._member_create,
            "admin.members.update": self._member_update,
            "admin.tenants.apply": self._apply,
            "admin.tenants.export": self._export,
            "admin.operator_keys.create": self._key_create,
            "admin.operator_keys.list": self._keys_list,
            "admin.operator_keys.revoke": self._key_revoke,
            "admin.leads.report": self._lead_report,
            **OPERATOR_HANDLERS,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the action when the caller is the operator."""
        if not context.principal.is_operator:
            raise Forbidden("Only the operator may do this.")
        output = await self._handlers[context.action.name](payload, context)
        if context.action.side_effect and self.on_change is not None and context.action.name not in NOT_TENANCY:
            await self.on_change(_companies_touched(payload))
        return AdapterResult(output=output, result_type="admin.result")

    # ------------------------------------------------------------------ companies

    async def _company_create(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = str(payload["company_id"])
        name = str(payload.get("name") or company_id)
        profile_id = str(payload.get("profile_id") or company_id)
        async with ctx.store.transaction() as uow:
            if await uow.tenancy.get_company(company_id) is not None:
                raise AlreadyExists(f"company {company_id} already exists", details={"company_id": company_id})
            if await uow.tenancy.get_profile(profile_id) is None:
                await uow.tenancy.upsert_profile(Profile(id=profile_id, name=name))
            company = _company_of(
                {"id": company_id, "profile_id": profile_id, "name": name}
                | {k: payload[k] for k in _OIDC_FIELDS if payload.get(k)}
            )
            await refuse_unsafe_records([company], allow_private=ctx.settings.allow_private_targets)
            await uow.tenancy.upsert_company(company)
        return company.model_dump(mode="json")

    async def _companies_list(self, _: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        async with ctx.store.read() as uow:
            companies = await uow.tenancy.list_companies()
            rooftops = await uow.tenancy.list_dealerships()
        counts: dict[str, int] = {}
        for d in rooftops:
            counts[d.company_id] = counts.get(d.company_id, 0) + 1
        return {"items": [{**c.model_dump(mode="json"), "dealerships": counts.get(c.id, 0)} for c in companies]}

    async def _company_show(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        async with ctx.store.read() as uow:
            company = await _company(uow, str(payload["company_id"]))
            rooftops = await uow.tenancy.list_dealerships(company.id)
            members = await uow.tenancy.list_members(company.id)
            policies = await uow.tenancy.list_policies(company.id)
        return {
            **company.model_dump(mode="json"),
            "dealerships": [{"id": d.id, "name": d.name, "domain": d.domain} for d in rooftops],
            "members": [{"id": m.id, "name": m.name, "kind": m.kind.value, "admin": m.is_admin} for m in members],
            "policies": [p.id for p in policies],
        }

    async def _company_update(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        async with ctx.store.transaction() as uow:
            company = await _company(uow, str(payload["company_id"]))
            changes = {k: payload[k] for k in _COMPANY_FIELDS if k in payload}
            changes |= {k: None for k in _OIDC_FIELDS if k in changes and not changes[k]}
            if "profile_id" in changes and await uow.tenancy.get_profile(str(changes["profile_id"])) is None:
                raise InvalidParams(f"profile {changes['profile_id']} does not exist")
            company = _company_of(company.model_dump() | changes)
            await refuse_unsafe_records([company], allow_private=ctx.settings.allow_private_targets)
            await uow.tenancy.upsert_company(company)
        return company.model_dump(mode="json")

    # ------------------------------------------------------------------ dealerships and members

    async def _dealership_create(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = str(payload["company_id"])
        async with ctx.store.transaction() as uow:
            await _company(uow, company_id)
            dealership = _rooftop_from(company_id, payload["dealership"])
            if await uow.tenancy.get_dealership(dealership.id) is not None:
                raise AlreadyExists(f"dealership {dealership.id} already exists", details={"id": dealership.id})
            await refuse_unsafe_records([dealership], allow_private=ctx.settings.allow_private_targets)
            await uow.tenancy.upsert_dealership(dealership)
        return dealership.model_dump(mode="json")

    async def _dealerships_find(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = payload.get("company_id")
        async with ctx.store.read() as uow:
            if company_id is not None:
                await _company(uow, str(company_id))
            items = await uow.tenancy.list_dealerships(str(company_id) if company_id else None)
        return {"items": [d.model_dump(mode="json") for d in items]}

    async def _dealership_update(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id, dealership_id = str(payload["company_id"]), str(payload["dealership_id"])
        async with ctx.store.transaction() as uow:
            await _company(uow, company_id)
            current = await uow.tenancy.get_dealership(dealership_id)
            if current is None or current.company_id != company_id:
                raise DealershipNotFound(
                    f"dealership {dealership_id} of company {company_id} does not exist; create it with "
                    f"`forecourt dealerships create {dealership_id} --company {company_id}`"
                )
            from forecourt.domain.tenants_file import rooftop_spec_of

            merged = {**rooftop_spec_of(current).model_dump(), **dict(payload["changes"]), "id": dealership_id}
            dealership = _rooftop_from(company_id, merged)
            await refuse_unsafe_records([dealership], allow_private=ctx.settings.allow_private_targets)
            await uow.tenancy.upsert_dealership(dealership)
        return dealership.model_dump(mode="json")

    async def _member_create(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = str(payload["company_id"])
        async with ctx.store.transaction() as uow:
            company = await _company(uow, company_id)
            member = _member_from(company.profile_id, company_id, payload["member"])
            if await uow.tenancy.get_member(company_id, member.id) is not None:
                raise AlreadyExists(f"member {member.id} of {company_id} already exists", details={"id": member.id})
            await _check_grants(uow, member)
            await uow.tenancy.upsert_member(member)
        return member.model_dump(mode="json")

    async def _member_update(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id, member_id = str(payload["company_id"]), str(payload["member_id"])
        async with ctx.store.transaction() as uow:
            company = await _company(uow, company_id)
            current = await uow.tenancy.get_member(company_id, member_id)
            if current is None:
                raise MemberNotFound(
                    f"member {member_id} of company {company_id} does not exist; create it with "
                    f"`forecourt members create {member_id} --company {company_id}`"
                )
            from forecourt.domain.tenants_file import member_spec_of

            merged = {**member_spec_of(current).model_dump(), **dict(payload["changes"]), "id": member_id}
            member = _member_from(company.profile_id, company_id, merged)
            await _check_grants(uow, member)
            await uow.tenancy.upsert_member(member)
        return member.model_dump(mode="json")

    # ------------------------------------------------------------------ tenants files

    async def _apply(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        from forecourt.actions.tenants_apply import apply_tenants

        dry_run = bool(payload.get("dry_run", False))
        async with ctx.store.transaction() as uow:
            plan = await apply_tenants(
                uow,
                payload["document"],
                prune=bool(payload.get("prune")),
                dry_run=dry_run,
                allow_private=ctx.settings.allow_private_targets,
            )
        return {
            "applied": not dry_run and plan.changes > 0,
            "dry_run": dry_run,
            "changes": plan.changes,
            "summary": plan.summary(),
            "plan": [s.as_dict() for s in plan.steps],
        }

    async def _export(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        from forecourt.actions.tenants_apply import export_profile
        from forecourt.domain.tenants_file import dump_tenants

        profile_id = payload.get("profile_id")
        async with ctx.store.read() as uow:
            doc = await export_profile(uow, str(profile_id) if profile_id else None)
        return {"document": dump_tenants(doc)}

    # ------------------------------------------------------------------ operator keys and reports

    async def _key_create(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        if payload.get("first"):
            issued = await self.operator_keys.bootstrap(str(payload["name"]))
            if issued is None:
                return {"key": None, "prefix": None, "name": str(payload["name"])}
        else:
            issued = await self.operator_keys.create(str(payload["name"]))
        if issued is None:
            raise AlreadyExists("an operator key with that name exists", details={"name": str(payload["name"])})
        return {"key": issued.key, "prefix": issued.record.prefix, "name": issued.record.name}

    async def _keys_list(self, _: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        return {
            "items": [
                {
                    "prefix": r.prefix,
                    "name": r.name,
                    "created_at": r.created_at.isoformat(),
                    "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None,
                }
                for r in await self.operator_keys.list()
            ]
        }

    async def _key_revoke(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        await self.operator_keys.revoke(str(payload["prefix"]))
        return {"prefix": str(payload["prefix"]), "revoked": True}

    async def _lead_report(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        from forecourt.actions.lead_delivery import lead_report

        dealership = payload.get("dealership_id")
        return await lead_report(ctx.store, str(payload["lead_id"]), str(dealership) if dealership else None)
