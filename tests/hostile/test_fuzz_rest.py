"""Property-based fuzzing of the REST envelope (``POST /mcp/{action}``) and the admin API.

Whatever arrives (arbitrary JSON, wrong types, out-of-range numbers, huge strings, invalid UTF-8, deep
nesting), the answer is a clear error with a 4xx status (or a 2xx when the input happens to be valid):
never a 500, never a stack trace, never a personal value from the request echoed back.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gateway.support import TOYOTA, Rig

from .support import EMAILS, JSON_VALUES, PHONES, PII, assert_clean_refusal, error_code_of, fuzz_settings, pii_in

ACTIONS = st.sampled_from(
    [
        "inventory.search",
        "inventory.get",
        "inventory.facets",
        "dealer.information",
        "leads.create",
        "leads.get",
        "leads.update",
        "customers.list",
        "consent.create",
        "service.book_appointment",
        "deals.request_trade_value",
        "events.list",
        "admin.keys.create",
        "no.such.action",
    ]
)
AUTH = {"Authorization": "Bearer "}


def _auth(rig: Rig) -> dict[str, str]:
    return {"Authorization": f"Bearer {rig.keys['crm']}"}


@fuzz_settings()
@given(action=ACTIONS, body=JSON_VALUES)
async def test_any_json_body_is_answered_with_a_clean_refusal_or_a_result(rig: Rig, action: str, body: Any) -> None:
    response = await rig.client.post(f"/mcp/{action}", json=body, headers=_auth(rig))
    assert_clean_refusal(response, echoed=pii_in(body), allow_ok=True)
    if response.status_code >= 400:
        assert response.json()["result"] is None


@fuzz_settings()
@given(action=ACTIONS, payload=st.dictionaries(st.text(max_size=24), JSON_VALUES, max_size=6))
async def test_any_payload_in_a_well_formed_envelope_never_fails_the_server(
    rig: Rig, action: str, payload: dict[str, Any]
) -> None:
    body = {"id": "fuzz", "payload": {"dealership_id": TOYOTA, **payload}}
    response = await rig.client.post(f"/mcp/{action}", json=body, headers=_auth(rig))
    assert_clean_refusal(response, echoed=pii_in(payload), allow_ok=True)


@fuzz_settings()
@given(
    email=EMAILS,
    phone=PHONES,
    wrong=st.one_of(st.integers(), st.lists(st.integers(), max_size=3), st.booleans(), st.text(min_size=300)),
)
async def test_an_invalid_lead_never_echoes_the_customers_contact_details(
    rig: Rig, email: str, phone: str, wrong: Any
) -> None:
    payload = {
        "dealership_id": TOYOTA,
        "customer": {"first_name": wrong, "email": email, "phone": phone},
        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
    }
    response = await rig.client.post("/mcp/leads.create", json={"payload": payload}, headers=_auth(rig))
    assert response.status_code == 422
    assert_clean_refusal(response, echoed=[email, phone])


@fuzz_settings(0.5)
@given(
    value=st.one_of(
        st.integers(min_value=2**63, max_value=10**400),
        st.integers(min_value=-(10**400), max_value=-(2**63)),
        st.floats(min_value=1e300, allow_infinity=False),
        st.floats(max_value=-1e300, allow_infinity=False),
        st.floats(min_value=-1e-300, max_value=1e-300),
    ),
    field=st.sampled_from(["limit", "year_min", "price_max", "mileage_max", "year"]),
)
async def test_numbers_out_of_range_are_refused_with_a_4xx(rig: Rig, value: float, field: str) -> None:
    payload = {"dealership_id": TOYOTA, field: value}
    response = await rig.client.post("/mcp/inventory.search", json={"payload": payload}, headers=_auth(rig))
    assert_clean_refusal(response, allow_ok=True)


@fuzz_settings(0.3)
@given(size=st.integers(min_value=200_000, max_value=2_000_000), pii=PII)
async def test_huge_strings_are_refused_cleanly(rig: Rig, size: int, pii: str) -> None:
    payload = {"dealership_id": TOYOTA, "make": pii + "x" * size}
    response = await rig.client.post("/mcp/inventory.search", json={"payload": payload}, headers=_auth(rig))
    assert_clean_refusal(response, echoed=[pii])
    assert error_code_of(response.json()) in ("payload_too_large", "invalid_params")


@fuzz_settings()
@given(prefix=st.binary(max_size=40), bad=st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80"]))
async def test_invalid_utf8_is_refused_with_400(rig: Rig, prefix: bytes, bad: bytes) -> None:
    raw = b'{"payload": {"make": "' + prefix.replace(b'"', b"") + bad + b'"}}'
    response = await rig.client.post(
        "/mcp/inventory.search", content=raw, headers={**_auth(rig), "Content-Type": "application/json"}
    )
    assert_clean_refusal(response)
    assert (response.status_code, error_code_of(response.json())) == (400, "invalid_request")


@fuzz_settings(0.5)
@given(depth=st.integers(min_value=33, max_value=20_000), opener=st.sampled_from(["[", '{"a":']))
async def test_deep_nesting_is_refused_with_400(rig: Rig, depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    raw = '{"payload": {"filters": ' + opener * depth + "1" + closer * depth + "}}"
    response = await rig.client.post(
        "/mcp/inventory.search", content=raw.encode(), headers={**_auth(rig), "Content-Type": "application/json"}
    )
    assert_clean_refusal(response)
    assert (response.status_code, error_code_of(response.json())) == (400, "invalid_request")


@fuzz_settings()
@given(
    path=st.sampled_from(["", "/members/m1", "/policies/p1", "/adapters/a1", "/keys", "/dealerships/d1"]),
    body=JSON_VALUES,
)
async def test_any_admin_body_is_answered_with_a_clean_refusal_or_a_result(rig: Rig, path: str, body: Any) -> None:
    method = "POST" if path == "/keys" else "PUT"
    response = await rig.client.request(
        method,
        f"/admin/v1/companies/demo-motor-group{path}",
        json=body,
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert_clean_refusal(response, echoed=pii_in(body), allow_ok=True)
