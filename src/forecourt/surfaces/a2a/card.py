"""Discovery documents per dealership: the A2A agent card, the AAP contract manifest and the LLM guide.

The card must satisfy three readers at once (SPEC-NOTES): the AAP JSON Schema (snake_case
``supported_interfaces`` with closed items), the Python ``a2a-sdk`` parser (protobuf JSON: accepts
snake_case, drops unknown fields silently) and ``@a2a-js/sdk`` (reads camelCase ``supportedInterfaces``
unless the card has camelCase proto security). So the card carries the snake_case AAP fields, a
camelCase duplicate of ``supportedInterfaces`` (AAP allows extra top-level keys), and security in the
proto shape (``http_auth_security_scheme``; requirements as ``{"schemes": {"bearer": {"list": []}}}``),
which the AAP schema accepts (free-form objects) and the SDK clients understand.
"""

from __future__ import annotations

from typing import Any

from forecourt.domain.aap_spec import CONTRACT_URI, EXTENSION_URI, SCHEMA_BASE, SKILL_IDS, SKILLS
from forecourt.domain.tenancy import Company, Dealership


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forecourt")
    except PackageNotFoundError:
        return "0.1.0"


forecourt_version = _version()
CARD_PATH = "/.well-known/agent-card.json"
MANIFEST_PATH = "/.well-known/auto-agent-contract.json"
GUIDE_PATH = "/.well-known/auto-agent-llm-guide.md"
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a"
A2A_VERSION = "1.0"

RULES: tuple[str, ...] = (
    "Call inventory.search or inventory.vehicle before lead.submit, so vehicle_of_interest names a unit this "
    "dealership has (VIN, stock or vehicle_id).",
    "Never call lead.submit without an explicit ConsentGrant captured verbatim from the user; consent.scope "
    "must be exactly ['lead_submission'] and customer.preferred_contact must be one of consent.allowed_channels.",
    "Quote the 'price' field: it is the out-the-door amount including the documentation fee and sales tax. "
    "'list_price' and 'msrp' exclude taxes and fees; 'offered_price' appears only when you send a zip.",
    "Treat 'last_verified_at' as the time availability was last confirmed; re-check with inventory.vehicle "
    "before promising a unit that was verified more than 24 hours ago. Sold units are never returned.",
    "vehicle_of_interest.condition is new|used|cpo; trade_in.condition is excellent|good|fair|poor.",
    "Send an idempotency_key with lead.submit and reuse it on retries; the same key returns the original lead.",
    "Branch on error.data.code (AAP error codes), not on the JSON-RPC code.",
)


def dealer_base(root: str, dealer: Dealership) -> str:
    """``{root}/dealers/{id}``: where one dealership's agent lives."""
    return f"{root.rstrip('/')}/dealers/{dealer.id}"


def _security(dealer: Dealership) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if dealer.public_agent:
        return {}, []
    schemes = {
        "bearer": {
            "http_auth_security_scheme": {
                "scheme": "bearer",
                "bearer_format": "Forecourt API key or OIDC JWT",
                "description": "Send 'Authorization: Bearer <token>' on every call; tokens are issued by the dealer.",
            }
        }
    }
    return schemes, [{"schemes": {"bearer": {"list": []}}}]


def _skill(skill_id: str) -> dict[str, Any]:
    skill = next(s for s in SKILLS if s.id == skill_id)
    return {
        "id": skill.id,
        "name": skill.name,
        "description": skill.description,
        "tags": list(skill.tags),
        "input_modes": [skill.request_media_type, "application/json"],
        "output_modes": [skill.response_media_type, "application/json"],
    }


