"""VIN validation (ISO 3779 / 49 CFR 565): 17 characters, no I, O or Q, and a correct check digit."""

from __future__ import annotations

from vininfo import Vin
from vininfo.exceptions import ValidationError

from forecourt.domain.errors import VinError

_TRANSLIT = {
    **{str(d): d for d in range(10)},
    **dict(zip("ABCDEFGH", range(1, 9), strict=True)),
    **dict(zip("JKLMN", range(1, 6), strict=True)),
    "P": 7,
    "R": 9,
    **dict(zip("STUVWXYZ", range(2, 10), strict=True)),
}
_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)


def check_digit(vin: str) -> str:
    """The check digit (position 9) that the other 16 characters of ``vin`` require."""
    total = sum(_TRANSLIT[ch] * w for ch, w in zip(vin.upper(), _WEIGHTS, strict=True))
    rem = total % 11
    return "X" if rem == 10 else str(rem)


def with_check_digit(vin: str) -> str:
    """``vin`` with position 9 replaced by its correct check digit."""
    vin = vin.upper()
    return vin[:8] + check_digit(vin) + vin[9:]


def normalize_vin(raw: str) -> str:
    """Upper-case, validated VIN; raises :class:`VinError` with a reason a person can act on."""
    text = raw.strip().upper()
    if len(text) != 17:
        raise VinError("length", f"a VIN has 17 characters, this one has {len(text)}")
    try:
        Vin.validate(text)
    except ValidationError as exc:
        raise VinError("characters", "a VIN uses only digits and letters other than I, O and Q") from exc
    expected = check_digit(text)
    if text[8] != expected:
        raise VinError("check_digit", f"the check digit (9th character) should be {expected}, not {text[8]}")
    return text


def is_valid_vin(raw: str) -> bool:
    """Whether ``raw`` is a valid VIN."""
    try:
        normalize_vin(raw)
    except VinError:
        return False
    return True
