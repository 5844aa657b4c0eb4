"""The two shipped dealer processes, end to end through ``Gateway.invoke`` on the demo data."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from forecourt.contract import Action, AdapterResult, ExecutionContext

from .conftest import DEMO_NOW, TOYOTA, Rig

LA = ZoneInfo("America/Los_Angeles")


async def _new_leads(rig: Rig, count: int) -> list[str]:
    page = await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": count})
    ids = [lead["id"] for lead in page["items"]]
    assert len(ids) == count
    return ids


async def _future_service_appointment(rig: Rig) -> dict[str, Any]:
    start = (DEMO_NOW + timedelta(days=2)).isoformat()
    page = await rig.invoke("service.list_appointments", {"dealership_id": TOYOTA, "from": start, "limit": 50})
    booked = [a for a in page["items"] if a["kind"] == "service" and a["status"] == "booked" and a["customer_id"]]
    assert booked, "the demo data has booked service appointments in the next two weeks"
    return dict(booked[0])


def _without_adf_delivery(rig: Rig) -> None:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")


async def test_new_lead_follow_up_assigns_skips_missing_adf_and_waits_for_first_contact(rig: Rig) -> None:
    _without_adf_delivery(rig)
    (lead_id,) = await _new_leads(rig, 1)

    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )

    assert run["status"] == "input_required"
    assert run["version"] == 0
    assert run["artifacts"]["assignment"] == {"lead_id": lead_id, "assigned_to": "bdc-rep-1", "rotation_position": 1}
    assert run["artifacts"]["adf_delivery"] == {"status": "skipped", "reason": "action.unknown"}
    (waiting,) = run["waiting_tasks"]
    assert waiting["bpmn_id"] == "first_contact"
    assert waiting["assignee"] == "bdc-rep-1"
    # 30 business minutes after Monday 07:00, at a showroom that opens at 09:00: 09:30 local.
    assert datetime.fromisoformat(waiting["due_at"]) == datetime(2026, 3, 2, 9, 30, tzinfo=LA)
    events = [(e["event"], e.get("task")) for e in run["log"]]
    assert ("task.skipped", "deliver_adf") in events
    assert ("task.completed", "assign_lead") in events
    lead = await rig.invoke("leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id})
    assert lead["assigned_to"] == "bdc-rep-1"

    done = await rig.invoke(
        "workflow.complete_task",
        {
            "dealership_id": TOYOTA,
            "run_id": run["run_id"],
            "task_id": waiting["task_id"],
            "data": {"outcome": "contacted"},
        },
    )

    assert done["status"] == "completed"
    assert done["artifacts"]["lead_status"] == "contacted"
    assert done["outputs"]["outcome"] == "contacted"
    assert {t["bpmn_id"]: t["state"] for t in done["tasks"]}["mark_contacted"] == "completed"
    lead = await rig.invoke("leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id})
    assert lead["status"] == "contacted"


async def test_new_leads_are_assigned_round_robin(rig: Rig) -> None:
    _without_adf_delivery(rig)
    reps = ["ana", "ben"]
    assigned = []
    for lead_id in await _new_leads(rig, 3):
        run = await rig.invoke(
            "workflow.run",
            {
                "dealership_id": TOYOTA,
                "workflow_id": "new_lead_follow_up",
                "inputs": {"lead_id": lead_id, "bdc_reps": reps},
            },
        )
        assigned.append(run["artifacts"]["assignment"]["assigned_to"])
    assert assigned == ["ana", "ben", "ana"]


class _FakeAdfDelivery:
    """Stands in for the AAP engineer's ``leads.deliver_adf``: records what it was asked to deliver."""

    id = "fake-adf"

    def __init__(self) -> None:
        self.delivered: list[tuple[str, str | None]] = []

    async def execute(self, payload: Any, context: ExecutionContext) -> AdapterResult:
        self.delivered.append((str(payload["lead_id"]), context.principal.member_id))
        return AdapterResult(output={"delivery_id": "dlv-1", "status": "queued"})


async def test_new_lead_follow_up_delivers_adf_when_the_action_exists(rig: Rig) -> None:
    _without_adf_delivery(rig)
    fake = _FakeAdfDelivery()
    rig.services.catalogue.add(
        Action(
            name="leads.deliver_adf",
            type="tool.run",
            title="Deliver ADF",
            description="Fake.",
            input_schema={"type": "object"},
            output_schema=None,
            adapter=fake.id,
            scope="amcp:leads:write",
            side_effect=True,
        )
    )
    rig.services.catalogue.add_adapter(fake)
    (lead_id,) = await _new_leads(rig, 1)

    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )

    assert run["status"] == "input_required"
    assert run["artifacts"]["adf_delivery"]["status"] == "delivered"
    assert fake.delivered == [(lead_id, "crm-agent")]  # called as the workflow's caller


