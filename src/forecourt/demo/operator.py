"""The demo loads as the operator's ``admin.demo.load`` action runs them (bootstrap hands :func:`load` to it).

A progress bar set with :func:`reporting` (the command line's) follows a bulk load: the call runs in the same
context as the command that made it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from forecourt.demo.bulk import ProgressCallback, generate_bulk
from forecourt.demo.common import DEFAULT_SEED
from forecourt.demo.loader import load_demo
from forecourt.store.base import Store

_PROGRESS: ContextVar[ProgressCallback | None] = ContextVar("demo_progress", default=None)


@contextmanager
def reporting(progress: ProgressCallback) -> Iterator[None]:
    """Report a bulk load's progress to ``progress`` while the block runs."""
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


async def load(store: Store, options: Mapping[str, Any]) -> dict[str, Any]:
    """The demo tenants (``vehicles`` per rooftop, ``seed``), or with ``bulk`` ``dealerships`` x ``vehicles``."""
    seed = int(options.get("seed", DEFAULT_SEED))
    if options.get("bulk"):
        report = await generate_bulk(
            store,
            dealerships=int(options.get("dealerships", 1000)),
            vehicles_per_dealership=int(options.get("vehicles", 60)),
            seed=seed,
            progress=_PROGRESS.get(),
        )
        return {"vehicles": report.vehicles, "dealerships": report.dealerships, "seconds": report.seconds}
    demo = await load_demo(store, vehicles_per_dealership=int(options.get("vehicles", 60)), seed=seed)
    return {"changes": demo.changed, "dealership_ids": list(demo.dealership_ids)}
