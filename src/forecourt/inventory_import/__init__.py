"""Inventory feed import: CSV or JSON, canonical vehicle field names plus common dealer-feed aliases.

Entry point: :func:`import_feed`. The pure steps (:func:`read_feed`, :func:`validate_feed`) need no store.
"""

from __future__ import annotations

from forecourt.inventory_import.importer import FORMATS, build_vehicle, import_feed, read_feed, validate_feed
from forecourt.inventory_import.report import ImportReport, RejectedRow

__all__ = ["FORMATS", "ImportReport", "RejectedRow", "build_vehicle", "import_feed", "read_feed", "validate_feed"]
