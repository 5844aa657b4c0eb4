"""ADF leads by e-mail: one outbox delivery per CRM lead inbox, queued in the lead's own transaction.

The deliveries share the HTTP delivery's machinery (``deliveries`` table, lease, retries with backoff,
``delivered``/``retrying``/``failed`` status); only the kind (``crm_smtp``) and the target (the inbox
address) differ. Their ids are derived from the lead and the inbox, so queueing twice is impossible and a
retried message keeps its ``Message-ID``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from forecourt.store.base import Delivery, UnitOfWork

CRM_SMTP_KIND = "crm_smtp"
ADF_CONTENT_TYPE = "application/xml"


def mail_delivery_id(lead_id: str, recipient: str) -> str:
    """The delivery id of one lead to one inbox."""
    digest = hashlib.blake2b(recipient.strip().lower().encode(), digest_size=6).hexdigest()
    return f"crm-smtp-{lead_id}-{digest}"


async def queue_mail_deliveries(uow: UnitOfWork, lead_id: str, dealership_id: str, adf: str, now: datetime) -> int:
    """Queue the lead's ADF to every inbox of the dealership's mail route; returns how many were queued."""
    route = await uow.crm_mail.get(dealership_id)
    if route is None or not route.enabled:
        return 0
    for recipient in route.recipients:
        await uow.deliveries.add(
            Delivery(
                id=mail_delivery_id(lead_id, recipient),
                kind=CRM_SMTP_KIND,
                dealership_id=dealership_id,
                target=recipient,
                subject_id=lead_id,
                body=adf,
                content_type=ADF_CONTENT_TYPE,
                next_attempt_at=now,
                created_at=now,
            )
        )
    return len(route.recipients)
