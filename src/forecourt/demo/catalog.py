"""A small catalogue of real make/model/trim combinations, with the facts a demo inventory needs.

Prices are base MSRPs in whole US dollars (recent model years, approximate); the generator derives
older years' MSRPs and used prices from them. VIN parts are real World Manufacturer Identifiers for the
brand and plausible descriptor sections (positions 4-8, position 7 a letter as for model years 2010
onwards); the check digit and model-year code are computed by :mod:`forecourt.demo.vins`.

The data is kept as pipe-separated text tables so that it stays readable and compact.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TrimSpec:
    """One trim of a model: its base MSRP (dollars) and powertrain."""

    name: str
    msrp: int
    fuel: str
    transmission: str
    driveline: str
    engine: str


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model line of a brand: body, VIN parts, the model years it was built and its trims."""

    make: str
    model: str
    body: str
    wmis: tuple[str, ...]
    vds: str
    plants: str
    first_year: int
    last_year: int
    trims: tuple[TrimSpec, ...]


@dataclass(frozen=True, slots=True)
class BrandSpec:
    """A brand: destination charge (dollars), value retention factor, paint and interior colours."""

    make: str
    destination: int
    retention: float
    exterior_colors: tuple[str, ...]
    interior_colors: tuple[str, ...]


# make | destination | retention, then "ext:" and "int:" lines listing paint and interior colours
_BRANDS = """
Toyota | 1135 | 1.06
    ext: Midnight Black Metallic, Super White, Wind Chill Pearl, Celestial Silver Metallic
    ext: Magnetic Gray Metallic, Blueprint, Supersonic Red, Ice Cap, Underground
    int: Black Fabric, Ash Fabric, Black SofTex, Boulder SofTex, Black Leather
Honda | 1395 | 1.05
    ext: Platinum White Pearl, Crystal Black Pearl, Lunar Silver Metallic, Meteorite Gray Metallic
    ext: Radiant Red Metallic, Still Night Pearl, Sonic Gray Pearl, Canyon River Blue Metallic
    int: Black Cloth, Gray Cloth, Black Leather, Gray Leather
Ford | 1995 | 0.95
    ext: Agate Black, Oxford White, Iconic Silver, Carbonized Gray, Atlas Blue, Rapid Red
    int: Black Cloth, Medium Dark Slate, Black Leather
Chevrolet | 1895 | 0.94
    ext: Black, Summit White, Sterling Gray Metallic, Northsky Blue Metallic, Radiant Red Tintcoat
    int: Jet Black Cloth, Jet Black Leather
Tesla | 1390 | 0.82
    ext: Solid Black, Pearl White, Stealth Grey, Deep Blue Metallic, Ultra Red
    int: Black, White
Subaru | 1420 | 1.03
    ext: Crystal Black Silica, Crystal White Pearl, Ice Silver Metallic, Autumn Green Metallic
    ext: Magnetite Gray Metallic
    int: Black Cloth, Gray Cloth, Black Leather, Gray Leather
Nissan | 1390 | 0.9
    ext: Black, White, Silver, Gray, Blue, Red
    int: Black Cloth, Gray Cloth, Black Leather, Gray Leather
Hyundai | 1335 | 0.93
    ext: Black, White, Silver, Gray, Blue, Red
    int: Black Cloth, Gray Cloth, Black Leather, Gray Leather
BMW | 1175 | 0.88
    ext: Black Sapphire Metallic, Alpine White, Mineral White Metallic, Portimao Blue Metallic
    ext: Brooklyn Grey Metallic
    int: Black SensaTec, Cognac Vernasca Leather, Black Vernasca Leather
Mazda | 1420 | 1.0
    ext: Jet Black Mica, Snowflake White Pearl Mica, Soul Red Crystal Metallic, Machine Gray Metallic
    ext: Polymetal Gray Metallic
    int: Black Cloth, Gray Cloth, Black Leather, Gray Leather
"""

