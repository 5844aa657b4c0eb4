"""Following an import from the request that started it, across the gateway: the console's live progress bar.

The console's upload view sets a callback with :func:`reporting` and then runs ``console.inventory.import``
through the gateway like any change; the action passes :func:`reporter` to ``import_feed``, which calls it as
``progress(rows_done, rows_total)`` before the first batch and after each one. The callback travels in a
context variable (the call runs in the view's task, or one started from it), so no request object or
surface type reaches the action.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar

from forecourt.scoped import scoped

Progress = Callable[[int, int], None]

_PROGRESS: ContextVar[Progress | None] = ContextVar("forecourt_import_progress", default=None)


def reporting(callback: Progress) -> AbstractContextManager[None]:
    """Within this block, an import started through the gateway reports its progress to ``callback``."""
    return scoped(_PROGRESS, callback)


def reporter() -> Progress | None:
    """The progress callback of the request this import runs for, if it asked for one."""
    return _PROGRESS.get()
