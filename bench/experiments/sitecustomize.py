"""What-if patches for benchmark servers only (never for production): measure a proposed fix before making it.

bench/frontdoors.py and bench/soak.py put this folder on ``PYTHONPATH`` of the server (and so of its uvicorn
workers) when ``--experiment NAME`` is given; Python imports ``sitecustomize`` at start-up, which applies the
patches named in ``FORECOURT_BENCH_EXPERIMENTS`` (comma-separated):

- ``aap_read_view``: the read-only AAP skills (everything but ``lead.submit``) get ``store_reads_only=True``,
  i.e. the gateway's read-only store view (deferred ``BEGIN`` on SQLite instead of ``BEGIN IMMEDIATE``), as
  the dealer actions already do — proposed one-line change in ``forecourt/aap/actions.py:skill_action``.
- ``pg_no_pre_ping``: PostgreSQL engine without ``pool_pre_ping`` (one ``SELECT 1`` round trip less per
  checkout; asyncpg reconnects on the next error instead) — proposed for ``forecourt/store/sql/engine.py``.
- ``gc_freeze``: ``gc.freeze()`` once the app is built, so the ~320,000 start-up objects (modules, schemas,
  SDK types) leave the collector's generations and full collections stop walking them on the request path —
  proposed for ``forecourt/cli/serve.py:app_factory``.
- ``authority_once_per_call``: each gateway call reads its company's authority generation from Redis once
  (``gateway/backends/authority.read_once_per_call`` around ``Gateway._run``) instead of once per lookup (six
  ``MGET`` round trips on a keyed call) — proposed for ``forecourt/gateway/pipeline.py:Gateway._invoke``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

_WANTED = {x.strip() for x in os.environ.get("FORECOURT_BENCH_EXPERIMENTS", "").split(",") if x.strip()}


def _aap_read_view() -> None:
    import forecourt.actions.aap.skills as aap

    original = aap.skill_action

    def skill_action(skill: Any) -> Any:
        action = original(skill)
        return action if action.side_effect else replace(action, store_reads_only=True)

    aap.skill_action = skill_action


def _pg_no_pre_ping() -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    import forecourt.store.sql.engine as engine

    original = engine.create_engine

    def create_engine(database_url: str, *, pool_size: int = 10, echo: bool = False) -> Any:
        if engine.is_sqlite_url(database_url):
            return original(database_url, pool_size=pool_size, echo=echo)
        return create_async_engine(database_url, pool_size=pool_size, max_overflow=pool_size, echo=echo)

    engine.create_engine = create_engine
    import forecourt.store as store

    if getattr(store, "create_engine", None) is original:
        store.create_engine = create_engine
    import sys

    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "create_engine", None) is original:
            module.create_engine = create_engine


if "aap_read_view" in _WANTED:
    _aap_read_view()


def _gc_freeze() -> None:
    import gc

    import forecourt.cli.serve as serve

    original = serve.app_factory

    def app_factory() -> object:
        app = original()
        gc.collect()
        gc.freeze()
        return app

    serve.app_factory = app_factory


if "gc_freeze" in _WANTED:
    _gc_freeze()


def _authority_once_per_call() -> None:
    from forecourt.gateway.backends.authority import read_once_per_call
    from forecourt.gateway.pipeline import Gateway

    original = Gateway._run

    async def run(self: Any, call: Any) -> Any:
        with read_once_per_call():
            return await original(self, call)

    Gateway._run = run  # type: ignore[method-assign]


if "authority_once_per_call" in _WANTED:
    _authority_once_per_call()
