"""Prompts a dealership's staff would use; each names the resources and tools the model should use.

Prompts read nothing themselves: the model fetches the data through resources and tools, so policy,
tenancy and audit apply as usual, and a prompt never leaks data its caller could not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import mcp_types as types
from mcp import MCPError

from forecourt.actions.toolsets import llm_name
from forecourt.surfaces.mcp.uris import collection_uri, dealer_uri, item_uri

_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BUDGET = re.compile(r"^[1-9]\d{0,8}$")
_TOOL = re.compile(r"\b(?:leads|customers|inventory|consent|deals|service|dealer|knowledge)\.[a-z_]+\b")


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: its definition and the function that renders its text from arguments."""

    prompt: types.Prompt
    render: Callable[[Mapping[str, str]], str]


def _follow_up(args: Mapping[str, str]) -> str:
    d, lead = args["dealership_id"], args["lead_id"]
    channel = args.get("channel") or "the channel the customer consented to"
    return (
        f"Help me follow up lead {lead} at dealership {d}.\n"
        f"1. Read the lead ({item_uri(d, 'leads', lead)}, or the leads.get tool) and its customer "
        f"(customers.get), and the vehicle of interest if there is one (inventory.get).\n"
        f"2. Check the customer's consent (consent.list) before suggesting any contact; only use {channel} "
        "if consent allows it.\n"
        "3. Draft a short, specific follow-up message: answer what the customer asked, confirm the vehicle is "
        "still available and its price (amounts are integer minor units with a currency), and propose a next "
        "step (test drive or appointment).\n"
        "4. Suggest the leads.update call that records the new status, but do not call it until I confirm."
    )


def _trade_in(args: Mapping[str, str]) -> str:
    d, lead = args["dealership_id"], args["lead_id"]
    return (
        f"Prepare me for a trade-in conversation about lead {lead} at dealership {d}.\n"
        f"1. Read the lead ({item_uri(d, 'leads', lead)}) for the trade-in vehicle (year, make, model, "
        "mileage with its unit, condition) and the vehicle the customer wants.\n"
        "2. Ask me before calling deals.request_trade_value; then summarise the estimate and its low/high band "
        "(integer minor units and currency), how many comparable vehicles it rests on, and until when it is valid.\n"
        "3. List three talking points and the questions to ask about the trade-in's condition.\n"
        "Never promise a figure the valuation does not support."
    )


def _service_lane(args: Mapping[str, str]) -> str:
    d = args["dealership_id"]
    day = args.get("date")
    window = f"on {day}" if day else "today"
    return (
        f"Summarise the service lane at dealership {d} {window}.\n"
        f"1. List the appointments {window} ({collection_uri(d, 'appointments')} or service.list_appointments "
        "with `from`/`to` covering the day in the dealership's local time; see "
        f"{dealer_uri(d)} for its time zone and service hours).\n"
        f"2. List open repair orders ({collection_uri(d, 'repair_orders')} or service.list_repair_orders with "
        "status open, in_progress, waiting_parts or ready), with promised times.\n"
        "3. Give me: the number of appointments and waitlisted requests, repair orders at risk of missing their "
        "promised time, and anything waiting on parts. Keep it to one screen."
    )


def _new_leads(args: Mapping[str, str]) -> str:
    d = args["dealership_id"]
    day = args.get("date")
    window = f"on {day}" if day else "today"
    return (
        f"Help me follow up the new leads at dealership {d} that arrived {window}.\n"
        f"1. List them with leads.list (status new, limit 20); keep those created {window} in the dealership's "
        f"time zone (dealer.information).\n"
        "2. For each (at most 10), read the lead (leads.get) and its customer (customers.get), and check consent "
        "(consent.list with the customer_id): only suggest a channel the customer consented to.\n"
        "3. For each, draft a two-sentence reply that answers what they asked about the vehicle of interest "
        "(inventory.get to confirm it is still available and its price; amounts are integer minor units).\n"
        "4. Show me a table: lead, customer first name, vehicle, channel, draft. Suggest leads.update with status "
        "contacted for each, but call nothing that writes until I confirm."
    )


def _suvs_test_drive(args: Mapping[str, str]) -> str:
    d, budget = args["dealership_id"], int(args["budget"])
    return (
        f"Find three SUVs under {budget:,} (whole currency units) at dealership {d} and set up a test drive.\n"
        f'1. Call inventory.search with {{"body": ["suv"], "price_max": {budget * 100}, "limit": 3}} '
        "(prices are minor units: cents). If fewer than three come back, relax one filter and say which.\n"
        "2. Show year, make, model, trim, price and mileage of each; for the one I pick, call inventory.get to "
        "confirm it is available and recently verified.\n"
        "3. Ask me for the customer's name, e-mail or phone, consent to be contacted, and a preferred time. Then "
        "record the test-drive request with leads.create (vehicle_of_interest.vehicle_id, the preferred time in "
        "the message, consent with scope lead_submission); the sales team confirms the slot. Do not call "
        "leads.create before I confirm."
    )


