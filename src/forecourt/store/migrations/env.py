"""Alembic environment: runs on a connection handed over by ``forecourt.store.sql.migrate``, or opens one.

No ``alembic.ini`` is needed: the configuration is built in code. The ``alembic`` command line still
works with ``-x url=...`` or ``sqlalchemy.url`` set in a config file of your own.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from forecourt.store.sql.engine import create_engine
from forecourt.store.sql.schema import include_object, metadata

config = context.config


def _url() -> str:
    return context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url") or ""


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=include_object,
    )


def _run(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


def _main() -> None:
    if context.is_offline_mode():
        context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async(_url()))


_main()
