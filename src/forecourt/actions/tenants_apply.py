"""Make the database match a tenants file: plan (create / change / unchanged / delete), check, then write.

Everything is checked before anything is written: the file's own structure and references
(:func:`forecourt.domain.tenants_file.parse_tenants`), then what it would collide with in the database (a
rooftop or company of another owner, a domain another rooftop serves). The writes happen in the caller's
unit of work, so an apply is one transaction: it lands whole or not at all. Nothing is deleted unless
``prune`` is given, and then only what belongs to the file's profile and companies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from forecourt.domain.tenants_file import Problem, Tenancy, TenantsFile, from_tenancy, parse_tenants, to_tenancy
from forecourt.errors import InvalidParams, NotFound, TenantsFileInvalid
from forecourt.outbound_urls import check_saved_urls, record_urls
from forecourt.store.base import UnitOfWork

Op = Literal["create", "change", "unchanged", "delete"]


@dataclass(frozen=True)
class Step:
    """One line of a plan."""

    op: Op
    kind: str
    id: str
    company_id: str | None = None
    fields: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {"op": self.op, "kind": self.kind, "id": self.id}
        if self.company_id is not None:
            out["company_id"] = self.company_id
        if self.fields:
            out["fields"] = list(self.fields)
        return out


@dataclass
class Plan:
    """What an apply does, in the order it does it."""

    steps: list[Step] = field(default_factory=list)
    writes: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    """``(tenancy repository method, arguments)`` in order."""

    @property
    def changes(self) -> int:
        """Steps that write something."""
        return sum(1 for s in self.steps if s.op != "unchanged")

    def summary(self) -> dict[str, int]:
        """How many steps of each kind."""
        counts = {"create": 0, "change": 0, "unchanged": 0, "delete": 0}
        for step in self.steps:
            counts[step.op] += 1
        return counts


def _diff(want: BaseModel, have: BaseModel | None) -> tuple[Op, tuple[str, ...]]:
    if have is None:
        return "create", ()
    a, b = want.model_dump(mode="json"), have.model_dump(mode="json")
    changed = tuple(k for k in a if a[k] != b.get(k))
    return ("change", changed) if changed else ("unchanged", ())


def require_valid(data: Any) -> TenantsFile:
    """The validated file, or :class:`TenantsFileInvalid` listing every problem."""
    doc, problems = parse_tenants(data)
    if doc is None:
        raise TenantsFileInvalid(details={"errors": [p.as_dict() for p in problems[:500]]})
    return doc


async def read_state(uow: UnitOfWork, company_ids: Sequence[str]) -> Tenancy:
    """The tenancy records of ``company_ids`` (with an empty profile placeholder)."""
    from forecourt.domain.tenancy import Profile

    state = Tenancy(profile=Profile(id="", name=""))
    for company_id in company_ids:
        company = await uow.tenancy.get_company(company_id)
        if company is None:
            continue
        state.companies.append(company)
        state.dealerships += await uow.tenancy.list_dealerships(company_id)
        state.members += await uow.tenancy.list_members(company_id)
        state.policies += await uow.tenancy.list_policies(company_id)
        state.adapter_settings += await uow.tenancy.list_adapter_settings(company_id)
    return state


async def export_profile(uow: UnitOfWork, profile_id: str | None) -> TenantsFile:
    """The tenants file of one profile (the only one when ``profile_id`` is ``None``)."""
    companies = await uow.tenancy.list_companies()
    profiles = sorted({c.profile_id for c in companies})
    if profile_id is None:
        if len(profiles) != 1:
            raise InvalidParams("Name the profile to export (--profile).", details={"profiles": profiles[:100]})
        profile_id = profiles[0]
    profile = await uow.tenancy.get_profile(profile_id)
    if profile is None:
        raise NotFound(f"profile {profile_id} does not exist")
    state = await read_state(uow, [c.id for c in companies if c.profile_id == profile_id])
    state.profile = profile
    return from_tenancy(state)


async def _conflicts(uow: UnitOfWork, doc: TenantsFile, want: Tenancy) -> list[Problem]:
    problems: list[Problem] = []
    owners = {c.id for c in doc.companies}
    for ci, company in enumerate(doc.companies):
        existing = await uow.tenancy.get_company(company.id)
        if existing is not None and existing.profile_id != doc.profile.id:
            problems.append(
                Problem(f"companies[{ci}].id", f"company {company.id} belongs to profile {existing.profile_id}")
            )
        for ri, rooftop in enumerate(company.rooftops):
            path = f"companies[{ci}].rooftops[{ri}]"
            other = await uow.tenancy.get_dealership(rooftop.id)
            if other is not None and other.company_id != company.id:
                problems.append(Problem(f"{path}.id", f"dealership {rooftop.id} belongs to company {other.company_id}"))
            if rooftop.domain:
                holder = await uow.tenancy.get_dealership_by_domain(rooftop.domain)
                # Another rooftop holds the domain, unless it is one of the file's own, moving elsewhere in it.
                ours = {d.id for d in want.dealerships} if holder and holder.company_id in owners else set()
                if holder is not None and holder.id != rooftop.id and holder.id not in ours:
                    problems.append(Problem(f"{path}.domain", f"domain is already served by dealership {holder.id}"))
    return problems


async def _unsafe_urls(doc: TenantsFile, want: Tenancy, *, allow_private: bool) -> list[Problem]:
    """The file's fetch-target URLs that may not be saved (the check every save path makes)."""
    dealerships = {d.id: d for d in want.dealerships}
    companies = {c.id: c for c in want.companies}
    urls: list[tuple[str, str | None]] = []
    for ci, company in enumerate(doc.companies):
        urls += [(f"companies[{ci}].{p[1:]}", u) for p, u in record_urls(companies[company.id])]
        for ri, rooftop in enumerate(company.rooftops):
            urls += [(f"companies[{ci}].rooftops[{ri}].{p[1:]}", u) for p, u in record_urls(dealerships[rooftop.id])]
    found = await check_saved_urls(urls, allow_private=allow_private)
    return [Problem(_file_path(p["path"]), f"not an allowed fetch target ({p['reason']})") for p in found]