# model | body | WMIs | VDS (positions 4-8) | plant codes | model years
#     trim | base MSRP | fuel | transmission | driveline | engine
_MODELS = {
    "Toyota": """
Corolla | sedan | JTD 5YF | BCMEE | CPJ | 2014-2027
    LE | 22925 | gas | cvt | fwd | 2.0L I4
    SE | 25460 | gas | cvt | fwd | 2.0L I4
    XSE | 28860 | gas | cvt | fwd | 2.0L I4
    Hybrid LE | 24025 | hybrid | cvt | fwd | 1.8L I4 Hybrid
Camry | sedan | 4T1 4T4 | DAACK | UJ | 2014-2027
    LE | 28400 | hybrid | cvt | fwd | 2.5L I4 Hybrid
    SE | 31000 | hybrid | cvt | fwd | 2.5L I4 Hybrid
    XLE | 34400 | hybrid | cvt | fwd | 2.5L I4 Hybrid
    XSE | 34600 | hybrid | cvt | awd | 2.5L I4 Hybrid
RAV4 | suv | 2T3 JTM | P1RFV | CWJ | 2014-2027
    LE | 29800 | gas | automatic | fwd | 2.5L I4
    XLE | 31380 | gas | automatic | fwd | 2.5L I4
    XLE Premium | 34785 | gas | automatic | awd | 2.5L I4
    Adventure | 36990 | gas | automatic | awd | 2.5L I4
    Hybrid XLE | 33985 | hybrid | cvt | awd | 2.5L I4 Hybrid
    Prime XSE | 47750 | plug_in_hybrid | cvt | awd | 2.5L I4 Plug-in Hybrid
Highlander | suv | 5TD | KDRAH | SU | 2014-2027
    LE | 39520 | gas | automatic | fwd | 2.4L Turbo I4
    XLE | 44320 | gas | automatic | awd | 2.4L Turbo I4
    Limited | 48720 | gas | automatic | awd | 2.4L Turbo I4
    Hybrid XLE | 46920 | hybrid | cvt | awd | 2.5L I4 Hybrid
Grand Highlander | suv | 5TD | AAAB5 | SU | 2024-2027
    XLE | 46000 | gas | automatic | fwd | 2.4L Turbo I4
    Limited | 52000 | gas | automatic | awd | 2.4L Turbo I4
    Hybrid MAX Platinum | 59000 | hybrid | automatic | awd | 2.4L Turbo I4 Hybrid
Tacoma | pickup | 3TM | LB5JN | MX | 2014-2027
    SR | 31500 | gas | automatic | rwd | 2.4L Turbo I4
    SR5 | 36400 | gas | automatic | 4wd | 2.4L Turbo I4
    TRD Sport | 39800 | gas | automatic | 4wd | 2.4L Turbo I4
    TRD Off-Road | 41900 | gas | manual | 4wd | 2.4L Turbo I4
    Limited | 52000 | gas | automatic | 4wd | 2.4L Turbo I4
Tundra | pickup | 5TF | LA5DB | XS | 2014-2027
    SR5 | 48000 | gas | automatic | 4wd | 3.4L Twin-Turbo V6
    Limited | 56000 | gas | automatic | 4wd | 3.4L Twin-Turbo V6
    Platinum | 64000 | gas | automatic | 4wd | 3.4L Twin-Turbo V6
    TRD Pro | 71000 | hybrid | automatic | 4wd | 3.4L Twin-Turbo V6 Hybrid
4Runner | suv | JTE | NU5JR | 5J | 2014-2027
    SR5 | 42000 | gas | automatic | 4wd | 2.4L Turbo I4
    TRD Off-Road | 48000 | gas | automatic | 4wd | 2.4L Turbo I4
    Limited | 55000 | gas | automatic | 4wd | 2.4L Turbo I4
    TRD Pro | 67000 | hybrid | automatic | 4wd | 2.4L Turbo I4 Hybrid
Prius | hatchback | JTD | ACACU | 3J | 2014-2027
    LE | 28550 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    XLE | 32000 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    Limited | 35900 | hybrid | cvt | fwd | 2.0L I4 Hybrid
Sienna | minivan | 5TD | YSKFC | S | 2014-2027
    LE | 39185 | hybrid | cvt | fwd | 2.5L I4 Hybrid
    XLE | 45000 | hybrid | cvt | fwd | 2.5L I4 Hybrid
    XSE | 47000 | hybrid | cvt | awd | 2.5L I4 Hybrid
    Platinum | 56000 | hybrid | cvt | awd | 2.5L I4 Hybrid
bZ4X | suv | JTM | ABACA | J | 2023-2027
    XLE | 37070 | electric | automatic | fwd | Electric Motor
    Limited | 45000 | electric | automatic | awd | Dual Electric Motors
""",
    "Honda": """
Civic | sedan | 2HG 19X | FE2F5 | HA | 2014-2027
    LX | 24250 | gas | cvt | fwd | 2.0L I4
    Sport | 26450 | gas | cvt | fwd | 2.0L I4
    Sport Hybrid | 29650 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    Sport Touring Hybrid | 32850 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    Si | 29300 | gas | manual | fwd | 1.5L Turbo I4
Accord | sedan | 1HG | CY1F3 | AL | 2014-2027
    LX | 28295 | gas | cvt | fwd | 1.5L Turbo I4
    SE | 30510 | gas | cvt | fwd | 1.5L Turbo I4
    Sport Hybrid | 33655 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    EX-L Hybrid | 35000 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    Touring Hybrid | 39000 | hybrid | cvt | fwd | 2.0L I4 Hybrid
CR-V | suv | 2HK 7FA 5J6 | RS4H7 | LHE | 2014-2027
    LX | 30850 | gas | cvt | fwd | 1.5L Turbo I4
    EX | 33150 | gas | cvt | fwd | 1.5L Turbo I4
    EX-L | 36850 | gas | cvt | awd | 1.5L Turbo I4
    Sport Hybrid | 34950 | hybrid | cvt | fwd | 2.0L I4 Hybrid
    Sport Touring Hybrid | 41350 | hybrid | cvt | awd | 2.0L I4 Hybrid
HR-V | suv | 3CZ | RZ2H5 | M | 2016-2027
    LX | 25400 | gas | cvt | fwd | 2.0L I4
    Sport | 27400 | gas | cvt | fwd | 2.0L I4
    EX-L | 29400 | gas | cvt | awd | 2.0L I4
Pilot | suv | 5FN | YG2H7 | BL | 2014-2027
    Sport | 40200 | gas | automatic | fwd | 3.5L V6
    EX-L | 44900 | gas | automatic | fwd | 3.5L V6
    TrailSport | 50000 | gas | automatic | awd | 3.5L V6
    Touring | 48000 | gas | automatic | awd | 3.5L V6
    Elite | 54000 | gas | automatic | awd | 3.5L V6
Odyssey | minivan | 5FN | RL6H7 | B | 2014-2027
    EX-L | 42300 | gas | automatic | fwd | 3.5L V6
    Sport-L | 45000 | gas | automatic | fwd | 3.5L V6
    Touring | 47000 | gas | automatic | fwd | 3.5L V6
    Elite | 52000 | gas | automatic | fwd | 3.5L V6
Ridgeline | pickup | 5FP | YK3F7 | B | 2017-2027
    Sport | 40100 | gas | automatic | awd | 3.5L V6
    RTL | 44000 | gas | automatic | awd | 3.5L V6
    TrailSport | 46000 | gas | automatic | awd | 3.5L V6
    Black Edition | 47700 | gas | automatic | awd | 3.5L V6
Passport | suv | 5FN | YF8H5 | BL | 2019-2027
    RTL | 44000 | gas | automatic | awd | 3.5L V6
    TrailSport | 48000 | gas | automatic | awd | 3.5L V6
    Black Edition | 53000 | gas | automatic | awd | 3.5L V6
Prologue | suv | 5J6 | PS4H7 | M | 2024-2027
    EX | 47400 | electric | automatic | fwd | Electric Motor
    Touring | 51400 | electric | automatic | awd | Dual Electric Motors
    Elite | 57900 | electric | automatic | awd | Dual Electric Motors
""",
    "Ford": """
F-150 | pickup | 1FT | FW1E8 | FK | 2014-2026
    XL | 38000 | gas | automatic | rwd | 2.7L EcoBoost V6
    XLT | 47000 | gas | automatic | 4wd | 2.7L EcoBoost V6
    Lariat | 60000 | gas | automatic | 4wd | 3.5L EcoBoost V6
    Platinum | 70000 | gas | automatic | 4wd | 3.5L EcoBoost V6
Escape | suv | 1FM | CU9G6 | LU | 2014-2026
    Active | 28000 | gas | automatic | fwd | 1.5L EcoBoost I3
    ST-Line | 31000 | gas | automatic | fwd | 1.5L EcoBoost I3
    Platinum | 38000 | hybrid | cvt | awd | 2.5L I4 Hybrid
Mustang | coupe | 1FA | P6TH0 | 5 | 2014-2026
    EcoBoost | 32000 | gas | automatic | rwd | 2.3L EcoBoost I4
    GT | 44000 | gas | manual | rwd | 5.0L V8
""",
    "Chevrolet": """
Silverado 1500 | pickup | 1GC 3GC | UDEED | ZG | 2014-2026
    WT | 38000 | gas | automatic | 4wd | 2.7L Turbo I4
    LT | 48000 | gas | automatic | 4wd | 5.3L V8
    RST | 55000 | gas | automatic | 4wd | 5.3L V8
    High Country | 66000 | gas | automatic | 4wd | 6.2L V8
Equinox | suv | 3GN 2GN | AXHEG | L6 | 2014-2026
    LS | 28000 | gas | automatic | fwd | 1.5L Turbo I4
    LT | 30000 | gas | automatic | fwd | 1.5L Turbo I4
    RS | 33000 | gas | automatic | awd | 1.5L Turbo I4
Bolt EV | hatchback | 1G1 | FY6S0 | 4 | 2017-2023
    1LT | 27000 | electric | automatic | fwd | Electric Motor
    2LT | 30000 | electric | automatic | fwd | Electric Motor
""",
    "Tesla": """
Model 3 | sedan | 5YJ | 3E1EA | FP | 2018-2026
    Standard RWD | 40000 | electric | automatic | rwd | Electric Motor
    Long Range AWD | 47000 | electric | automatic | awd | Dual Electric Motors
    Performance | 55000 | electric | automatic | awd | Dual Electric Motors
Model Y | suv | 7SA 5YJ | YGDEE | FA | 2020-2026
    Long Range AWD | 50000 | electric | automatic | awd | Dual Electric Motors
    Performance | 55000 | electric | automatic | awd | Dual Electric Motors
""",
    "Subaru": """
Outback | wagon | 4S4 | BTACC | 3 | 2014-2026
    Premium | 31000 | gas | cvt | awd | 2.5L H4
    Limited | 37000 | gas | cvt | awd | 2.5L H4
    Onyx Edition XT | 40000 | gas | cvt | awd | 2.4L Turbo H4
Forester | suv | JF2 | SKAGC | H | 2014-2026
    Base | 28000 | gas | cvt | awd | 2.5L H4
    Premium | 31000 | gas | cvt | awd | 2.5L H4
    Sport | 34000 | gas | cvt | awd | 2.5L H4
    Touring | 39000 | gas | cvt | awd | 2.5L H4
""",
    "Nissan": """
Rogue | suv | 5N1 JN8 | BT3BA | CW | 2014-2026
    S | 29000 | gas | cvt | fwd | 1.5L Turbo I3
    SV | 31000 | gas | cvt | fwd | 1.5L Turbo I3
    SL | 37000 | gas | cvt | awd | 1.5L Turbo I3
    Platinum | 41000 | gas | cvt | awd | 1.5L Turbo I3
Altima | sedan | 1N4 | BL4BV | CN | 2014-2026
    S | 27000 | gas | cvt | fwd | 2.5L I4
    SV | 28000 | gas | cvt | fwd | 2.5L I4
    SR | 29000 | gas | cvt | fwd | 2.5L I4
    SL | 33000 | gas | cvt | awd | 2.5L I4
""",
    "Hyundai": """
Tucson | suv | 5NM KM8 | JBCAE | HU | 2014-2026
    SE | 29000 | gas | automatic | fwd | 2.5L I4
    SEL | 31000 | gas | automatic | fwd | 2.5L I4
    Limited | 38000 | gas | automatic | awd | 2.5L I4
    Hybrid SEL | 34000 | hybrid | automatic | awd | 1.6L Turbo I4 Hybrid
Elantra | sedan | 5NP | LM4AG | H | 2014-2026
    SE | 22000 | gas | cvt | fwd | 2.0L I4
    SEL | 23000 | gas | cvt | fwd | 2.0L I4
    Limited | 27000 | gas | cvt | fwd | 2.0L I4
    N | 34000 | gas | manual | fwd | 2.0L Turbo I4
""",
    "BMW": """
3 Series | sedan | WBA | 5R1C0 | FK | 2014-2026
    330i | 46000 | gas | automatic | rwd | 2.0L Turbo I4
    330i xDrive | 48000 | gas | automatic | awd | 2.0L Turbo I4
    M340i | 59000 | gas | automatic | rwd | 3.0L Turbo I6
""",
    "Mazda": """
CX-5 | suv | JM3 | KFBCM | 0 | 2014-2026
    2.5 S Preferred | 31000 | gas | automatic | awd | 2.5L I4
    2.5 S Premium | 33000 | gas | automatic | awd | 2.5L I4
    2.5 Turbo Signature | 40000 | gas | automatic | awd | 2.5L Turbo I4
""",
}

