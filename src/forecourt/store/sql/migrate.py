"""Run the packaged Alembic migrations programmatically, from the same async URL the store uses."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from forecourt.store.sql.engine import create_engine

if TYPE_CHECKING:  # Alembic is imported only to migrate: every command imports this module, few migrate
    from alembic.config import Config
    from sqlalchemy.engine import Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for the packaged migrations (no ``alembic.ini`` needed)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def _upgrade_on(connection: Connection, database_url: str, revision: str) -> None:
    from alembic import command

    cfg = alembic_config(database_url)
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, revision)


async def upgrade_async(database_url: str, revision: str = "heads") -> None:
    """Migrate the database at ``database_url`` to ``revision`` (call from async code).

    Args:
        database_url: ``sqlite+aiosqlite:///path`` or ``postgresql+asyncpg://...``.
        revision: Target revision; ``head`` is the newest.
    """
    engine = create_engine(database_url)
    try:
        await upgrade_engine(engine, revision)
    finally:
        await engine.dispose()


async def upgrade_engine(engine: AsyncEngine, revision: str = "heads") -> None:
    """Migrate through an existing engine (needed for ``sqlite+aiosqlite://`` in-memory databases)."""
    url = engine.url.render_as_string(hide_password=False)
    async with engine.connect() as conn:
        await conn.run_sync(_upgrade_on, url, revision)
        await conn.commit()


def upgrade(database_url: str, revision: str = "heads") -> None:
    """Migrate the database at ``database_url`` to ``revision`` (call from synchronous code).

    Works even when an event loop is already running in this thread (the migration then runs on a
    private loop in a helper thread).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(upgrade_async(database_url, revision))
        return
    failure: list[BaseException] = []

    def _target() -> None:
        try:
            asyncio.run(upgrade_async(database_url, revision))
        except BaseException as exc:  # handed back to the caller's thread below
            failure.append(exc)

    worker = threading.Thread(target=_target, name="forecourt-migrate")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]


def current_revision(connection: Connection) -> str | None:
    """The revision a database is at (``None`` before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()
