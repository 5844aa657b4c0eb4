"""The a2a-sdk's push-notification config table (``a2a_push_configs``) on the store's engine.

The SDK owns the table's shape (:class:`a2a.server.tasks.DatabasePushNotificationConfigStore` creates it
on first use); Forecourt only names it, so that every replica serves the push-config methods from the
shared database.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SAWarning

from forecourt import caching
from forecourt.store.sa_asyncio import AsyncEngine

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import PushNotificationConfigStore

TASKS_TABLE = "a2a_tasks"
PUSH_CONFIGS_TABLE = "a2a_push_configs"


@caching.once
def _models() -> tuple[Any, Any]:
    """The SDK's ORM classes for Forecourt's table names, declared once per process."""
    from a2a.server.models import create_push_notification_config_model, create_task_model

    with warnings.catch_warnings():
        # The SDK names every generated class like its default one; harmless, declared once here.
        warnings.simplefilter("ignore", SAWarning)
        return create_task_model(TASKS_TABLE), create_push_notification_config_model(PUSH_CONFIGS_TABLE)


def push_config_store(
    engine: AsyncEngine, owner_resolver: Callable[[ServerCallContext], str]
) -> PushNotificationConfigStore:
    """The SDK's database push-config store on ``engine``, in table ``a2a_push_configs``."""
    from a2a.server.tasks import DatabasePushNotificationConfigStore

    _task_model, config_model = _models()
    configs = DatabasePushNotificationConfigStore(engine, create_table=True, owner_resolver=owner_resolver)
    configs.config_model = config_model
    return configs