async def test_a_lead_not_reached_gets_another_attempt_planned(rig: Rig) -> None:
    _without_adf_delivery(rig)
    (lead_id,) = await _new_leads(rig, 1)
    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )
    task_id = run["waiting_tasks"][0]["task_id"]

    done = await rig.invoke(
        "workflow.complete_task",
        {"dealership_id": TOYOTA, "run_id": run["run_id"], "task_id": task_id, "data": {"outcome": "no_answer"}},
    )

    assert done["status"] == "completed"
    assert done["artifacts"]["lead_status"] == "new"
    assert datetime.fromisoformat(done["artifacts"]["next_attempt_due"]) == datetime(2026, 3, 2, 13, 0, tzinfo=LA)


async def test_completing_a_task_with_an_unknown_outcome_is_rejected(rig: Rig) -> None:
    _without_adf_delivery(rig)
    (lead_id,) = await _new_leads(rig, 1)
    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )
    payload = {"dealership_id": TOYOTA, "run_id": run["run_id"], "task_id": run["waiting_tasks"][0]["task_id"]}

    wrong = await rig.error("workflow.complete_task", {**payload, "data": {"outcome": "maybe"}})
    missing = await rig.error("workflow.complete_task", {**payload, "data": {}})

    assert wrong.code == "invalid_params"
    assert missing.code == "invalid_params"
    still = await rig.invoke("workflow.get", {"dealership_id": TOYOTA, "run_id": run["run_id"]})
    assert still["status"] == "input_required"


async def test_service_reminder_renders_the_message_and_confirms_the_appointment(rig: Rig) -> None:
    appointment = await _future_service_appointment(rig)
    customer = await rig.invoke("customers.get", {"dealership_id": TOYOTA, "customer_id": appointment["customer_id"]})

    run = await rig.invoke(
        "workflow.run",
        {
            "dealership_id": TOYOTA,
            "workflow_id": "service_appointment_reminder",
            "inputs": {"appointment_id": appointment["id"]},
        },
    )

    assert run["status"] == "input_required"
    reminder = run["artifacts"]["reminder"]
    assert reminder["appointment_id"] == appointment["id"]
    assert customer["first_name"] in reminder["message"]
    assert "Demo Toyota San Francisco" in reminder["message"]
    assert "Reply YES to confirm" in reminder["message"]
    send_at = datetime.fromisoformat(reminder["send_at"]).astimezone(LA)
    start = datetime.fromisoformat(appointment["start"])
    assert send_at <= start - timedelta(hours=24)
    assert start - send_at < timedelta(hours=48)
    assert 7 <= send_at.hour < 18  # within service-lane hours
    (waiting,) = run["waiting_tasks"]
    assert waiting["due_at"] == reminder["send_at"]
    assert waiting["outcome_values"] == ["confirmed", "no_response", "reschedule"]

    done = await rig.invoke(
        "workflow.complete_task",
        {
            "dealership_id": TOYOTA,
            "run_id": run["run_id"],
            "task_id": waiting["task_id"],
            "data": {"response": "confirmed"},
        },
    )

    assert done["status"] == "completed"
    assert done["artifacts"]["outcome"] == "confirmed"
    assert done["artifacts"]["appointment_status"] == "confirmed"
    stored = await rig.invoke("service.get_appointment", {"dealership_id": TOYOTA, "appointment_id": appointment["id"]})
    assert stored["status"] == "confirmed"


async def test_service_reminder_without_an_answer_records_no_response(rig: Rig) -> None:
    appointment = await _future_service_appointment(rig)
    run = await rig.invoke(
        "workflow.run",
        {
            "dealership_id": TOYOTA,
            "workflow_id": "service_appointment_reminder",
            "inputs": {"appointment_id": appointment["id"]},
        },
    )

    done = await rig.invoke(
        "workflow.complete_task",
        {
            "dealership_id": TOYOTA,
            "run_id": run["run_id"],
            "task_id": run["waiting_tasks"][0]["task_id"],
            "data": {"response": "no_response"},
        },
    )

    assert done["artifacts"]["outcome"] == "no_response"
    stored = await rig.invoke("service.get_appointment", {"dealership_id": TOYOTA, "appointment_id": appointment["id"]})
    assert stored["status"] == "booked"


async def test_a_missing_appointment_fails_the_run_with_the_actions_error_code(rig: Rig) -> None:
    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "service_appointment_reminder", "inputs": {"appointment_id": "nope"}},
    )

    assert run["status"] == "failed"
    assert run["error"]["code"] == "service.appointment_not_found"
    assert run["error"]["task"] == "load_appointment"
    assert {t["bpmn_id"]: t["state"] for t in run["tasks"]}["load_appointment"] == "error"


async def test_runs_are_listed_newest_first_and_filtered_by_status(rig: Rig) -> None:
    _without_adf_delivery(rig)
    (lead_id,) = await _new_leads(rig, 1)
    started = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )
    await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "service_appointment_reminder", "inputs": {"appointment_id": "nope"}},
    )

    waiting = await rig.invoke("workflow.list_runs", {"dealership_id": TOYOTA, "status": "input_required"})

    assert [r["run_id"] for r in waiting["items"]] == [started["run_id"]]
    everything = await rig.invoke("workflow.list_runs", {"dealership_id": TOYOTA})
    assert len(everything["items"]) == 2
