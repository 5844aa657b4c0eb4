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

from forecourt.surfaces.mcp.uris import collection_uri, dealer_uri, item_uri

_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


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
)
BY_NAME = {p.prompt.name: p for p in PROMPTS}


def render(name: str, arguments: Mapping[str, str] | None, default_dealership: str | None) -> types.GetPromptResult:
    """The prompt ``name`` with ``arguments``; ``INVALID_PARAMS`` for unknown prompts or bad arguments."""
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
    for key in ("dealership_id", "lead_id"):
        if key in args and not _ID.match(args[key]):
            raise MCPError(types.INVALID_PARAMS, f"{key} is not a valid id.", {"code": "invalid_params"})
    if args.get("date") and not _DATE.match(args["date"]):
        raise MCPError(types.INVALID_PARAMS, "date must be YYYY-MM-DD.", {"code": "invalid_params"})
    if args.get("channel") and args["channel"] not in ("email", "sms", "phone"):
        raise MCPError(types.INVALID_PARAMS, "channel must be email, sms or phone.", {"code": "invalid_params"})
    text = spec.render(args)
    return types.GetPromptResult(
        description=spec.prompt.description,
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )


def prompt_list() -> list[types.Prompt]:
    """Every prompt."""
    return [p.prompt for p in PROMPTS]
