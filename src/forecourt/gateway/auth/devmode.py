"""``FORECOURT_MCP_ANONYMOUS_MEMBER``: let MCP requests without credentials authenticate as one configured member.

For the official MCP conformance suite (its server scenarios cannot send an ``Authorization`` header) and for
local development only. Off by default. The member is an ordinary member: its ``allowed_tools``, scopes,
dealerships and its company's policies apply, and every call is audited under its id. Never set it on a
server reachable by anyone else.
"""

from __future__ import annotations

import logging

from forecourt.contract import Principal
from forecourt.errors import Unauthorized
from forecourt.store.base import Store

logger = logging.getLogger(__name__)


async def configured_member(store: Store, setting: str) -> Principal:
    """The principal of the member named ``company/member`` by the setting.

    Raises:
        Unauthorized: The setting is malformed, or the member is missing or inactive.
    """
    company_id, _, member_id = setting.partition("/")
    if not company_id or not member_id:
        raise Unauthorized()
    async with store.transaction() as uow:
        member = await uow.tenancy.get_member(company_id, member_id)
    if member is None or not member.active:
        logger.warning("FORECOURT_MCP_ANONYMOUS_MEMBER names no active member")
        raise Unauthorized()
    # An ordinary member principal (never "internal", which skips authorization).
    return Principal.of_member(member, key_prefix="anonymous-member", subject=member.id)
