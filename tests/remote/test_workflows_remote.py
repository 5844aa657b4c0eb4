"""The workflows family on a remote adapter host: runs start and advance on the host, and each service task's call
of another action comes back to the gateway, with the run's caller, to be authorized, limited and audited there."""

from __future__ import annotations

import httpx

from forecourt.adapters.remote import RemoteAdapter
from forecourt.adapters.remote.wire import sign_service_token
from forecourt.contract import Principal
from forecourt.contract.grants import NESTED_PATH, grant_key, sign_grant
from workflows.bpmn_builder import chain, script, service

from .support import MOTOR, PEPPER, SECRET, TOYOTA, Pair, remote_pair

LOOKUP = chain(
    "remote_lookup",
    service("info", "dealer.information", result="dealer"),
    service("find", "inventory.search", {"limit": "2"}, result="found"),
    script("keep", 'artifacts["dealer"] = dealer["name"]\nartifacts["found"] = len(found["items"])'),
)


async def _upload(pair: Pair, workflow_id: str, bpmn: str) -> None:
    await pair.result(
        "admin.workflows.upload", {"company_id": MOTOR, "workflow_id": workflow_id, "bpmn": bpmn}, key="admin"
    )


async def _new_lead(pair: Pair) -> str:
    page = await pair.result("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1})
    return str(page["items"][0]["id"])


async def test_a_run_on_the_workflows_host_calls_its_steps_through_the_gateway_as_its_caller(template, tmp_path):
    with remote_pair(template, tmp_path, "workflows") as pair:
        assert isinstance(pair.gateway.services.catalogue.adapter_for_id("workflow"), RemoteAdapter)
        await _upload(pair, "remote_lookup", LOOKUP)
        response = await pair.rest("workflow.run", {"dealership_id": TOYOTA, "workflow_id": "remote_lookup"})
        assert response.status_code == 200, response.text
        run = response.json()["result"]["output"]
        assert run["status"] == "completed"
        assert run["artifacts"]["found"] == 2
        assert run["artifacts"]["dealer"]
        assert pair.host.host.calls == 1  # the run itself; its steps came back to the gateway
        trace = response.json()["audit"]["trace"]
        records = await pair.audit(trace, count=3)
        assert [(r.action, r.surface, r.member_id, r.status_code) for r in records] == [
            ("dealer.information", "workflow", "crm-agent", 200),
            ("inventory.search", "workflow", "crm-agent", 200),
            ("workflow.run", "rest", "crm-agent", 200),
        ]
        got = await pair.result("workflow.get", {"dealership_id": TOYOTA, "run_id": run["run_id"]})
        assert got["status"] == "completed"
        assert pair.host.host.calls == 2


async def test_a_step_the_caller_may_not_take_fails_the_remote_run_with_the_gateways_code(template, tmp_path):
    with remote_pair(template, tmp_path, "workflows") as pair:
        lead_id = await _new_lead(pair)
        run = await pair.result(
            "workflow.run",
            {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}},
            key="crm_no_lead_writes",
        )
        assert run["status"] == "failed"
        assert (run["error"]["code"], run["error"]["operator"]) == ("auth.insufficient_scope", "leads.update")
        states = {t["bpmn_id"]: t["state"] for t in run["tasks"]}
        assert (states["load_lead"], states["assign_lead"]) == ("completed", "error")
        lead = await pair.result("leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id})
        assert lead["assigned_to"] != "bdc-rep-1"


async def test_a_nested_call_needs_a_live_grant_the_gateway_signed_not_the_hosts_service_secret(template, tmp_path):
    caller = Principal(method="internal", company_id=MOTOR, member_id=None, subject="operator")
    forged = sign_grant(
        grant_key(SECRET), caller, trace_id="0" * 32, session_id=None, writes=True, depth=1, expires_at=4e9
    )
    service_token = sign_service_token(
        SECRET, family="workflows", region=None, company=MOTOR, action="leads.update", trace_id="0" * 32
    )
    with remote_pair(template, tmp_path, "workflows") as pair:
        async with httpx.AsyncClient(base_url=pair.gateway.base_url) as client:
            for token in (forged, service_token, "not-a-grant"):
                response = await client.post(
                    NESTED_PATH,
                    json={"action": "leads.list", "payload": {"dealership_id": TOYOTA}},
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert (response.status_code, response.json()["error"]["code"]) == (401, "auth.unauthorized")
            genuine = sign_grant(
                grant_key(PEPPER), caller, trace_id="0" * 32, session_id=None, writes=False, depth=1, expires_at=4e9
            )
            read = await client.post(
                NESTED_PATH,
                json={"action": "leads.list", "payload": {"dealership_id": TOYOTA, "limit": 1}},
                headers={"Authorization": f"Bearer {genuine}"},
            )
            assert read.status_code == 200, read.text
            too_deep = sign_grant(
                grant_key(PEPPER), caller, trace_id="0" * 32, session_id=None, writes=False, depth=5, expires_at=4e9
            )
            expired = sign_grant(
                grant_key(PEPPER), caller, trace_id="0" * 32, session_id=None, writes=False, depth=1, expires_at=1e9
            )
            for token, expected in (
                (too_deep, (422, "adapters.nesting_too_deep")),
                (expired, (401, "auth.unauthorized")),
            ):
                refused = await client.post(
                    NESTED_PATH,
                    json={"action": "leads.list", "payload": {"dealership_id": TOYOTA}},
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert (refused.status_code, refused.json()["error"]["code"]) == expected
            write = await client.post(
                NESTED_PATH,
                json={
                    "action": "leads.update",
                    "payload": {"dealership_id": TOYOTA, "lead_id": "x", "status": "contacted"},
                },
                headers={"Authorization": f"Bearer {genuine}"},
            )
            assert write.json()["error"]["code"] == "policy.side_effects_not_allowed"
