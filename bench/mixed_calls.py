"""The request mix of bench/mixed.py: seeded calls over MCP, A2A and REST, and how each answer is judged.

Plain standard library (no Forecourt import): a buyer agent's view of the wire. tests/bench_support checks that every
call it makes validates against its action's input schema in the catalogue.
"""

from __future__ import annotations

import bisect
import json
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

DOORS = ("mcp", "a2a", "rest")
FRESH_MIX = {  # the 95 % that are not leads, as fresh draws (follow-up pages come on top, in later slots)
    "inventory.search": 44,
    "inventory.get/id": 14,
    "inventory.get/vin": 10,
    "inventory.facets": 12,
    "dealer.information": 15,
}
LEAD_SHARE = 0.05
FOLLOW_PAGES = (0,) * 55 + (1,) * 25 + (2,) * 12 + (3,) * 8  # more pages after a search's first, in percent
SORTS: tuple[tuple[str, str] | None, ...] = (
    None,
    ("price", "asc"),
    ("price", "desc"),
    ("year", "desc"),
    ("mileage", "asc"),
)
LIMITS = (10, 20, 20, 25)
ZIPF_S = 0.9
SOURCE_AGENT = "mixed-traffic-bench"
DEALER_ACTION = {  # report name -> the catalogue action the MCP and REST doors call
    "inventory.search": "inventory.search",
    "inventory.search/next": "inventory.search",
    "inventory.get/id": "inventory.get",
    "inventory.get/vin": "inventory.get",
    "inventory.facets": "inventory.facets",
    "dealer.information": "dealer.information",
    "leads.create": "leads.create",
}
AAP_SKILL = {  # report name -> (AAP skill, the stem of its media types)
    "inventory.search": ("inventory.search", "inventory-search"),
    "inventory.search/next": ("inventory.search", "inventory-search"),
    "inventory.get/id": ("inventory.vehicle", "vehicle-detail"),
    "inventory.get/vin": ("inventory.vehicle", "vehicle-detail"),
    "inventory.facets": ("inventory.facets", "inventory-facets"),
    "dealer.information": ("dealer.information", "dealer-information"),
    "leads.create": ("lead.submit", "lead-submit"),
}
_FIRST = ("Ana", "Bo", "Chen", "Dana", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kai", "Lena", "Malik", "Noor")
_LAST = ("Lopez", "Li", "Nowak", "Okafor", "Silva", "Tanaka", "Berg", "Kowalski", "Haddad", "Moreau", "Singh")


# ---------------------------------------------------------------------------------------------- the mix


@dataclass(frozen=True)
class Rooftop:
    """What the generator knows of one rooftop's stock (read from the database before the run)."""

    id: str
    makes: tuple[str, ...]
    bodies: tuple[str, ...]
    years: tuple[int, int]
    prices: tuple[int, ...]
    """Price points in minor units, whole hundreds of dollars (AAP filters are in dollars)."""
    vehicles: tuple[tuple[str, str], ...]
    """(vehicle id, VIN) of available units."""


@dataclass
class Call:
    """One request of the mix: ``payload`` is the dealer action's arguments (MCP, REST) or the AAP request (A2A)."""

    action: str
    door: str
    dealership: str
    payload: dict[str, Any]
    more_pages: int = 0

    @property
    def catalogue_name(self) -> str:
        """The catalogue action that validates ``payload``."""
        return "aap." + AAP_SKILL[self.action][0] if self.door == "a2a" else DEALER_ACTION[self.action]


def rooftops_from(world: dict[str, Any]) -> list[Rooftop]:
    """The rooftops of a world file (JSON written by :func:`read_world`)."""
    return [
        Rooftop(
            id=r["id"],
            makes=tuple(r["makes"]),
            bodies=tuple(r["bodies"]),
            years=(r["years"][0], r["years"][1]),
            prices=tuple(r["prices"]),
            vehicles=tuple((v[0], v[1]) for v in r["vehicles"]),
        )
        for r in world["rooftops"]
        if r["vehicles"]
    ]


class Traffic:
    """The seeded request mix: :meth:`next_call` for each slot, :meth:`answered` with each good answer's data."""

    def __init__(self, rooftops: list[Rooftop], *, seed: int, tag: str, now: Callable[[], datetime] | None = None):
        self.rng = random.Random(seed)
        self.tag = tag
        self.now = now or (lambda: datetime.now(UTC))
        order = list(rooftops)
        self.rng.shuffle(order)  # popularity is not the rooftop's number
        self.rooftops = order
        weights = [1 / (rank**ZIPF_S) for rank in range(1, len(order) + 1)]
        self.cum = _cumulative(weights)
        self.actions = list(FRESH_MIX)
        self.action_cum = _cumulative([float(w) for w in FRESH_MIX.values()])
        self.follow: deque[Call] = deque()
        self.leads = 0

    def next_call(self) -> Call:
        """The next request: a lead (5 %), else a pending next page, else a fresh draw."""
        if self.rng.random() < LEAD_SHARE:
            return self._lead(self._rooftop(), self.rng.choice(DOORS))
        if self.follow:
            return self.follow.popleft()
        rooftop, door = self._rooftop(), self.rng.choice(DOORS)
        action = self.actions[bisect.bisect(self.action_cum, self.rng.random() * self.action_cum[-1])]
        if action == "inventory.search":
            return self._search(rooftop, door)
        if action.startswith("inventory.get/"):
            return self._get(rooftop, door, by_vin=action.endswith("vin"))
        if action == "inventory.facets":
            return self._facets(rooftop, door)
        payload: dict[str, Any] = (
            {"type": "dealer.information.request"} if door == "a2a" else {"dealership_id": rooftop.id}
        )
        return Call("dealer.information", door, rooftop.id, payload)

    def answered(self, call: Call, data: Any) -> None:
        """A good answer arrived: queue the search's next page when the buyer reads on and there is one."""
        if call.more_pages <= 0 or not isinstance(data, dict):
            return
        if call.door == "a2a":
            page = call.payload["pagination"]
            if page["skip"] + page["limit"] >= int(data.get("total") or 0):
                return
            payload = {**call.payload, "pagination": {"skip": page["skip"] + page["limit"], "limit": page["limit"]}}
        else:
            cursor = data.get("next_cursor")
            if not cursor:
                return
            payload = {**call.payload, "cursor": cursor}
        self.follow.append(Call("inventory.search/next", call.door, call.dealership, payload, call.more_pages - 1))

    def _rooftop(self) -> Rooftop:
        return self.rooftops[bisect.bisect(self.cum, self.rng.random() * self.cum[-1])]

    def _filters(self, rooftop: Rooftop) -> dict[str, Any]:
        rng, found = self.rng, {}
        if rng.random() < 0.5:
            found["make"] = rng.sample(rooftop.makes, k=min(len(rooftop.makes), rng.choice((1, 1, 2))))
        if rng.random() < 0.35:
            found["body"] = [rng.choice(rooftop.bodies)]
        if rng.random() < 0.4:
            low, high = sorted(rng.sample(rooftop.prices, 2)) if len(rooftop.prices) > 1 else (0, rooftop.prices[0])
            found.update({"price_max": high} if rng.random() < 0.5 else {"price_min": low, "price_max": high})
        if rng.random() < 0.3:
            found["year_min"] = rng.randint(*rooftop.years)
            if rng.random() < 0.3:
                found["year_max"] = rng.randint(found["year_min"], rooftop.years[1])
        return found

    def _search(self, rooftop: Rooftop, door: str) -> Call:
        filters, sort, limit = self._filters(rooftop), self.rng.choice(SORTS), self.rng.choice(LIMITS)
        more = self.rng.choice(FOLLOW_PAGES)
        if door == "a2a":
            aap = {k: v // 100 if k.startswith("price_") else v for k, v in filters.items()}
            payload: dict[str, Any] = {"type": "inventory.search.request", "filters": aap}
            payload["pagination"] = {"skip": 0, "limit": limit}
            if sort:
                payload["sort"] = {"field": sort[0], "order": sort[1]}
        else:
            payload = {"dealership_id": rooftop.id, **filters, "limit": limit}
            if sort:
                payload["sort"] = {"field": sort[0], "order": sort[1]}
        return Call("inventory.search", door, rooftop.id, payload, more)

    def _get(self, rooftop: Rooftop, door: str, *, by_vin: bool) -> Call:
        vehicle_id, vin = self.rng.choice(rooftop.vehicles)
        key = {"vin": vin} if by_vin else {"vehicle_id": vehicle_id}
        if door == "a2a":
            payload = {"type": "inventory.vehicle.request", **key}
            if self.rng.random() < 0.3:
                payload["zip"] = "95814"
        else:
            payload = {"dealership_id": rooftop.id, **key}
        return Call("inventory.get/vin" if by_vin else "inventory.get/id", door, rooftop.id, payload)

    def _facets(self, rooftop: Rooftop, door: str) -> Call:
        filters: dict[str, Any] = {}
        if self.rng.random() < 0.3:
            filters["make"] = [self.rng.choice(rooftop.makes)]
        if self.rng.random() < 0.2:
            filters["condition"] = ["used"]
        if door == "a2a":
            return Call("inventory.facets", door, rooftop.id, {"type": "inventory.facets.request", "filters": filters})
        return Call("inventory.facets", door, rooftop.id, {"dealership_id": rooftop.id, **filters})

    def _lead(self, rooftop: Rooftop, door: str) -> Call:
        self.leads += 1
        first, last = self.rng.choice(_FIRST), self.rng.choice(_LAST)
        email = f"{first.lower()}.{last.lower()}.{self.tag}.{self.leads}@example.com"
        vehicle_id, vin = self.rng.choice(rooftop.vehicles)
        granted = (self.now() - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = "I agree that the dealership may e-mail me about this vehicle."
        consent = {"granted_at": granted, "allowed_channels": ["email"], "consent_text": text}
        message = "Is this one still available? I could come by this week."
        if door == "a2a":
            payload: dict[str, Any] = {
                "type": "lead.submit.request",
                "customer": {"first_name": first, "last_name": last, "email": email, "preferred_contact": "email"},
                "consent": {**consent, "source_agent": SOURCE_AGENT, "scope": ["lead_submission"]},
                "vehicle_of_interest": {"vin": vin},
                "message": message,
                "source_agent": SOURCE_AGENT,
            }
        else:
            payload = {
                "dealership_id": rooftop.id,
                "customer": {"first_name": first, "last_name": last, "email": email, "preferred_channel": "email"},
                "consent": {**consent, "scope": ["lead_submission"]},
                "vehicle_of_interest": {"vehicle_id": vehicle_id},
                "message": message,
                "source_agent": SOURCE_AGENT,
            }
        return Call("leads.create", door, rooftop.id, payload)


def _cumulative(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


# ---------------------------------------------------------------------------------------------- the wire


def wire(call: Call, token: str, message_id: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(path, headers, JSON body) of ``call`` on its front door."""
    auth = {"Authorization": f"Bearer {token}"}
    name = DEALER_ACTION[call.action]
    if call.door == "mcp":
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mixed-traffic", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {
            "jsonrpc": "2.0",
            "id": message_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": call.payload, "_meta": meta},
        }
        headers = {
            **auth,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        }
        return "/mcp", headers, body
    if call.door == "rest":
        return f"/mcp/{name}", auth, {"id": message_id, "payload": call.payload}
    stem = AAP_SKILL[call.action][1]
    message = {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"data": call.payload, "mediaType": f"application/vnd.autoagent.{stem}-request+json"}],
    }
    params = {
        "message": message,
        "configuration": {"acceptedOutputModes": [f"application/vnd.autoagent.{stem}-response+json"]},
    }
    body = {"jsonrpc": "2.0", "id": message_id, "method": "SendMessage", "params": params}
    return f"/dealers/{call.dealership}/a2a/jsonrpc", {"A2A-Version": "1.0"}, body


def verdict(call: Call, status: int, content: bytes) -> tuple[bool, Any, str]:
    """(good, the answer's data, why not) of one answer: any non-200, protocol error or tool error is bad."""
    if status != 200:
        return False, None, f"HTTP {status}: {content[:160]!r}"
    try:
        body = json.loads(content)
    except ValueError:
        return False, None, f"not JSON: {content[:160]!r}"
    if call.door == "mcp":
        result = body.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            return False, None, f"MCP error: {content[:200]!r}"
        return True, result.get("structuredContent"), ""
    if call.door == "rest":
        state = body.get("status") or {}
        if state.get("code") != 200 or state.get("error"):
            return False, None, f"envelope status: {content[:200]!r}"
        return True, (body.get("result") or {}).get("output"), ""
    try:
        data = body["result"]["message"]["parts"][0]["data"]
    except (KeyError, IndexError, TypeError):
        return False, None, f"A2A error: {content[:200]!r}"
    if data.get("type") != AAP_SKILL[call.action][0] + ".response":
        return False, None, f"AAP answer {data.get('type')}: {content[:160]!r}"
    return True, data.get("data"), ""
