"""``forecourt aap check URL``: checks any dealer agent against AAP v0.1 and names each rule it breaks.

Rules checked: the card (schema, AAP extension, manifest URL, skill lists, bindings, readable by the
Python a2a-sdk and by @a2a-js/sdk), the manifest (schema, ``auth_type`` agreeing with the card's
security, skills matching the card), and every implemented skill on every listed binding: a valid
request must answer a Message whose DataPart validates against the response schema with the right
media type; a deliberately invalid request must answer an ``aap.error`` (valid against the error
schema) with a validation code. Behaviour rules: no sold unit offered, ``last_verified_at`` on every
listed vehicle, ``offered_price`` only with a zip.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from forecourt.adapters.aap.client import BINDINGS, DealerAgentClient, RawReply, manifest_url
from forecourt.domain.aap_spec import EXTENSION_URI, SKILL_IDS, SKILLS_BY_ID, Skill, errors

_VALIDATION_CODES = ("SCHEMA_VALIDATION_FAILED", "MISSING_REQUIRED_FIELD")


@dataclass
class Check:
    """One rule's verdict."""

    rule: str
    ok: bool
    detail: str = ""
    warning: bool = False
    skipped: bool = False
    """Not checked at all (no token, no ``--submit-lead``): neither a pass nor a failure."""


@dataclass
class Report:
    """Everything the checker found."""

    url: str
    checks: list[Check] = field(default_factory=list)

    def add(self, rule: str, ok: bool, detail: str = "", *, warning: bool = False) -> bool:
        """Record a verdict; returns ``ok``."""
        self.checks.append(Check(rule, ok, detail, warning))
        return ok

    def skip(self, rule: str, detail: str) -> None:
        """Record a rule that was not checked, and why."""
        self.checks.append(Check(rule, True, detail, warning=True, skipped=True))

    @property
    def failures(self) -> list[Check]:
        """Failed checks that are not mere warnings."""
        return [c for c in self.checks if not c.ok and not c.warning]

    @property
    def skips(self) -> list[Check]:
        """Rules that were not checked."""
        return [c for c in self.checks if c.skipped]

    @property
    def passed(self) -> bool:
        """Whether every non-warning rule that was checked passed (see :meth:`complete` for skips)."""
        return not self.failures

    def complete(self, *, allow_skips: bool = False) -> bool:
        """Whether the agent passed with nothing skipped (or skips are accepted)."""
        return self.passed and (allow_skips or not self.skips)

    def render(self, *, allow_skips: bool = False) -> str:
        """A readable report: each rule, the counts, and the verdict (skips are never counted as passes)."""
        lines = [f"AAP v0.1 check of {self.url}", ""]
        for c in self.checks:
            mark = "SKIP" if c.skipped else "PASS" if c.ok else ("WARN" if c.warning else "FAIL")
            lines.append(f"  [{mark}] {c.rule}" + (f": {c.detail}" if c.detail else ""))
        checked = [c for c in self.checks if not c.skipped]
        ok = sum(1 for c in checked if c.ok)
        counts = f"{ok}/{len(checked)} checks passed; {len(self.failures)} failed; {len(self.skips)} skipped."
        lines += ["", counts]
        if not self.passed:
            lines.append("RESULT: FAIL")
        elif self.skips and not allow_skips:
            lines.append("RESULT: INCOMPLETE (checks were skipped; --allow-skips accepts a pass with skips)")
        else:
            lines.append("RESULT: PASS" + (" (with skips)" if self.skips else ""))
        return "\n".join(lines)


def _extension(card: dict[str, Any]) -> dict[str, Any] | None:
    for ext in (card.get("capabilities") or {}).get("extensions") or []:
        if isinstance(ext, dict) and ext.get("uri") == EXTENSION_URI:
            return ext
    return None


