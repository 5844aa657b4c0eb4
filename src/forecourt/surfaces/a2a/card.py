"""Discovery documents per dealership: the A2A agent card, the AAP contract manifest and the LLM guide.

The card must satisfy several readers at once (SPEC-NOTES, ``docs/aap.md``): the AAP JSON Schema and seed 003
(snake_case ``supported_interfaces``, ``default_input_modes``, ... with closed interface items, and security in
seed 003's example form ``{"bearer": {"type": "http", "scheme": "bearer", ...}}`` / ``[{"bearer": []}]``), and
strict A2A v1.0 readers (the Python ``a2a-sdk``, ``@a2a-js/sdk``, the A2A TCK), which read the camelCase names
of A2A v1.0 JSON with security in the protobuf shape (``httpAuthSecurityScheme``; requirements as
``{"schemes": {"bearer": {"list": []}}}``). So every field whose two spellings differ is written in both: the
snake_case AAP name first and its camelCase A2A twin after it (protobuf JSON parsers read both names of one field
and keep the last one, so the A2A form wins there). Fields spelled the same (``name``, ``skills``, ``streaming``,
...) appear once. AAP allows extra keys everywhere it matters (top level, ``capabilities``, skills).

The exception: ``documentationUrl``, ``capabilities.pushNotifications`` and ``capabilities.extendedAgentCard`` are
``optional`` fields in A2A's protobuf, and a protobuf JSON parser refuses both names of an optional field in one
object ("should not have multiple oneof fields"; the ``a2a-sdk`` client would reject the card). AAP's schema does not
require them, so they are written once, in the A2A spelling.
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


BEARER_FORMAT = "Forecourt API key or OIDC JWT"
BEARER_NOTE = "Send 'Authorization: Bearer <token>' on every call; tokens are issued by the dealer."


def _security(dealer: Dealership) -> dict[str, Any]:
    """Both spellings of the security blocks: seed 003's example form, then A2A v1.0's protobuf JSON."""
    if dealer.public_agent:
        return {"security_schemes": {}, "security_requirements": [], "securitySchemes": {}, "securityRequirements": []}
    return {
        "security_schemes": {
            "bearer": {"type": "http", "scheme": "bearer", "bearer_format": BEARER_FORMAT, "description": BEARER_NOTE}
        },
        "security_requirements": [{"bearer": []}],
        "securitySchemes": {
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "bearer",
                    "bearerFormat": BEARER_FORMAT,
                    "description": BEARER_NOTE,
                }
            }
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    }


def _skill(skill_id: str) -> dict[str, Any]:
    skill = next(s for s in SKILLS if s.id == skill_id)
    input_modes = [skill.request_media_type, "application/json"]
    output_modes = [skill.response_media_type, "application/json"]
    return {
        "id": skill.id,
        "name": skill.name,
        "description": skill.description,
        "tags": list(skill.tags),
        "input_modes": input_modes,
        "output_modes": output_modes,
        "inputModes": input_modes,
        "outputModes": output_modes,
    }


def build_card(root: str, dealer: Dealership, company: Company | None) -> dict[str, Any]:
    """The A2A v1.0 agent card of ``dealer`` with the AAP extension, in both spellings (module docstring)."""
    base = dealer_base(root, dealer)
    interfaces = [
        {"url": base + JSONRPC_PATH, "protocol_binding": "JSONRPC", "protocol_version": A2A_VERSION},
        {"url": base + REST_PATH, "protocol_binding": "HTTP+JSON", "protocol_version": A2A_VERSION},
    ]
    provider: dict[str, Any] = {"organization": company.name if company else dealer.name}
    if dealer.website:
        provider["url"] = dealer.website
    input_modes = ["application/json", *(s.request_media_type for s in SKILLS)]
    output_modes = ["application/json", *(s.response_media_type for s in SKILLS)]
    return {
        "name": f"{dealer.name} Dealer Agent",
        "description": (
            f"AAP v0.1 dealer agent for {dealer.name}: dealer information, inventory facets, search and vehicle "
            "detail, and consented lead submission (ADF to the dealer's CRM)."
        ),
        "version": forecourt_version,
        "provider": provider,
        "documentationUrl": base + GUIDE_PATH,
        "supported_interfaces": interfaces,
        "supportedInterfaces": [
            {"url": i["url"], "protocolBinding": i["protocol_binding"], "protocolVersion": A2A_VERSION}
            for i in interfaces
        ],
        "capabilities": {
            "streaming": True,
            "pushNotifications": True,
            "extendedAgentCard": False,
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
        "default_input_modes": input_modes,
        "defaultInputModes": input_modes,
        "default_output_modes": output_modes,
        "defaultOutputModes": output_modes,
        "skills": [_skill(s) for s in SKILL_IDS],
        **_security(dealer),
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
