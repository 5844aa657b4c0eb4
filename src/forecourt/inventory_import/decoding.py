"""Turning feed bytes into text: UTF-8 (with or without BOM) first, legacy encodings only when that fails."""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DecodedFeed:
    """The feed's text, the encoding that decoded it, and whether that was a fallback."""

    text: str
    encoding: str
    fallback: bool


def decode_feed(data: bytes) -> DecodedFeed:
    """Decode ``data``: UTF-16 when it has a UTF-16 BOM, else UTF-8 (BOM stripped), else cp1252, else latin-1.

    A fallback is reported (``fallback=True``) so the caller can tell the dealer their feed is not UTF-8;
    latin-1 never fails, so decoding always succeeds.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return DecodedFeed(data.decode("utf-16"), "utf-16", fallback=False)
    try:
        return DecodedFeed(data.decode("utf-8-sig"), "utf-8", fallback=False)
    except UnicodeDecodeError:
        pass
    try:
        return DecodedFeed(data.decode("cp1252"), "cp1252", fallback=True)
    except UnicodeDecodeError:
        return DecodedFeed(data.decode("latin-1"), "latin-1", fallback=True)
