"""A harness that runs dealer actions through their catalogue handlers on a real, migrated SQLite store.

Every call validates its payload against the action's input schema (as the gateway does) and the
output against the action's output schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from forecourt.actions.catalogue import register_dealer_actions
from forecourt.contract import Catalogue, ExecutionContext
from forecourt.gateway.base import Principal
from forecourt.settings import Settings
from forecourt.store import SqlStore, create_engine, upgrade_async

from .builders import DEALER, NOW, OTHER, tenants

PRINCIPAL = Principal(
    method="internal",
    company_id="co-1",
    member_id="crm-agent",
    dealership_ids=frozenset({DEALER, OTHER}),
)


@dataclass
class Harness:
    """Calls dealer actions as the gateway would after authorization."""

    store: SqlStore
    settings: Settings
    catalogue: Catalogue

    def context(
        self,
        action: str,
        *,
        dealership_id: str | None = DEALER,
        now: datetime = NOW,
        idempotency_key: str | None = None,
    ) -> ExecutionContext:
        """An execution context for ``action``."""
        act = self.catalogue.get(action)
        assert act is not None, action
        return ExecutionContext(
            action=act,
            principal=PRINCIPAL,
            dealership_id=dealership_id,
            company_id="co-1",
            store=self.store,
            settings=self.settings,
            now=now,
            trace_id="trace-test",
            idempotency_key=idempotency_key,
        )

    async def call(
        self,
        action: str,
        payload: Mapping[str, Any] | None = None,
        *,
        dealership_id: str | None = DEALER,
        now: datetime = NOW,
        idempotency_key: str | None = None,
    ) -> Any:
        """Run ``action`` and return its output, checking both schemas."""
        body = dict(payload or {})
        ctx = self.context(action, dealership_id=dealership_id, now=now, idempotency_key=idempotency_key)
        validator = Draft202012Validator(ctx.action.input_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        validator.validate(body)
        handler = self.catalogue.handler_for(ctx.action)
        assert handler is not None
        outcome = await handler(body, ctx)
        assert ctx.action.output_schema is not None
        Draft202012Validator(ctx.action.output_schema, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(
            outcome.output
        )
        return outcome.output


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[SqlStore]:
    """A migrated SQLite store holding two dealerships."""
    await upgrade_async(sqlite_url)
    sql_store = SqlStore(create_engine(sqlite_url))
    profile, company, dealers = tenants()
    async with sql_store.transaction() as uow:
        await uow.tenancy.upsert_profile(profile)
        await uow.tenancy.upsert_company(company)
        for dealer in dealers:
            await uow.tenancy.upsert_dealership(dealer)
    try:
        yield sql_store
    finally:
        await sql_store.close()


@pytest.fixture
def harness(store: SqlStore) -> Harness:
    """The dealer actions wired to the store."""
    catalogue = Catalogue()
    register_dealer_actions(catalogue)
    settings = Settings(cursor_secret="test-cursor-secret", default_page_size=20, max_page_size=100)
    return Harness(store=store, settings=settings, catalogue=catalogue)
