"""One example call per tool, appended to its description (``Example: {...}``) so a model sees the shape.

Examples use the demo tenants' ids; the arguments are what a model would send (``dealership_id`` can be left
out when the credential covers one dealership).
"""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "inventory.search": '{"make": ["Toyota"], "body": ["suv"], "price_max": 3500000, "limit": 3}',
    "inventory.facets": '{"condition": ["used"]}',
    "inventory.get": '{"vin": "4T1B11HK5KU000001"}',
    "knowledge.search_inventory": '{"query": "family SUV under $35k with low miles"}',
    "knowledge.query": '{"query": "service department hours"}',
    "dealer.information": '{"dealership_id": "demo-toyota-sf"}',
    "leads.create": '{"customer": {"first_name": "Ana", "email": "ana@example.com"}, "message": "Is it available?"}',
    "leads.list": '{"status": "new", "limit": 10}',
    "leads.get": '{"lead_id": "lead_tsf_0001"}',
    "leads.update": '{"lead_id": "lead_tsf_0001", "status": "contacted"}',
    "leads.delivery_status": '{"lead_id": "lead_tsf_0001"}',
    "customers.list": '{"limit": 10}',
    "customers.get": '{"customer_id": "cus_tsf_0001"}',
    "consent.create": '{"customer_id": "cus_tsf_0001", "scope": ["marketing"], "allowed_channels": ["email"]}',
    "consent.list": '{"customer_id": "cus_tsf_0001"}',
    "consent.get": '{"consent_id": "cons_tsf_0001"}',
    "consent.update": '{"consent_id": "cons_tsf_0001", "status": "revoked"}',
    "service.book_appointment": '{"vehicle_id": "<vehicle id from a search>", "start": "2026-12-01T09:00:00-08:00", '
    '"service_codes": ["oil_change"]}',
    "service.list_appointments": '{"from": "2026-12-01T00:00:00-08:00", "to": "2026-12-02T00:00:00-08:00"}',
    "service.get_appointment": '{"appointment_id": "appt_tsf_sv0001"}',
    "service.update_appointment": '{"appointment_id": "appt_tsf_sv0001", "status": "confirmed"}',
    "service.list_repair_orders": '{"status": "open"}',
    "service.get_repair_order": '{"ro_number": "RO-1001"}',
    "deals.request_trade_value": '{"year": 2019, "make": "Honda", "model": "Civic", "mileage": {"value": 42000}, '
    '"condition": "good"}',
    "approvals.get": '{"approval_id": "apr_0001"}',
    "events.list": '{"resource_type": "lead", "limit": 20}',
    "db.query": '{"query_id": "leads_by_source"}',
    "workflow.run": '{"workflow_id": "lead_follow_up", "inputs": {"lead_id": "lead_tsf_0001"}}',
    "workflow.list_runs": '{"status": "input_required"}',
    "workflow.get": '{"run_id": "run_0001"}',
    "workflow.resume": '{"run_id": "run_0001"}',
    "workflow.complete_task": '{"run_id": "run_0001", "task_id": "approve", "data": {"approved": true}}',
    "model.invoke": '{"input": "Summarise this repair order in one sentence: ..."}',
    "vertex.invokeModel": '{"model": "gemini-2.5-flash", "input": "Draft a follow-up e-mail."}',
    "openai.invokeModel": '{"model": "gpt-4o-mini", "input": "Draft a follow-up e-mail."}',
    "nvidia.runInference": '{"model": "llama-3.1-8b-instruct", "input": "Classify this lead message."}',
    "embedding.create": '{"input": ["red hybrid SUV"]}',
    "aap.inventory.search": '{"filters": {"make": ["Toyota"]}, "pagination": {"limit": 3}}',
    "aap.inventory.facets": '{"filters": {}}',
    "aap.inventory.vehicle": '{"vin": "4T1B11HK5KU000001"}',
    "aap.dealer.information": "{}",
}


def example_for(action_name: str) -> str | None:
    """``Example: {...}`` for ``action_name``, or ``None``."""
    example = EXAMPLES.get(action_name)
    return f"Example: {example}" if example else None