_FIRST_NAMES = """
Olivia, Liam, Emma, Noah, Ava, Mateo, Sophia, Ethan, Isabella, Lucas, Mia, Aiden, Amelia, Daniel, Harper,
Jayden, Evelyn, Diego, Priya, Arjun, Mei, Wei, Hana, Kenji, Fatima, Omar, Chloe, Gabriel, Zoe, Samuel, Nadia,
Marcus, Grace, Andre, Leila, Hugo, Camila, Tomas, Ingrid, Kofi
"""
_LAST_NAMES = """
Nguyen, Garcia, Smith, Chen, Johnson, Martinez, Lee, Patel, Kim, Rodriguez, Williams, Wong, Lopez, Brown,
Singh, Hernandez, Davis, Tran, Gonzalez, Miller, Park, Wilson, Nakamura, Anderson, Okafor, Ramirez, Taylor,
Cohen, Rossi, Novak, Silva, Ahmed, Fischer, Moreau, Kowalski, Haddad, Ito, Reyes, Murphy, Andersen
"""


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


def _parse_brands(text: str) -> dict[str, BrandSpec]:
    heads: list[list[str]] = []
    colours: list[dict[str, list[str]]] = []
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            heads.append(_cells(line))
            colours.append({"ext": [], "int": []})
            continue
        tag, _, names = line.strip().partition(":")
        colours[-1][tag].extend(n.strip() for n in names.split(",") if n.strip())
    return {
        make: BrandSpec(make, int(destination), float(retention), tuple(c["ext"]), tuple(c["int"]))
        for (make, destination, retention), c in zip(heads, colours, strict=True)
    }


