"""The tenants-file schema: the example and the demo file are valid, every problem is reported with its path."""

from __future__ import annotations

import copy
from typing import Any

from forecourt.demo import tenants as demo
from forecourt.domain.tenants_file import PolicySpec, dump_tenants, from_tenancy, parse_tenants, to_tenancy

from .conftest import example


def _paths(data: Any) -> dict[str, str]:
    doc, problems = parse_tenants(data)
    assert doc is None
    return {p.path: p.message for p in problems}


def test_the_example_three_rooftop_group_is_valid() -> None:
    doc, problems = parse_tenants(example())
    assert problems == []
    assert doc is not None
    tenancy = to_tenancy(doc)
    assert len(tenancy.dealerships) == 3
    assert {m.id for m in tenancy.members} == {"shopper-agent", "bdc-agent", "it-admin"}


def test_the_demo_tenants_file_keeps_the_fixed_demo_ids() -> None:
    assert demo.PROFILE.id == "demo"
    assert [c.id for c in demo.COMPANIES] == ["demo-motor-group", "demo-bay-autos"]
    assert [d.id for d in demo.DEALERSHIPS] == ["demo-toyota-sf", "demo-honda-oak", "demo-bay-sj"]
    motor = {m.id for m in demo.MEMBERS if m.company_id == "demo-motor-group"}
    assert {"shopper-agent", "crm-agent", "ops-admin"} <= motor


def test_every_problem_is_reported_at_once_with_its_yaml_path() -> None:
    data = example()
    company = data["companies"][0]
    company["rooftops"][0]["timezone"] = "Mars/Olympus"
    company["rooftops"][1]["hours"]["sales"]["monday"] = "9 to 5"
    company["rooftops"][2]["id"] = company["rooftops"][0]["id"]
    company["rooftops"][1]["colour"] = "blue"
    company["members"][0]["dealerships"] = ["somewhere-else"]
    problems = _paths(data)
    assert set(problems) >= {
        "companies[0].rooftops[0].timezone",
        "companies[0].rooftops[1].hours.sales",
        "companies[0].rooftops[1].colour",
        "companies[0].rooftops[2].id",
        "companies[0].members[0].dealerships[0]",
    }


def test_a_file_that_is_not_a_mapping_is_one_problem_at_the_top() -> None:
    assert set(_paths(["not", "a", "mapping"])) == {"(file)"}


def test_a_single_string_is_accepted_where_a_list_of_strings_is_expected() -> None:
    data = example()
    data["companies"][0]["rooftops"][0]["brands"] = "Toyota"
    data["companies"][0]["members"][2]["allowed_tools"] = "*"
    doc, problems = parse_tenants(data)
    assert problems == []
    assert doc is not None
    assert doc.companies[0].rooftops[0].brands == ["Toyota"]
    assert doc.companies[0].members[2].allowed_tools == ["*"]


def test_a_file_exported_from_its_records_describes_the_same_records() -> None:
    doc, _ = parse_tenants(example())
    assert doc is not None
    records = to_tenancy(doc)
    again, problems = parse_tenants(copy.deepcopy(dump_tenants(from_tenancy(records))))
    assert problems == []
    assert again is not None
    back = to_tenancy(again)
    assert sorted(back.dealerships, key=lambda d: d.id) == sorted(records.dealerships, key=lambda d: d.id)
    assert sorted(back.members, key=lambda m: m.id) == sorted(records.members, key=lambda m: m.id)
    assert back.policies == records.policies
    assert back.adapter_settings == records.adapter_settings


def test_every_tenancy_field_has_a_place_in_the_tenants_file() -> None:
    # A field added to a tenancy record must be added to the tenants file too (domain/tenants_file.py), or an
    # apply would reset it and an export would drop it. Extend these sets together with the mapping.
    from forecourt.domain.tenancy import Company, Dealership, Member, Policy

    assert set(Dealership.model_fields) == {
        "id", "company_id", "name", "domain", "timezone", "currency", "brands", "address", "phones", "email",
        "website", "sales_hours", "service_hours", "capabilities", "public_agent", "crm_endpoint", "tax_rate_bps",
        "doc_fee_minor",
    }  # fmt: skip
    assert set(Member.model_fields) == {
        "id", "company_id", "profile_id", "name", "kind", "security_type", "allowed_tools", "scopes",
        "dealership_ids", "is_admin", "oidc_subject", "cert_fingerprint", "agent_config", "active", "toolset",
        "tool_names",
    }  # fmt: skip
    assert set(Company.model_fields) == {"id", "profile_id", "name", "oidc_issuer", "oidc_audience", "oidc_jwks_url"}
    assert set(Policy.model_fields) - {"company_id"} == set(PolicySpec.model_fields)


def test_a_policy_names_the_toolsets_its_members_are_offered_and_unknown_ones_are_reported() -> None:
    data = example()
    policy = data["companies"][0]["policies"][0]
    policy["toolsets"] = "crm"
    doc, problems = parse_tenants(data)
    assert problems == []
    assert doc is not None
    tenancy = to_tenancy(doc)
    assert tenancy.policies[0].toolsets == ("crm",)
    assert from_tenancy(tenancy).companies[0].policies[0].toolsets == ["crm"]
    policy["toolsets"] = ["crm", "sales"]
    assert "companies[0].policies[0].toolsets[1]" in _paths(data)