def card_requires_bearer(card: dict[str, Any]) -> bool:
    """Whether the card's ``security_requirements`` reference a bearer scheme (AAP or A2A proto shape)."""
    for req in card.get("security_requirements") or []:
        if isinstance(req, dict) and ("bearer" in req or "bearer" in (req.get("schemes") or {})):
            return True
    return False


def _check_sdk_parsers(report: Report, card: dict[str, Any]) -> None:
    try:
        from a2a.client.card_resolver import parse_agent_card

        parsed = parse_agent_card(dict(card))
        bindings = {i.protocol_binding for i in parsed.supported_interfaces}
        report.add("card.python_sdk_readable", bool(bindings & set(BINDINGS)), f"bindings seen: {sorted(bindings)}")
    except Exception as exc:  # any parser failure is the finding itself
        report.add("card.python_sdk_readable", False, f"{type(exc).__name__}: {str(exc)[:200]}")
    camel = card.get("supportedInterfaces")
    sec = card.get("securitySchemes")
    js_ok = isinstance(camel, list) and any(isinstance(i, dict) and i.get("protocolBinding") in BINDINGS for i in camel)
    report.add(
        "card.js_sdk_readable",
        js_ok or isinstance(sec, dict),
        "" if js_ok else "@a2a-js/sdk reads camelCase supportedInterfaces; this card has none",
        warning=True,
    )


def check_card(report: Report, card: dict[str, Any]) -> list[str]:
    """Card rules; returns the skills the card says are implemented."""
    problems = errors("agent-card.schema.json", card)
    report.add("card.schema", not problems, "; ".join(problems[:3]))
    ext = _extension(card)
    report.add("card.aap_extension", ext is not None, f"capabilities.extensions[] must contain {EXTENSION_URI}")
    params = (ext or {}).get("params") or {}
    report.add("card.manifest_url", bool(params.get("manifest_url")), "extension params.manifest_url", warning=True)
    report.add(
        "card.aap_skill_ids",
        sorted(params.get("aap_skill_ids") or []) == sorted(SKILL_IDS),
        "params.aap_skill_ids should list the five v0.1 skills",
        warning=True,
    )
    skills = [s.get("id") for s in card.get("skills") or [] if isinstance(s, dict)]
    implemented = [s for s in params.get("implemented_skills") or skills if s in SKILLS_BY_ID]
    report.add("card.skills_declared", bool(skills), "skills[] must list at least one AAP skill")
    report.add(
        "card.implemented_skills_match",
        set(implemented) <= set(skills),
        f"implemented_skills {sorted(implemented)} vs skills[] {sorted(str(s) for s in skills)}",
    )
    bindings = {i.get("protocol_binding") for i in card.get("supported_interfaces") or [] if isinstance(i, dict)}
    report.add("card.binding", bool(bindings & set(BINDINGS)), "supported_interfaces[] needs JSONRPC or HTTP+JSON")
    _check_sdk_parsers(report, card)
    return [s for s in implemented if s in skills]


