"""Deterministic demo data: the demo tenants of DESIGN.md, and benchmark-sized inventories.

- :func:`load_demo` loads profile ``demo``, companies ``demo-motor-group`` (rooftops ``demo-toyota-sf``,
  ``demo-honda-oak``) and ``demo-bay-autos`` (``demo-bay-sj``), their members and policies, and per
  rooftop an inventory, customers, consented leads, repair orders, appointments and 14 days of service
  slots. Idempotent.
- :func:`generate_bulk` writes up to millions of vehicles across thousands of rooftops, in batches,
  reporting progress through a callback (:func:`forecourt.demo.progress.rich_progress` makes a Rich bar).
"""

from __future__ import annotations

from forecourt.demo.bulk import BulkReport, ProgressCallback, generate_bulk, iter_bulk_vehicles
from forecourt.demo.common import DEFAULT_SEED
from forecourt.demo.loader import DemoReport, DemoSize, load_demo

__all__ = [
    "DEFAULT_SEED",
    "BulkReport",
    "DemoReport",
    "DemoSize",
    "ProgressCallback",
    "generate_bulk",
    "iter_bulk_vehicles",
    "load_demo",
]
