"""Natural-language inventory requests → ``inventory.search`` filters, a sort and ranking hints.

"three-row SUV under 40k with low miles" becomes ``{"body": ["suv"], "model": [<three-row SUVs in
stock>], "price_max": 4000000, "mileage_max": 30000}`` plus the hint to rank low mileage first. The
parser is rule-based and explains itself: every filter it sets comes with the phrase that set it,
and words it could not use are returned too, so an agent can tell the buyer what was understood.

Makes, models, trims and colours are matched against the dealership's own stock (the values of
``inventory.facets``) with a small built-in vocabulary as a fallback; which models have a third row
of seats is curated knowledge kept here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LOW_MILES_MAX = 30_000
AROUND_SPREAD = 0.10

# Models sold with a third row of seats (standard or the common configuration), by make.
THREE_ROW_MODELS: dict[str, tuple[str, ...]] = {
    "Toyota": ("Highlander", "Grand Highlander", "Sequoia", "Land Cruiser", "Sienna"),
    "Honda": ("Pilot", "Odyssey"),
    "Ford": ("Explorer", "Expedition", "Flex"),
    "Chevrolet": ("Traverse", "Tahoe", "Suburban"),
    "GMC": ("Acadia", "Yukon", "Yukon XL"),
    "Kia": ("Telluride", "Sorento", "Carnival", "EV9"),
    "Hyundai": ("Palisade", "Santa Fe"),
    "Subaru": ("Ascent",),
    "Nissan": ("Pathfinder", "Armada"),
    "Mazda": ("CX-9", "CX-90"),
    "Volkswagen": ("Atlas",),
    "Tesla": ("Model X",),
    "Chrysler": ("Pacifica", "Voyager"),
    "Dodge": ("Durango",),
    "Jeep": ("Grand Cherokee L", "Wagoneer", "Grand Wagoneer"),
    "Buick": ("Enclave",),
    "Cadillac": ("Escalade", "XT6"),
    "Lincoln": ("Aviator", "Navigator"),
    "BMW": ("X7",),
    "Mercedes-Benz": ("GLS", "GLB"),
    "Audi": ("Q7",),
    "Volvo": ("XC90", "EX90"),
    "Acura": ("MDX",),
    "Lexus": ("GX", "LX", "TX"),
    "Infiniti": ("QX60", "QX80"),
}
_FALLBACK_MAKE_TEXT = (
    "Toyota Honda Ford Chevrolet GMC Kia Hyundai Subaru Nissan Mazda Volkswagen Tesla Chrysler Dodge Jeep "
    "Buick Cadillac Lincoln BMW Audi Volvo Acura Lexus Infiniti Ram Porsche Genesis Mitsubishi"
)
_FALLBACK_MAKES = _FALLBACK_MAKE_TEXT.split()
_FALLBACK_MODELS = (
    "Corolla",
    "Camry",
    "RAV4",
    "Tacoma",
    "Tundra",
    "4Runner",
    "Prius",
    "Civic",
    "Accord",
    "CR-V",
    "HR-V",
    "Passport",
    "Ridgeline",
    "F-150",
    "Escape",
    "Mustang",
    "Silverado 1500",
    "Equinox",
    "Model 3",
    "Model Y",
    "Outback",
    "Forester",
    "Rogue",
    "Altima",
    "Tucson",
    "Elantra",
    "CX-5",
    *(m for models in THREE_ROW_MODELS.values() for m in models),
)
_MAKE_ALIASES = {"chevy": "Chevrolet", "vw": "Volkswagen", "merc": "Mercedes-Benz", "mercedes": "Mercedes-Benz"}
_BODY_WORDS = {
    "suv": "suv",
    "suvs": "suv",
    "crossover": "suv",
    "crossovers": "suv",
    "truck": "pickup",
    "trucks": "pickup",
    "pickup": "pickup",
    "pickups": "pickup",
    "sedan": "sedan",
    "sedans": "sedan",
    "minivan": "minivan",
    "minivans": "minivan",
    "van": "minivan",
    "hatchback": "hatchback",
    "hatchbacks": "hatchback",
    "hatch": "hatchback",
    "coupe": "coupe",
    "coupes": "coupe",
    "wagon": "wagon",
    "wagons": "wagon",
    "convertible": "convertible",
}
_FUEL_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bplug[- ]?in(?: hybrid)?s?\b|\bphevs?\b", ("plug_in_hybrid",)),
    (r"\bhybrids?\b", ("hybrid", "plug_in_hybrid")),
    (r"\belectric\b|\bevs?\b|\bbevs?\b|\bbattery[- ]electric\b", ("electric",)),
    (r"\bdiesel\b", ("diesel",)),
    (r"\bgas(?:oline)?\b|\bpetrol\b", ("gas",)),
)
_DRIVE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bawd\b|\ball[- ]wheel[- ]drive\b", "awd"),
    (r"\b4wd\b|\b4x4\b|\bfour[- ]wheel[- ]drive\b", "4wd"),
    (r"\bfwd\b|\bfront[- ]wheel[- ]drive\b", "fwd"),
    (r"\brwd\b|\brear[- ]wheel[- ]drive\b", "rwd"),
)
_COLORS = ("red", "white", "black", "silver", "gray", "blue", "green", "brown", "beige", "gold", "orange", "yellow")
_NUM = r"\$?\s?(\d+(?:\.\d+)?)\s?(k|grand|thousand)?"
_MILES = r"\s?(?:miles?|mi\b|mileage|km)"
_THREE_ROW = re.compile(
    r"\b(?:three|3)[- ]?rows?\b|\bthird[- ]row\b|\b(?:7|8|seven|eight)[- ]?(?:seat(?:er|s)?|passengers?)\b"
    r"|\bseats? (?:7|8|seven|eight)\b"
)


@dataclass
class Vocabulary:
    """Values present in a dealership's stock (from ``inventory.facets``), used to recognise names."""

    makes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    trims: list[str] = field(default_factory=list)
    colors: list[str] = field(default_factory=list)

    @classmethod
    def from_facets(cls, facets: Mapping[str, Any]) -> Vocabulary:
        """From an ``inventory.facets`` output (``terms`` → ``[{value, count}]``)."""
        terms = facets.get("terms") or {}

        def values(name: str) -> list[str]:
            return [str(t["value"]) for t in terms.get(name) or () if t.get("value")]

        return cls(values("make"), values("model"), values("trim"), values("exterior_color"))

    def with_fallbacks(self) -> Vocabulary:
        """This vocabulary, with the built-in makes and models added."""
        return Vocabulary(
            makes=_merge(self.makes, _FALLBACK_MAKES),
            models=_merge(self.models, _FALLBACK_MODELS),
            trims=list(self.trims),
            colors=list(self.colors),
        )


