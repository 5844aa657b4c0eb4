"""The tenant-isolation matrix: every action in the catalogue, called with another tenant's credential, is denied.

The matrix iterates the live catalogue, so an action added by anyone is covered without touching this file.
Each call carries a payload that validates against the action's input schema (built from the schema's
required fields), so the denial comes from tenancy, not from validation; it returns no data and leaves an
audit record with ``result_class == "denied"``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from forecourt.contract import Action
from gateway.support import BAY, BAY_SJ, HONDA, MOTOR, TOYOTA, Rig

from .support import minimal_payload

DENIAL_CODES = {"auth.tenancy_denied", "auth.forbidden", "auth.unauthorized", "auth.insufficient_scope"}

# (key name in the template, the company that key belongs to, the other tenant's company, its dealerships)
CROSSINGS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("bay", BAY, MOTOR, (TOYOTA, HONDA)),
    ("crm", MOTOR, BAY, (BAY_SJ,)),
    ("admin", MOTOR, BAY, (BAY_SJ,)),
]


def _attempts(action: Action, other_company: str, other_dealerships: tuple[str, ...]) -> list[dict[str, Any]]:
    """Envelope arguments aiming ``action`` at the other tenant, one per dealership (or one for the company)."""
    properties = action.input_schema.get("properties") or {}
    if "dealership_id" in properties:
        return [
            {"payload": minimal_payload(action.input_schema, dealership_id=d), "company": None}
            for d in other_dealerships
        ]
    if "company_id" in properties:
        return [{"payload": minimal_payload(action.input_schema, company_id=other_company), "company": None}]
    # Nothing in the payload names a tenant (the AAP skills take the dealership from the URL of the A2A
    # front door): claim the other company in the envelope instead.
    return [{"payload": minimal_payload(action.input_schema), "company": other_company}]


async def _denied_cleanly(rig: Rig, key: str, action: Action, attempt: dict[str, Any]) -> tuple[str, str]:
    """What went wrong (empty when the call was denied cleanly, with no data), and the call's trace id."""
    response = await rig.call(action.name, attempt["payload"], key=key, company=attempt["company"])
    body = response.json()
    code = (body.get("status") or {}).get("error", {}).get("code")
    if response.status_code not in (401, 403) or code not in DENIAL_CODES:
        return f"{action.name} with {key}: {response.status_code} {code}", ""
    if body.get("result") is not None:
        return f"{action.name} with {key}: returned data", ""
    return "", str(body["audit"]["trace"])


def _audited_as_denied(records: list[Any], action: str, key: str) -> str:
    """An empty string when the call's records are exactly one ``denied`` record of ``action``."""
    if [r.result_class for r in records] != ["denied"]:
        return f"{action} with {key}: audit {[r.result_class for r in records]}"
    if records[0].action != action:
        return f"{action} with {key}: audited as {records[0].action}"
    return ""


async def test_every_action_called_with_another_tenants_credential_is_denied_without_data_and_audited(
    rig: Rig,
) -> None:
    # Public metadata (agent-card discovery) is the same for every caller and names no tenant's data.
    actions = [a for a in rig.services.catalogue.all() if not a.public]
    assert len(actions) >= 30
    failures: list[str] = []
    denied: list[tuple[str, str, str, str]] = []  # (the caller's company, trace id, action, key)
    for key, own, other, other_dealerships in CROSSINGS:
        for action in actions:
            for attempt in _attempts(action, other, other_dealerships):
                problem, trace = await _denied_cleanly(rig, key, action, attempt)
                if problem:
                    failures.append(problem)
                else:
                    denied.append((own, trace, action.name, key))
    # The audit is read once at the end (one flush, one read per company), not after every call.
    by_trace: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for company in {own for own, _, _, _ in denied}:
        for record in await rig.audit(company):
            by_trace[(company, record.trace_id)].append(record)
    failures += [_audited_as_denied(by_trace[(own, trace)], name, key) for own, trace, name, key in denied]
    failures = [f for f in failures if f]
    assert not failures, "\n".join(failures)
    assert len(denied) >= len(actions) * len(CROSSINGS)


async def test_a_payload_built_for_the_matrix_is_accepted_by_the_owning_tenant(rig: Rig) -> None:
    """The matrix's payloads are valid: with the owner's credential they pass validation and authorization."""
    refused_for_input = []
    for action in rig.services.catalogue.all():
        if "dealership_id" not in (action.input_schema.get("properties") or {}) or ":admin:" in action.scope:
            continue
        response = await rig.call(
            action.name, minimal_payload(action.input_schema, dealership_id=TOYOTA), key="crm", allow_side_effects=True
        )
        error = (response.json().get("status") or {}).get("error") or {}
        # A rule the adapter checks (a start time in the past) may still refuse it; the schema may not.
        schema_refusal = error.get("code") == "invalid_params" and "errors" in (error.get("details") or {})
        if schema_refusal or error.get("code") == "invalid_request" or response.status_code in (401, 403):
            refused_for_input.append(f"{action.name}: {response.status_code} {error}")
    assert not refused_for_input, "\n".join(refused_for_input)
