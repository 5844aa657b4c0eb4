"""A context variable set for the length of a ``with`` block (the one helper every context-local value uses)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def scoped(var: ContextVar[T], value: T) -> Iterator[None]:
    """``var`` holds ``value`` inside the block (and in tasks started from it), its previous value after."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)
