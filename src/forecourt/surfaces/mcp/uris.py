"""The one resource URI scheme of Forecourt's AutomotiveMCP server; every URI names its dealership.

::

    automotive://manifest                                              the AutomotiveMCP manifest
    automotive://dealers/{dealership_id}                               the dealership (dealer.information)
    automotive://dealers/{dealership_id}/{collection}                  a collection (first page; ?cursor=&limit=)
    automotive://dealers/{dealership_id}/{collection}/{id}             one resource

Collections: ``vehicles``, ``leads``, ``customers``, ``repair_orders``, ``appointments``, ``consents``.
Identifiers are percent-encoded. Reads map onto gateway actions (``inventory.get``, ``leads.list``, ...),
so policy, tenancy and audit apply to every read; subscribing to a collection URI notifies on every
change to a member (including creations), subscribing to a resource URI on changes to that resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, quote, unquote, urlsplit

from forecourt.domain.events import ResourceType

SCHEME = "automotive"
MANIFEST_URI = f"{SCHEME}://manifest"
_MAX_URI = 2048

UriKind = Literal["manifest", "dealer", "collection", "item"]


@dataclass(frozen=True)
class Collection:
    """One resource collection: its URI segment, resource type, and the actions that read it."""

    segment: str
    resource_type: ResourceType
    title: str
    get_action: str
    id_field: str
    list_action: str
    domain: str


COLLECTIONS: tuple[Collection, ...] = (
    Collection(
        "vehicles", ResourceType.VEHICLE, "Vehicle", "inventory.get", "vehicle_id", "inventory.search", "inventory"
    ),
    Collection("leads", ResourceType.LEAD, "Lead", "leads.get", "lead_id", "leads.list", "leads"),
    Collection(
        "customers", ResourceType.CUSTOMER, "Customer", "customers.get", "customer_id", "customers.list", "leads"
    ),
    Collection(
        "repair_orders",
        ResourceType.REPAIR_ORDER,
        "Repair order",
        "service.get_repair_order",
        "repair_order_id",
        "service.list_repair_orders",
        "service",
    ),
    Collection(
        "appointments",
        ResourceType.APPOINTMENT,
        "Service appointment",
        "service.get_appointment",
        "appointment_id",
        "service.list_appointments",
        "service",
    ),
    Collection(
        "consents", ResourceType.CONSENT, "Consent grant", "consent.get", "consent_id", "consent.list", "consent"
    ),
)
BY_SEGMENT = {c.segment: c for c in COLLECTIONS}
BY_TYPE = {c.resource_type: c for c in COLLECTIONS}


@dataclass(frozen=True)
class ResourceUri:
    """A parsed resource URI."""

    kind: UriKind
    dealership_id: str | None = None
    collection: Collection | None = None
    resource_id: str | None = None
    cursor: str | None = None
    limit: int | None = None


def dealer_uri(dealership_id: str) -> str:
    """``automotive://dealers/{dealership_id}``."""
    return f"{SCHEME}://dealers/{quote(dealership_id, safe='')}"


def collection_uri(dealership_id: str, segment: str) -> str:
    """``automotive://dealers/{dealership_id}/{collection}``."""
    return f"{dealer_uri(dealership_id)}/{segment}"


def item_uri(dealership_id: str, segment: str, resource_id: str) -> str:
    """``automotive://dealers/{dealership_id}/{collection}/{id}``."""
    return f"{collection_uri(dealership_id, segment)}/{quote(resource_id, safe='')}"


def event_uris(dealership_id: str, resource_type: ResourceType, resource_id: str) -> tuple[str, ...]:
    """The URIs a change to one resource updates: the resource itself and its collection."""
    collection = BY_TYPE.get(resource_type)
    if collection is None:
        return ()
    return (
        item_uri(dealership_id, collection.segment, resource_id),
        collection_uri(dealership_id, collection.segment),
    )


def _query(query: str) -> tuple[str | None, int | None]:
    params = parse_qs(query, keep_blank_values=False, max_num_fields=4)
    cursor = params.get("cursor", [None])[0]
    raw_limit = params.get("limit", [None])[0]
    limit = int(raw_limit) if raw_limit is not None and raw_limit.isdigit() else None
    if raw_limit is not None and limit is None:
        raise ValueError("limit")
    return cursor, limit


def parse_uri(uri: str) -> ResourceUri | None:
    """The parsed form of ``uri``, or ``None`` when it is not a Forecourt resource URI."""
    if len(uri) > _MAX_URI:
        return None
    try:
        parts = urlsplit(uri)
        cursor, limit = _query(parts.query)
    except ValueError:
        return None
    if parts.scheme != SCHEME or parts.fragment:
        return None
    if parts.netloc == "manifest" and parts.path in ("", "/") and not parts.query:
        return ResourceUri("manifest")
    segments = parts.path.split("/")[1:] if parts.path else []
    if parts.netloc != "dealers" or not segments or not all(segments):
        return None
    dealership_id = unquote(segments[0])
    if len(segments) == 1 and not parts.query:
        return ResourceUri("dealer", dealership_id)
    collection = BY_SEGMENT.get(segments[1]) if len(segments) >= 2 else None
    if collection is None or len(segments) > 3:
        return None
    if len(segments) == 2:
        return ResourceUri("collection", dealership_id, collection, cursor=cursor, limit=limit)
    if parts.query:
        return None
    return ResourceUri("item", dealership_id, collection, resource_id=unquote(segments[2]))