def _repair_order(args: Mapping[str, str]) -> str:
    d, ro = args["dealership_id"], args["repair_order_id"]
    return (
        f"Summarise repair order {ro} at dealership {d} for the customer.\n"
        f"1. Read it with service.get_repair_order ({item_uri(d, 'repair_orders', ro)}).\n"
        "2. In plain words: the vehicle, what was found and done (one line per job), what is still open or waiting "
        "on parts, the promised time, and the total (amounts are integer minor units with a currency).\n"
        "3. End with what the customer needs to decide, if anything. Keep it under 120 words; no internal codes."
    )


def _arg(name: str, description: str, required: bool = True) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=required)


_DEALER = "The dealership (rooftop) id; optional when your credential covers exactly one."
PROMPTS: tuple[PromptSpec, ...] = (
    PromptSpec(
        types.Prompt(
            name="follow_up_lead",
            title="Follow up a lead",
            description="Draft a consent-aware follow-up for a sales lead and suggest the status update.",
            arguments=[
                _arg("lead_id", "The lead to follow up."),
                _arg("dealership_id", _DEALER, False),
                _arg("channel", "Preferred channel: email, sms or phone.", False),
            ],
        ),
        _follow_up,
    ),
    PromptSpec(
        types.Prompt(
            name="prepare_trade_in_conversation",
            title="Prepare a trade-in conversation",
            description="Summarise a lead's trade-in and valuation, with talking points for the salesperson.",
            arguments=[_arg("lead_id", "The lead whose trade-in to discuss."), _arg("dealership_id", _DEALER, False)],
        ),
        _trade_in,
    ),
    PromptSpec(
        types.Prompt(
            name="summarise_service_lane",
            title="Summarise today's service lane",
            description="Appointments, open repair orders and risks in the service department for one day.",
            arguments=[
                _arg("dealership_id", _DEALER, False),
                _arg("date", "The day (YYYY-MM-DD, dealership local time); default today.", False),
            ],
        ),
        _service_lane,
    ),
    PromptSpec(
        types.Prompt(
            name="follow_up_new_leads",
            title="Follow up today's new leads",
            description="CRM toolset: draft consent-aware replies to the day's new leads and suggest status updates.",
            arguments=[
                _arg("dealership_id", _DEALER, False),
                _arg("date", "The day (YYYY-MM-DD, dealership local time); default today.", False),
            ],
        ),
        _new_leads,
    ),
    PromptSpec(
        types.Prompt(
            name="find_suvs_and_book_test_drive",
            title="Find three SUVs under a budget and book a test drive",
            description="CRM toolset: search SUVs under a budget, confirm one, and record a test-drive request.",
            arguments=[
                _arg("budget", "Top price in whole currency units, e.g. 35000."),
                _arg("dealership_id", _DEALER, False),
            ],
        ),
        _suvs_test_drive,
    ),
    PromptSpec(
        types.Prompt(
            name="summarise_repair_order",
            title="Summarise a repair order",
            description="Service toolset: a plain-words summary of one repair order for the customer.",
            arguments=[_arg("repair_order_id", "The repair order id."), _arg("dealership_id", _DEALER, False)],
        ),
        _repair_order,
    ),
)
BY_NAME = {p.prompt.name: p for p in PROMPTS}


def render(
    name: str, arguments: Mapping[str, str] | None, default_dealership: str | None, *, llm_names: bool = False
) -> types.GetPromptResult:
    """The prompt ``name`` with ``arguments``; ``INVALID_PARAMS`` for unknown prompts or bad arguments.

    ``llm_names``: tool names in the text are the LLM-safe ones the caller was listed (``inventory_search``).
    """
    spec = BY_NAME.get(name)
    if spec is None:
        raise MCPError(types.INVALID_PARAMS, "Unknown prompt.", {"code": "invalid_params", "prompt": name[:64]})
    args = {k: str(v) for k, v in (arguments or {}).items()}
    if not args.get("dealership_id") and default_dealership:
        args["dealership_id"] = default_dealership
    for argument in spec.prompt.arguments or []:
        value = args.get(argument.name)
        if argument.required and not value and argument.name != "dealership_id":
            raise MCPError(types.INVALID_PARAMS, f"Missing argument {argument.name}.", {"code": "invalid_params"})
    if not args.get("dealership_id"):
        raise MCPError(types.INVALID_PARAMS, "dealership_id is required.", {"code": "invalid_params"})
    if args.get("budget") and not _BUDGET.match(args["budget"]):
        raise MCPError(types.INVALID_PARAMS, "budget must be a whole number.", {"code": "invalid_params"})
    for key in ("dealership_id", "lead_id", "repair_order_id"):
        if key in args and not _ID.match(args[key]):
            raise MCPError(types.INVALID_PARAMS, f"{key} is not a valid id.", {"code": "invalid_params"})
    if args.get("date") and not _DATE.match(args["date"]):
        raise MCPError(types.INVALID_PARAMS, "date must be YYYY-MM-DD.", {"code": "invalid_params"})
    if args.get("channel") and args["channel"] not in ("email", "sms", "phone"):
        raise MCPError(types.INVALID_PARAMS, "channel must be email, sms or phone.", {"code": "invalid_params"})
    text = spec.render(args)
    if llm_names:
        text = _TOOL.sub(lambda m: llm_name(m.group(0)), text)
    return types.GetPromptResult(
        description=spec.prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )


def prompt_list() -> list[types.Prompt]:
    """Every prompt."""
    return [p.prompt for p in PROMPTS]
