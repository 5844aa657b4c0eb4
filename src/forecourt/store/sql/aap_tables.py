"""Tables of the AAP dealer agent: push subscriptions per lead/appointment and the outbox cursors of its workers.

The A2A push-notification configurations themselves live in the a2a-sdk's own table
(``a2a_push_configs``, created by :class:`a2a.server.tasks.DatabasePushNotificationConfigStore` on the
same engine), so every replica serves the push-config methods.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from forecourt.store.sql.context import TxContext
from forecourt.store.sql.tables import UtcDateTime, metadata

aap_subscriptions = sa.Table(
    "aap_subscriptions",
    metadata,
    sa.Column("subject_id", sa.String(), primary_key=True),
    sa.Column("task_id", sa.String(), primary_key=True),
    sa.Column("dealership_id", sa.String(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

aap_cursors = sa.Table(
    "aap_cursors",
    metadata,
    sa.Column("name", sa.String(), primary_key=True),
    sa.Column("last_seq", sa.BigInteger(), nullable=False),
)


class SqlAapRecordRepository:
    """The AAP tables of one unit of work (:class:`~forecourt.store.base.AapRecordRepository`)."""

    def __init__(self, ctx: TxContext) -> None:
        self.conn = ctx.conn

    async def subscribe(self, subject_ids: list[str], task_id: str, dealership_id: str, at: datetime) -> None:
        """Route events about ``subject_ids`` (a lead, its appointment) to the push configs of ``task_id``."""
        for subject in subject_ids:
            exists = await self.conn.execute(
                sa.select(aap_subscriptions.c.subject_id).where(
                    aap_subscriptions.c.subject_id == subject, aap_subscriptions.c.task_id == task_id
                )
            )
            if exists.first() is None:
                await self.conn.execute(
                    aap_subscriptions.insert().values(
                        subject_id=subject, task_id=task_id, dealership_id=dealership_id, created_at=at
                    )
                )

    async def tasks_for(self, subject_id: str) -> list[str]:
        """Task ids whose push configs want events about ``subject_id``."""
        rows = await self.conn.execute(
            sa.select(aap_subscriptions.c.task_id).where(aap_subscriptions.c.subject_id == subject_id)
        )
        return [str(r[0]) for r in rows]

    async def cursor(self, name: str) -> int | None:
        """The last outbox sequence number worker ``name`` handled (``None`` before its first run)."""
        row = (await self.conn.execute(sa.select(aap_cursors.c.last_seq).where(aap_cursors.c.name == name))).first()
        return int(row[0]) if row is not None else None

    async def set_cursor(self, name: str, seq: int) -> None:
        """Move worker ``name``'s cursor forward (never backwards, so racing replicas cannot rewind it)."""
        updated = await self.conn.execute(
            aap_cursors.update().where(aap_cursors.c.name == name, aap_cursors.c.last_seq < seq).values(last_seq=seq)
        )
        if updated.rowcount == 0:
            row = (await self.conn.execute(sa.select(aap_cursors.c.name).where(aap_cursors.c.name == name))).first()
            if row is None:
                await self.conn.execute(aap_cursors.insert().values(name=name, last_seq=seq))