_FILE_FIELDS = {
    "crm_endpoint": "crm.endpoint",
    "oidc_issuer": "oidc.issuer",
    "oidc_jwks_url": "oidc.jwks_url",
}


def _file_path(path: str) -> str:
    """A record field's path as the tenants file spells it (``...rooftops[0].crm.endpoint``)."""
    head, _, name = path.rpartition(".")
    return f"{head}.{_FILE_FIELDS.get(name, name)}"


async def plan_apply(uow: UnitOfWork, data: Any, *, prune: bool = False, allow_private: bool = False) -> Plan:
    """Validate ``data`` (a loaded YAML document) and plan what applying it changes; writes nothing.

    Raises:
        TenantsFileInvalid: Every problem of the file, with YAML paths (unsafe fetch-target URLs included).
    """
    doc = require_valid(data)
    want = to_tenancy(doc)
    problems = await _unsafe_urls(doc, want, allow_private=allow_private) + await _conflicts(uow, doc, want)
    if problems:
        raise TenantsFileInvalid(details={"errors": [p.as_dict() for p in problems[:500]]})
    profile_companies = [c.id for c in await uow.tenancy.list_companies() if c.profile_id == doc.profile.id]
    have = await read_state(uow, sorted({*profile_companies, *(c.id for c in want.companies)}))
    plan = Plan()
    t = uow.tenancy
    op, fields = _diff(want.profile, await t.get_profile(doc.profile.id))
    plan.steps.append(Step(op, "profile", want.profile.id, None, fields))
    if op != "unchanged":
        plan.writes.append(("upsert_profile", (want.profile,)))
    _plan_kind(plan, "company", want.companies, have.companies, lambda c: c.id, None, "upsert_company")
    _plan_kind(
        plan, "dealership", want.dealerships, have.dealerships, lambda d: d.id, "company_id", "upsert_dealership"
    )
    _plan_kind(
        plan, "member", want.members, have.members, lambda m: (m.company_id, m.id), "company_id", "upsert_member"
    )
    _plan_kind(
        plan, "policy", want.policies, have.policies, lambda p: (p.company_id, p.id), "company_id", "upsert_policy"
    )
    _plan_kind(
        plan,
        "adapter_setting",
        want.adapter_settings,
        have.adapter_settings,
        lambda s: (s.company_id, s.adapter_id),
        "company_id",
        "upsert_adapter_setting",
    )
    if prune:
        _plan_prune(plan, want, have)
    return plan


def _plan_kind(
    plan: Plan,
    kind: str,
    want: Sequence[Any],
    have: Sequence[Any],
    key: Callable[[Any], Any],
    company_field: str | None,
    writer: str,
) -> None:
    existing = {key(h): h for h in have}
    for item in want:
        op, fields = _diff(item, existing.get(key(item)))
        ident = item.adapter_id if kind == "adapter_setting" else item.id
        company = getattr(item, company_field) if company_field else None
        plan.steps.append(Step(op, kind, ident, company, fields))
        if op != "unchanged":
            plan.writes.append((writer, (item,)))


def _plan_prune(plan: Plan, want: Tenancy, have: Tenancy) -> None:
    wanted_members = {(m.company_id, m.id) for m in want.members}
    for m in have.members:
        if (m.company_id, m.id) not in wanted_members:
            plan.steps.append(Step("delete", "member", m.id, m.company_id))
            plan.writes.append(("delete_member", (m.company_id, m.id)))
    wanted_policies = {(p.company_id, p.id) for p in want.policies}
    for p in have.policies:
        if (p.company_id, p.id) not in wanted_policies:
            plan.steps.append(Step("delete", "policy", p.id, p.company_id))
            plan.writes.append(("delete_policy", (p.company_id, p.id)))
    wanted_settings = {(s.company_id, s.adapter_id) for s in want.adapter_settings}
    for s in have.adapter_settings:
        if (s.company_id, s.adapter_id) not in wanted_settings:
            plan.steps.append(Step("delete", "adapter_setting", s.adapter_id, s.company_id))
            plan.writes.append(("delete_adapter_setting", (s.company_id, s.adapter_id)))
    wanted_dealerships = {d.id for d in want.dealerships}
    for d in have.dealerships:
        if d.id not in wanted_dealerships:
            plan.steps.append(Step("delete", "dealership", d.id, d.company_id))
            plan.writes.append(("delete_dealership", (d.id,)))
    wanted_companies = {c.id for c in want.companies}
    for c in have.companies:
        if c.id not in wanted_companies:
            plan.steps.append(Step("delete", "company", c.id))
            plan.writes.append(("delete_company", (c.id,)))


async def run_plan(uow: UnitOfWork, plan: Plan) -> None:
    """Write a plan in ``uow`` (the caller's transaction: all of it or none)."""
    for method, args in plan.writes:
        await getattr(uow.tenancy, method)(*args)


async def apply_tenants(
    uow: UnitOfWork, data: Any, *, prune: bool = False, dry_run: bool = False, allow_private: bool = False
) -> Plan:
    """Plan and, unless ``dry_run``, write a tenants file in ``uow`` (``allow_private``: the fetch-target rule for
    the file's URLs, ``settings.allow_private_targets``)."""
    plan = await plan_apply(uow, data, prune=prune, allow_private=allow_private)
    if not dry_run:
        await run_plan(uow, plan)
    return plan
