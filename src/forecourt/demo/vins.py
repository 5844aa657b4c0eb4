"""Building valid VINs: WMI + descriptor + check digit + model-year code + plant + serial (49 CFR 565)."""

from __future__ import annotations

from forecourt.domain.vin import check_digit

# Position 10 cycles every 30 years; 1980 and 2010 are both "A".
_YEAR_CODES = "ABCDEFGHJKLMNPRSTVWXY123456789"
_TRANSLIT = {
    **{str(d): d for d in range(10)},
    **dict(zip("ABCDEFGH", range(1, 9), strict=True)),
    **dict(zip("JKLMN", range(1, 6), strict=True)),
    "P": 7,
    "R": 9,
    **dict(zip("STUVWXYZ", range(2, 10), strict=True)),
}
_WEIGHTS = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)
# Weighted sums of the serial's first and last three digits (positions 12-14 and 15-17).
_SERIAL_HI = tuple(7 * (n // 100) + 6 * (n // 10 % 10) + 5 * (n % 10) for n in range(1000))
_SERIAL_LO = tuple(4 * (n // 100) + 3 * (n // 10 % 10) + 2 * (n % 10) for n in range(1000))


def year_code(year: int) -> str:
    """The model-year character (VIN position 10) for ``year`` (1980-2039)."""
    if not 1980 <= year <= 2039:
        raise ValueError("model year out of the VIN year-code range")
    return _YEAR_CODES[(year - 1980) % 30]


def build_vin(wmi: str, vds: str, year: int, plant: str, serial: int) -> str:
    """A valid VIN from its parts; the check digit (position 9) is computed.

    Args:
        wmi: World Manufacturer Identifier (3 characters).
        vds: Vehicle descriptor section, positions 4-8 (5 characters).
        year: Model year, encoded at position 10.
        plant: Assembly plant code (1 character, position 11).
        serial: Production sequence number, 0-999999 (positions 12-17).
    """
    body = f"{wmi}{vds}0{year_code(year)}{plant}{serial:06d}"
    return body[:8] + check_digit(body) + body[9:]


class VinFactory:
    """Fast VIN construction for bulk generation: the fixed part's weighted sum is computed once."""

    __slots__ = ("_base", "_prefix", "_suffix")

    def __init__(self, wmi: str, vds: str, year: int, plant: str) -> None:
        self._prefix = f"{wmi}{vds}"
        self._suffix = f"{year_code(year)}{plant}"
        fixed = f"{self._prefix}0{self._suffix}"
        self._base = sum(_TRANSLIT[ch] * w for ch, w in zip(fixed, _WEIGHTS, strict=False))

    def make(self, serial: int) -> str:
        """The VIN with production sequence number ``serial`` (0-999999)."""
        hi, lo = divmod(serial, 1000)
        rem = (self._base + _SERIAL_HI[hi] + _SERIAL_LO[lo]) % 11
        return f"{self._prefix}{'X' if rem == 10 else rem}{self._suffix}{serial:06d}"