def build_card(root: str, dealer: Dealership, company: Company | None) -> dict[str, Any]:
    """The A2A v1.0 agent card of ``dealer`` with the AAP extension (see the module docstring)."""
    base = dealer_base(root, dealer)
    interfaces = [
        {"url": base + JSONRPC_PATH, "protocol_binding": "JSONRPC", "protocol_version": A2A_VERSION},
        {"url": base + REST_PATH, "protocol_binding": "HTTP+JSON", "protocol_version": A2A_VERSION},
    ]
    schemes, requirements = _security(dealer)
    provider: dict[str, Any] = {"organization": company.name if company else dealer.name}
    if dealer.website:
        provider["url"] = dealer.website
    return {
        "name": f"{dealer.name} Dealer Agent",
        "description": (
            f"AAP v0.1 dealer agent for {dealer.name}: dealer information, inventory facets, search and vehicle "
            "detail, and consented lead submission (ADF to the dealer's CRM)."
        ),
        "version": forecourt_version,
        "provider": provider,
        "documentation_url": base + GUIDE_PATH,
        "supported_interfaces": interfaces,
        "supportedInterfaces": [
            {"url": i["url"], "protocolBinding": i["protocol_binding"], "protocolVersion": A2A_VERSION}
            for i in interfaces
        ],
        "capabilities": {
            "streaming": True,
            "push_notifications": True,
            "extended_agent_card": False,
            "extensions": [
                {
                    "uri": EXTENSION_URI,
                    "description": "Auto Agent Protocol v0.1 (A2A Automotive Retail Profile).",
                    "required": True,
                    "params": {
                        "manifest_url": base + MANIFEST_PATH,
                        "contract_uri": CONTRACT_URI,
                        "schema_base_url": SCHEMA_BASE,
                        "aap_skill_ids": list(SKILL_IDS),
                        "implemented_skills": list(SKILL_IDS),
                        "auth_type": None if dealer.public_agent else "bearer",
                    },
                }
            ],
        },
        "default_input_modes": ["application/json", *(s.request_media_type for s in SKILLS)],
        "default_output_modes": ["application/json", *(s.response_media_type for s in SKILLS)],
        "skills": [_skill(s) for s in SKILL_IDS],
        "security_schemes": schemes,
        "security_requirements": requirements,
    }


def build_manifest(root: str, dealer: Dealership, company: Company | None) -> dict[str, Any]:
    """The AAP contract manifest; ``auth_type`` follows the same ``public_agent`` setting as the card."""
    base = dealer_base(root, dealer)
    skills = [
        {
            "id": s.id,
            "request_schema": SCHEMA_BASE + s.request_schema,
            "response_schema": SCHEMA_BASE + s.response_schema,
            "anonymous_allowed": dealer.public_agent and not s.consent_required,
            "consent_required": s.consent_required,
            "adf_compatible": s.adf_compatible,
        }
        for s in SKILLS
    ]
    dealer_block: dict[str, Any] = {"dealer_id": dealer.id, "name": dealer.name, "managed_by": "Forecourt"}
    if company is not None and company.name != dealer.name:
        dealer_block["managed_by"] = f"{company.name} via Forecourt"
    return {
        "contract": {
            "name": "Auto Agent Protocol A2A Automotive Retail Profile",
            "version": "0.1",
            "uri": CONTRACT_URI,
        },
        "dealer": dealer_block,
        "a2a": {"endpoint": base + JSONRPC_PATH, "protocol_binding": "JSONRPC", "skills": skills},
        "auth_type": None if dealer.public_agent else "bearer",
        "llm": {"guide_url": base + GUIDE_PATH, "rules": list(RULES)},
    }


def build_guide(root: str, dealer: Dealership) -> str:
    """A markdown guide for LLM-driven buyer agents."""
    base = dealer_base(root, dealer)
    auth = (
        "This agent is public: call it without credentials."
        if dealer.public_agent
        else "This agent requires `Authorization: Bearer <token>` on every call; obtain a token from the dealer."
    )
    lines = [
        f"# {dealer.name}: AAP v0.1 dealer agent guide",
        "",
        f"- Agent card: `{base}{CARD_PATH}`",
        f"- Contract manifest: `{base}{MANIFEST_PATH}`",
        f"- JSON-RPC endpoint: `POST {base}{JSONRPC_PATH}` (method `SendMessage`)",
        f"- HTTP+JSON endpoint: `POST {base}{REST_PATH}/message:send`",
        "- Send header `A2A-Version: 1.0`.",
        f"- {auth}",
        "",
        "## Calling a skill",
        "",
        "Send one `Message` (role `ROLE_USER`) whose first part is a DataPart: `data` is the AAP request "
        '(e.g. `{"type": "inventory.search.request", "filters": {...}}`) and `mediaType` is the skill\'s '
        'request media type. The reply is a `Message` whose DataPart holds `{"type": "<skill>.response", '
        '"data": {...}}`. Errors carry an `aap.error` payload in JSON-RPC `error.data` or as the HTTP+JSON body.',
        "",
        "| skill | request media type | notes |",
        "| --- | --- | --- |",
    ]
    for s in SKILLS:
        note = "consent required; ADF to the dealer's CRM" if s.consent_required else "no consent needed"
        lines.append(f"| `{s.id}` | `{s.request_media_type}` | {note} |")
    lines += ["", "## Rules", ""]
    lines += [f"{n}. {rule}" for n, rule in enumerate(RULES, 1)]
    lines += [
        "",
        "## Events",
        "",
        "Add `configuration.taskPushNotificationConfig {url, token}` to a `lead.submit` SendMessage to receive "
        "`aap.event` payloads (`lead.status_changed`, `appointment.status_changed`) as A2A push notifications "
        "(at least once; deduplicate on the message id).",
        "",
    ]
    return "\n".join(lines)