def _parse_models(make: str, text: str) -> tuple[ModelSpec, ...]:
    models: list[ModelSpec] = []
    head: list[str] = []
    trims: list[TrimSpec] = []
    for line in [*text.strip().splitlines(), ""]:
        if line.startswith(" "):
            name, msrp, fuel, transmission, driveline, engine = _cells(line)
            trims.append(TrimSpec(name, int(msrp), fuel, transmission, driveline, engine))
            continue
        if head:
            model, body, wmis, vds, plants, years = head
            first, last = years.split("-")
            models.append(
                ModelSpec(make, model, body, tuple(wmis.split()), vds, plants, int(first), int(last), tuple(trims))
            )
        head, trims = (_cells(line) if line else []), []
    return tuple(models)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.replace("\n", " ").split(",") if n.strip())


BRANDS: dict[str, BrandSpec] = _parse_brands(_BRANDS)
MODELS_BY_MAKE: dict[str, tuple[ModelSpec, ...]] = {make: _parse_models(make, t) for make, t in _MODELS.items()}
ALL_MODELS: tuple[ModelSpec, ...] = tuple(m for models in MODELS_BY_MAKE.values() for m in models)
FIRST_NAMES: tuple[str, ...] = _names(_FIRST_NAMES)
LAST_NAMES: tuple[str, ...] = _names(_LAST_NAMES)


def models_for(brands: tuple[str, ...]) -> tuple[ModelSpec, ...]:
    """Model lines of the given brands (all brands when empty)."""
    if not brands:
        return ALL_MODELS
    return tuple(m for m in ALL_MODELS if m.make in brands)
