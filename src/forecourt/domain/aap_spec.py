"""The AAP v0.1 JSON Schemas shipped inside the package, a local registry, and the skill table.

Nothing here fetches anything: every ``$ref`` resolves against the copies in ``aap/schemas/``.
Action input schemas are *bundled* (the referenced documents embedded under ``$defs`` with their
``$id``), so a plain Draft 2020-12 validator, an MCP host or the gateway can use them without a registry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parent / "aap_schemas"
SCHEMA_BASE = "https://autoagentprotocol.org/v0.1/schemas/"
EXTENSION_URI = "https://autoagentprotocol.org/extensions/a2a-automotive-retail/v0.1"
CONTRACT_URI = "https://autoagentprotocol.org/v0.1/"
ERROR_MEDIA_TYPE = "application/vnd.autoagent.error+json"
EVENT_MEDIA_TYPE = "application/vnd.autoagent.event+json"


@dataclass(frozen=True)
class Skill:
    """One AAP v0.1 skill and how Forecourt serves it."""

    id: str
    name: str
    description: str
    action: str
    stem: str
    anonymous_allowed: bool
    consent_required: bool
    adf_compatible: bool
    tags: tuple[str, ...]

    @property
    def request_type(self) -> str:
        """The ``type`` of the request payload."""
        return f"{self.id}.request"

    @property
    def response_type(self) -> str:
        """The ``type`` of the response payload."""
        return f"{self.id}.response"

    @property
    def request_schema(self) -> str:
        """File name of the request schema."""
        return f"{self.stem}-request.schema.json"

    @property
    def response_schema(self) -> str:
        """File name of the response schema."""
        return f"{self.stem}-response.schema.json"

    @property
    def request_media_type(self) -> str:
        """DataPart media type of the request."""
        return f"application/vnd.autoagent.{self.stem}-request+json"

    @property
    def response_media_type(self) -> str:
        """DataPart media type of the response."""
        return f"application/vnd.autoagent.{self.stem}-response+json"


SKILLS: tuple[Skill, ...] = (
    Skill(
        "dealer.information",
        "Dealer Information",
        "Return the dealership profile: names, address, brands, sales hours, contact channels and supported services.",
        "aap.dealer.information",
        "dealer-information",
        anonymous_allowed=True,
        consent_required=False,
        adf_compatible=False,
        tags=("dealer", "profile"),
    ),
    Skill(
        "inventory.facets",
        "Inventory Facets",
        "Return aggregated facets (makes, models, years, conditions, price and mileage ranges) over the inventory.",
        "aap.inventory.facets",
        "inventory-facets",
        anonymous_allowed=True,
        consent_required=False,
        adf_compatible=False,
        tags=("inventory", "facets"),
    ),
    Skill(
        "inventory.search",
        "Inventory Search",
        "Search available vehicles by make, model, trim, year, condition, price, mileage, VIN, stock or free text.",
        "aap.inventory.search",
        "inventory-search",
        anonymous_allowed=True,
        consent_required=False,
        adf_compatible=False,
        tags=("inventory", "search"),
    ),
    Skill(
        "inventory.vehicle",
        "Vehicle Detail",
        "Return one vehicle by VIN, stock or vehicle_id, with out-the-door price and, given a zip, offered_price.",
        "aap.inventory.vehicle",
        "vehicle-detail",
        anonymous_allowed=True,
        consent_required=False,
        adf_compatible=False,
        tags=("inventory", "vehicle"),
    ),
    Skill(
        "lead.submit",
        "Submit Lead",
        "Submit a consented lead: customer, optional vehicle of interest, trade-in and appointment request.",
        "aap.lead.submit",
        "lead-submit",
        anonymous_allowed=True,
        consent_required=True,
        adf_compatible=True,
        tags=("lead", "submit", "trade-in", "appointment", "consent", "adf"),
    ),
)
SKILL_IDS: tuple[str, ...] = tuple(s.id for s in SKILLS)
SKILLS_BY_ID: dict[str, Skill] = {s.id: s for s in SKILLS}
SKILLS_BY_ACTION: dict[str, Skill] = {s.action: s for s in SKILLS}
SKILLS_BY_MEDIA_TYPE: dict[str, Skill] = {s.request_media_type: s for s in SKILLS}
SKILLS_BY_REQUEST_TYPE: dict[str, Skill] = {s.request_type: s for s in SKILLS}


def _files() -> Iterator[Path]:
    return iter(sorted(SCHEMA_DIR.glob("**/*.schema.json")))


# The four ``functools.cache`` below are constants, not caches (caching.py's allow-list): each takes no argument,
# reads package data once and never changes; domain/ may not import forecourt.caching (the "domain" contract).


@cache
def documents() -> dict[str, dict[str, Any]]:
    """Every shipped schema by ``$id``."""
    docs: dict[str, dict[str, Any]] = {}
    for path in _files():
        doc = json.loads(path.read_text(encoding="utf-8"))
        docs[doc["$id"]] = doc
    return docs


@cache
def registry() -> Registry[Any]:
    """A ``referencing`` registry of the shipped schemas (no retrieval, so nothing is ever fetched)."""
    return Registry().with_resources((uri, Resource.from_contents(doc)) for uri, doc in documents().items())


def schema_id(name: str) -> str:
    """The ``$id`` of a schema given its file name (``customer.schema.json``)."""
    return SCHEMA_BASE + name


def schema(name: str) -> dict[str, Any]:
    """The schema document with file name ``name``."""
    return documents()[schema_id(name)]


def _names() -> list[str]:
    return [uri.removeprefix(SCHEMA_BASE) for uri in documents() if uri.startswith(SCHEMA_BASE)]


@cache
def validators() -> dict[str, Draft202012Validator]:
    """A validator for every shipped schema by file name (formats checked)."""
    checker = Draft202012Validator.FORMAT_CHECKER
    return {n: Draft202012Validator(schema(n), registry=registry(), format_checker=checker) for n in _names()}


def validator(name: str) -> Draft202012Validator:
    """The validator for schema file ``name`` (formats checked)."""
    return validators()[name]


def errors(name: str, instance: Any) -> list[str]:
    """Human-readable violations of schema ``name`` (empty when valid)."""
    found = sorted(validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{'/' + '/'.join(str(p) for p in e.absolute_path)}: {e.message}"[:300] for e in found]


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref.split("#", 1)[0]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


@cache
def _bundles() -> dict[str, str]:
    """Every shipped schema by file name, bundled (see :func:`bundled`) and encoded as JSON."""
    return {n: _bundle(n) for n in _names()}


def _bundle(name: str) -> str:
    root = schema(name)
    embedded: dict[str, Any] = {}
    pending = [(root["$id"], root)]
    seen = {root["$id"]}
    while pending:
        base, doc = pending.pop()
        for ref in _refs(doc):
            uri = resolve_uri(base, ref)
            if uri in seen:
                continue
            seen.add(uri)
            target = documents()[uri]
            embedded[uri] = {k: v for k, v in target.items() if k != "$schema"}
            pending.append((uri, target))
    bundled = dict(root)
    defs = dict(bundled.get("$defs") or {})
    for uri, doc in embedded.items():
        defs["aap:" + uri.removeprefix(SCHEMA_BASE)] = doc
    if defs:
        bundled["$defs"] = defs
    return json.dumps(bundled)


def bundled(name: str) -> dict[str, Any]:
    """Schema ``name`` with every document it references embedded (a Draft 2020-12 compound document)."""
    return dict(json.loads(_bundles()[name]))


def resolve_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (plain URL joining, enough for the shipped relative refs)."""
    from urllib.parse import urljoin

    return urljoin(base, ref)


def normalise_numbers(value: Any) -> Any:
    """Integral floats back to ints, recursively (A2A DataParts carry every number as a double)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise_numbers(v) for v in value]
    return value