def check_manifest(report: Report, card: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Manifest rules, including agreement with the card."""
    problems = errors("contract-manifest.schema.json", manifest)
    report.add("manifest.schema", not problems, "; ".join(problems[:3]))
    bearer = card_requires_bearer(card)
    auth = manifest.get("auth_type")
    report.add(
        "manifest.auth_type_agrees_with_card",
        (auth == "bearer") == bearer and auth in (None, "bearer"),
        f"manifest auth_type={auth!r}; card security_requirements bearer={bearer}",
    )
    card_skills = {s.get("id") for s in card.get("skills") or [] if isinstance(s, dict)}
    manifest_skills = {s.get("id") for s in (manifest.get("a2a") or {}).get("skills") or [] if isinstance(s, dict)}
    report.add(
        "manifest.skills_match_card",
        manifest_skills == card_skills,
        f"manifest {sorted(str(s) for s in manifest_skills)} vs card {sorted(str(s) for s in card_skills)}",
    )


def _valid_request(skill: Skill, vin: str | None) -> dict[str, Any]:
    now = datetime.now(UTC)
    if skill.id == "inventory.search":
        return {"type": skill.request_type, "pagination": {"skip": 0, "limit": 5}}
    if skill.id == "inventory.vehicle":
        return {"type": skill.request_type, "vin": vin or "1HGCM82633A004352"}
    if skill.id == "lead.submit":
        return {
            "type": skill.request_type,
            "customer": {"first_name": "AAP", "last_name": "Conformance", "email": "aap-check@example.com"},
            "consent": {
                "granted_at": (now - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "allowed_channels": ["email"],
                "consent_text": "Automated AAP conformance check; not a real buyer. Please disregard.",
                "source_agent": "forecourt-aap-check",
                "scope": ["lead_submission"],
            },
            "message": "Automated AAP v0.1 conformance check (forecourt aap check). Not a real buyer.",
            "source_agent": "forecourt-aap-check",
            "idempotency_key": f"aap-check-{uuid.uuid4()}",
        }
    return {"type": skill.request_type}


def _behaviour(report: Report, skill: Skill, reply: RawReply, where: str) -> None:
    data = (reply.payload or {}).get("data") or {}
    vehicles = (
        data.get("vehicles") if skill.id == "inventory.search" else ([data] if skill.id == "inventory.vehicle" else [])
    )
    for v in vehicles or []:
        if not isinstance(v, dict):
            continue
        if str(v.get("status", "")).strip().lower() == "sold":
            report.add("behaviour.no_sold_vehicle_offered", False, f"{where}: vehicle {v.get('vin')} is Sold")
            return
        if not v.get("last_verified_at"):
            report.add("behaviour.last_verified_at_on_availability", False, f"{where}: vehicle {v.get('vin')}")
            return
        if "offered_price" in v and "zip" not in v:
            report.add("behaviour.offered_price_only_with_zip", False, f"{where}: vehicle {v.get('vin')}")
            return
    if vehicles:
        report.add("behaviour.inventory_claims", True, f"{where}: {len(vehicles)} vehicles checked")


def _check_reply(report: Report, skill: Skill, reply: RawReply, where: str) -> bool:
    if reply.error is not None:
        code = reply.error.get("code")
        ok = skill.id == "inventory.vehicle" and code == "VEHICLE_NOT_FOUND"
        return report.add(
            f"skill.{skill.id}.valid_request", ok, f"{where}: answered {code}: {reply.error.get('message')}"
        )
    if reply.payload is None:
        return report.add(f"skill.{skill.id}.valid_request", False, f"{where}: {'; '.join(reply.problems)}")
    problems = errors(skill.response_schema, reply.payload)
    report.add(f"skill.{skill.id}.response_schema", not problems, f"{where}: " + "; ".join(problems[:3]))
    report.add(
        f"skill.{skill.id}.media_type",
        reply.media_type == skill.response_media_type,
        f"{where}: got {reply.media_type!r}",
    )
    _behaviour(report, skill, reply, where)
    return not problems


def _check_error(report: Report, skill: Skill, reply: RawReply, where: str, expected: tuple[str, ...]) -> None:
    if reply.error is None:
        report.add(
            f"errors.{skill.id}.aap_error",
            False,
            f"{where}: no aap.error ({'; '.join(reply.problems) or 'a success reply'})",
        )
        return
    problems = errors("error.schema.json", reply.error)
    report.add(f"errors.{skill.id}.error_schema", not problems, f"{where}: " + "; ".join(problems[:3]))
    code = reply.error.get("code")
    report.add(f"errors.{skill.id}.code", code in expected, f"{where}: expected {'|'.join(expected)}, got {code}")


async def _first_vin(client: DealerAgentClient, binding: str) -> str | None:
    skill = SKILLS_BY_ID["inventory.search"]
    reply = await client.send(
        {"type": skill.request_type, "pagination": {"limit": 1}}, skill.request_media_type, binding=binding
    )
    vehicles = ((reply.payload or {}).get("data") or {}).get("vehicles") or []
    return str(vehicles[0]["vin"]) if vehicles and isinstance(vehicles[0], dict) and vehicles[0].get("vin") else None


async def check_skills(
    report: Report, client: DealerAgentClient, card: dict[str, Any], implemented: list[str], *, leads: bool
) -> None:
    """Call every implemented skill on every listed binding, valid and invalid."""
    bindings = [
        i["protocol_binding"]
        for i in card.get("supported_interfaces") or []
        if isinstance(i, dict) and i.get("protocol_binding") in BINDINGS
    ]
    for binding in bindings:
        vin = await _first_vin(client, binding) if "inventory.search" in implemented else None
        for skill_id in implemented:
            skill = SKILLS_BY_ID[skill_id]
            where = f"{binding}"
            if skill_id == "lead.submit" and not leads:
                report.skip(f"skill.{skill_id}.valid_request", f"{where}: skipped (no --submit-lead)")
            else:
                reply = await client.send(_valid_request(skill, vin), skill.request_media_type, binding=binding)
                _check_reply(report, skill, reply, where)
            bad = {**_valid_request(skill, vin), "forecourt_check_unknown_field": 1}
            reply = await client.send(bad, skill.request_media_type, binding=binding)
            _check_error(report, skill, reply, where, _VALIDATION_CODES)
        if "lead.submit" in implemented:
            skill = SKILLS_BY_ID["lead.submit"]
            bad_consent = _valid_request(skill, vin)
            bad_consent["consent"] = {**bad_consent["consent"], "scope": ["marketing"]}
            reply = await client.send(bad_consent, skill.request_media_type, binding=binding)
            _check_error(report, skill, reply, f"{binding} consent scope", ("INVALID_CONSENT",))


async def _check_guide(report: Report, client: DealerAgentClient, url: str) -> None:
    try:
        status = (await client.http.get(url)).status_code
    except httpx.HTTPError as exc:
        report.add("manifest.llm_guide", False, f"{type(exc).__name__}", warning=True)
        return
    report.add("manifest.llm_guide", status == 200, f"HTTP {status}", warning=True)


async def run_check(url: str, *, token: str | None = None, leads: bool = False, http: Any = None) -> Report:
    """Check the dealer agent whose card is at ``{url}/.well-known/agent-card.json``."""
    report = Report(url)
    async with DealerAgentClient(url, token=token, http=http) as client:
        try:
            card = await client.card()
        except Exception as exc:  # unreachable agent: the report says so
            report.add("card.fetch", False, str(exc)[:200])
            return report
        report.add("card.fetch", True)
        implemented = check_card(report, card)
        if manifest_url(card):
            try:
                manifest = await client.manifest()
            except Exception as exc:  # the report says so
                report.add("manifest.fetch", False, str(exc)[:200])
                manifest = None
            if manifest is not None:
                report.add("manifest.fetch", True)
                check_manifest(report, card, manifest)
                guide = (manifest.get("llm") or {}).get("guide_url")
                if guide:
                    await _check_guide(report, client, str(guide))
        if card_requires_bearer(card) and not token:
            reply = await client.send(
                {"type": "dealer.information.request"}, SKILLS_BY_ID["dealer.information"].request_media_type
            )
            report.add("auth.bearer_enforced", (reply.error or {}).get("code") == "AUTH_REQUIRED", "no token sent")
            report.skip("skills.called", "skipped: the agent needs a bearer token (--token)")
            return report
        try:
            await check_skills(report, client, card, implemented, leads=leads)
        except (httpx.HTTPError, ValueError) as exc:  # the agent broke mid-check: report, don't crash
            report.add("skills.transport", False, f"{type(exc).__name__}: {str(exc)[:200]}")
    return report