@dataclass
class InventoryIntent:
    """What a request asks for: ``inventory.search`` filters, an explicit sort, ranking weights."""

    filters: dict[str, Any] = field(default_factory=dict)
    sort: dict[str, str] | None = None
    weights: dict[str, float] = field(default_factory=lambda: {"price": 1.0, "mileage": 1.0, "year": 1.0})
    interpretation: list[dict[str, Any]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    soft: list[str] = field(default_factory=list)

    def set(self, key: str, value: Any, phrase: str, *, soft: bool = False) -> None:
        """Set a filter and remember the phrase that set it."""
        self.filters[key] = value
        self.interpretation.append({"phrase": phrase.strip(), "filter": key, "value": value})
        if soft and key not in self.soft:
            self.soft.append(key)


def _merge(first: Iterable[str], second: Iterable[str]) -> list[str]:
    seen = {v.lower() for v in first}
    return [*first, *(v for v in second if v.lower() not in seen)]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _amount(number: str, suffix: str | None) -> float:
    value = float(number)
    return value * 1000 if suffix else value


class _Text:
    """The request, lower-cased, with the spans already used blanked out."""

    def __init__(self, text: str) -> None:
        cleaned = text.lower().replace("\u2013", "-").replace("\u2014", "-")
        self.value = re.sub(r"(?<=\d),(?=\d{3})", "", cleaned)

    def first(self, pattern: str) -> re.Match[str] | None:
        """Take every match of ``pattern``; the first one, if any."""
        matches = self.take(pattern)
        return matches[0] if matches else None

    def take(self, pattern: str) -> list[re.Match[str]]:
        matches = list(re.finditer(pattern, self.value))
        for m in matches:
            self.value = self.value[: m.start()] + " " * (m.end() - m.start()) + self.value[m.end() :]
        return matches


def parse_inventory_request(text: str, vocabulary: Vocabulary | None = None) -> InventoryIntent:
    """Map a buyer's sentence onto structured inventory filters (see the module docstring)."""
    stock = vocabulary or Vocabulary()
    vocab = stock.with_fallbacks()
    intent = InventoryIntent()
    work = _Text(text)
    _mileage(work, intent)
    _years(work, intent)
    _prices(work, intent)
    _sort_hints(work, intent)
    _condition(work, intent)
    three_row = bool(work.take(_THREE_ROW.pattern))
    _body(work, intent)
    _powertrain(work, intent)
    _names(work, intent, vocab, three_row, stock.models)
    _colors(work, intent, vocab)
    intent.ignored.extend(w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", work.value) if w not in _FILLER)
    return intent


_FILLER_TEXT = """a an the with and or for me my i im i'm we us our want need looking look find show any some
    that is are in of to on under over less than more below above around about good great nice car cars vehicle vehicles
    one please something like family under budget miles mileage price priced cost costs dollars
    can you do have has got get which what who there available stock inventory near by"""
_FILLER = frozenset(_FILLER_TEXT.split())


def _mileage(work: _Text, intent: InventoryIntent) -> None:
    for m in work.take(rf"(?:under|below|less than|fewer than|max(?:imum)?|up to|no more than|<=?)\s*{_NUM}{_MILES}"):
        intent.set("mileage_max", int(_amount(m.group(1), m.group(2))), m.group(0))
        intent.weights["mileage"] = 2.0
    for m in work.take(rf"{_NUM}{_MILES}\s*(?:or (?:less|fewer|under)|max(?:imum)?)"):
        intent.set("mileage_max", int(_amount(m.group(1), m.group(2))), m.group(0))
        intent.weights["mileage"] = 2.0
    for m in work.take(r"\blow[- ](?:miles?|mileage)\b|\bfew miles\b"):
        if "mileage_max" not in intent.filters:
            intent.set("mileage_max", LOW_MILES_MAX, m.group(0), soft=True)
        intent.weights["mileage"] = 2.0
    for m in work.take(r"\b(?:lowest|least|fewest) (?:miles?|mileage)\b"):
        intent.sort = {"field": "mileage", "order": "asc"}
        intent.interpretation.append({"phrase": m.group(0), "sort": intent.sort})


def _years(work: _Text, intent: InventoryIntent) -> None:
    year = r"((?:19[89]|20[0-4])\d)"
    for m in work.take(rf"\b{year}\s*(?:-|to|through)\s*{year}\b"):
        intent.set("year_min", int(m.group(1)), m.group(0))
        intent.set("year_max", int(m.group(2)), m.group(0))
    for m in work.take(rf"\b{year}\s*(?:\+|or newer|and newer|or later|and up|or above)"):
        intent.set("year_min", int(m.group(1)), m.group(0))
    for m in work.take(rf"\b(?:newer than|after)\s*{year}\b"):
        intent.set("year_min", int(m.group(1)) + 1, m.group(0))
    for m in work.take(rf"\b(?:since|from|at least)\s*(?:a\s*)?{year}\b"):
        intent.set("year_min", int(m.group(1)), m.group(0))
    for m in work.take(rf"\b(?:older than|before)\s*{year}\b"):
        intent.set("year_max", int(m.group(1)) - 1, m.group(0))
    for m in work.take(rf"\b{year}\s*(?:or older|and older|or earlier)"):
        intent.set("year_max", int(m.group(1)), m.group(0))
    for m in work.take(rf"\b{year}\b(?!\s?(?:k|grand|thousand))"):
        intent.set("year_min", int(m.group(1)), m.group(0))
        intent.set("year_max", int(m.group(1)), m.group(0))


def _prices(work: _Text, intent: InventoryIntent) -> None:
    monthly = r"(?=\s*(?:a|per|/)\s*(?:month|mo)\b)"
    for m in work.take(rf"{_NUM}{monthly}\s*(?:a|per|/)\s*(?:month|mo)\b"):
        intent.ignored.append(m.group(0).strip())  # monthly payments need a finance quote, not a filter
    for m in work.take(rf"\bbetween\s*{_NUM}\s*(?:and|-|to)\s*{_NUM}"):
        low, high = _amount(m.group(1), m.group(2) or m.group(4)), _amount(m.group(3), m.group(4))
        _price_range(intent, low, high, m.group(0))
    for m in work.take(r"\$\s?(\d+(?:\.\d+)?)\s?(k)?\s*-\s*\$?\s?(\d+(?:\.\d+)?)\s?(k)\b"):
        _price_range(intent, _amount(m.group(1), m.group(2) or m.group(4)), _amount(m.group(3), m.group(4)), m.group(0))
    upper = (
        r"(?:under|below|less than|cheaper than|max(?:imum)?|up to|no more than|at most|within|<=?|budget(?: of| is)?)"
    )
    for m in work.take(rf"\b{upper}\s*{_NUM}"):
        _price_bound(intent, "price_max", m.group(1), m.group(2), m.group(0))
    lower = r"(?:over|above|more than|at least|starting at|>=?)"
    for m in work.take(rf"\b{lower}\s*{_NUM}"):
        _price_bound(intent, "price_min", m.group(1), m.group(2), m.group(0))
    for m in work.take(rf"\b(?:around|about|roughly|approximately|~)\s*{_NUM}"):
        dollars = _amount(m.group(1), m.group(2))
        if dollars >= 1000:
            _price_range(intent, dollars * (1 - AROUND_SPREAD), dollars * (1 + AROUND_SPREAD), m.group(0))
    for m in work.take(r"\$\s?(\d+(?:\.\d+)?)\s?(k|grand|thousand)?|\b(\d+(?:\.\d+)?)\s?(k|grand)\b"):
        number, suffix = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        _price_bound(intent, "price_max", number, suffix, m.group(0))


def _price_bound(intent: InventoryIntent, key: str, number: str, suffix: str | None, phrase: str) -> None:
    dollars = _amount(number, suffix)
    if dollars < 1000:
        intent.ignored.append(phrase.strip())
        return
    intent.set(key, round(dollars * 100), phrase)


def _price_range(intent: InventoryIntent, low: float, high: float, phrase: str) -> None:
    low, high = min(low, high), max(low, high)
    intent.set("price_min", round(low * 100), phrase)
    intent.set("price_max", round(high * 100), phrase)


def _sort_hints(work: _Text, intent: InventoryIntent) -> None:
    for m in work.take(r"\b(?:cheapest|lowest[- ]priced?|least expensive|lowest price)\b"):
        intent.sort = {"field": "price", "order": "asc"}
        intent.interpretation.append({"phrase": m.group(0), "sort": intent.sort})
    for m in work.take(r"\b(?:cheap|affordable|inexpensive|budget[- ]friendly|bargain)\b"):
        intent.weights["price"] = 2.0
        intent.interpretation.append({"phrase": m.group(0), "rank": "price"})
    for m in work.take(r"\b(?:most expensive|priciest|highest[- ]priced?)\b"):
        intent.sort = {"field": "price", "order": "desc"}
        intent.interpretation.append({"phrase": m.group(0), "sort": intent.sort})
    for m in work.take(r"\b(?:newest|latest|most recent)\b"):
        intent.sort = {"field": "year", "order": "desc"}
        intent.interpretation.append({"phrase": m.group(0), "sort": intent.sort})
    for m in work.take(r"\b(?:newer|recent|late[- ]model)\b"):
        intent.weights["year"] = 2.0
        intent.interpretation.append({"phrase": m.group(0), "rank": "year"})


def _condition(work: _Text, intent: InventoryIntent) -> None:
    if m := work.first(r"\bcertified(?: pre[- ]?owned)?\b|\bcpo\b"):
        intent.set("condition", ["cpo"], m.group(0))
    elif m := work.first(r"\bused\b|\bpre[- ]?owned\b|\bsecond[- ]hand\b"):
        intent.set("condition", ["used", "cpo"], m.group(0))
    if work.take(r"\blike[- ]new\b"):
        intent.weights["mileage"] = 2.0
    if "condition" not in intent.filters and (m := work.first(r"\bbrand[- ]new\b|\bnew\b")):
        intent.set("condition", ["new"], m.group(0))


def _body(work: _Text, intent: InventoryIntent) -> None:
    found: list[str] = []
    phrases: list[str] = []
    for word, body in _BODY_WORDS.items():
        for m in work.take(rf"\b{word}\b"):
            if body not in found:
                found.append(body)
            phrases.append(m.group(0))
    if found:
        intent.set("body", found, " ".join(phrases))


def _powertrain(work: _Text, intent: InventoryIntent) -> None:
    fuels: list[str] = []
    for pattern, values in _FUEL_PATTERNS:
        for m in work.take(pattern):
            fuels.extend(v for v in values if v not in fuels)
            intent.interpretation.append({"phrase": m.group(0), "filter": "fuel", "value": list(values)})
    if fuels:
        intent.filters["fuel"] = fuels
    drives = [value for pattern, value in _DRIVE_PATTERNS if work.take(pattern)]
    if drives:
        intent.set("driveline", drives, " ".join(drives))
    if manual := work.first(r"\bmanual\b|\bstick(?:[- ]shift)?\b"):
        intent.set("transmission", ["manual"], manual.group(0))


def _names(work: _Text, intent: InventoryIntent, vocab: Vocabulary, three_row: bool, in_stock: list[str]) -> None:
    models = _match_values(work, vocab.models)
    for alias, make in _MAKE_ALIASES.items():
        if work.take(rf"\b{alias}\b"):
            vocab.makes.insert(0, make)
            work.value += f" {make.lower()}"
    makes = _match_values(work, vocab.makes)
    if makes:
        intent.set("make", makes, " ".join(makes))
    if three_row:
        rows = {m.lower() for ms in THREE_ROW_MODELS.values() for m in ms}
        # Only the three-row models the dealership has (all of them when its stock is unknown).
        candidates = [m for m in (in_stock or vocab.models) if m.lower() in rows]
        if makes:
            allowed = {m.lower() for mk in makes for m in THREE_ROW_MODELS.get(mk, ())}
            candidates = [m for m in candidates if m.lower() in allowed]
        if intent.filters.get("body") == ["suv"]:
            vans = {"sienna", "odyssey", "carnival", "pacifica", "voyager"}
            candidates = [m for m in candidates if m.lower() not in vans]
        named = [m for m in models if m.lower() in rows]
        chosen = named or candidates
        intent.set("model", chosen, "three-row")
    elif models:
        intent.set("model", models, " ".join(models))
    trims = [t for t in _match_values(work, [t for t in vocab.trims if len(t) >= 2])]
    if trims:
        intent.set("trim", trims, " ".join(trims), soft=True)


def _match_values(work: _Text, values: Sequence[str]) -> list[str]:
    """Values named in the text (longest first, so "Grand Highlander" wins over "Highlander")."""
    found: list[str] = []
    for value in sorted({v for v in values if _norm(v)}, key=lambda v: (-len(_norm(v)), v)):
        words = _norm(value).split()
        pattern = r"\b" + r"[\s-]?".join(re.escape(w) for w in words) + r"s?\b"
        if work.take(pattern):
            found.append(value)
    return found


def _colors(work: _Text, intent: InventoryIntent, vocab: Vocabulary) -> None:
    chosen: list[str] = []
    phrases: list[str] = []
    for color in _COLORS:
        pattern = r"\bgr[ae]y\b" if color == "gray" else rf"\b{color}\b"
        matches = work.take(pattern)
        if not matches:
            continue
        phrases.append(matches[0].group(0))
        spellings = ("gray", "grey") if color == "gray" else (color,)
        in_stock = [c for c in vocab.colors if any(re.search(rf"\b{s}\b", c.lower()) for s in spellings)]
        chosen.extend(in_stock or [color.title()])
    if chosen:
        intent.set("exterior_color", chosen, " ".join(phrases), soft=True)
