"""A would-be policy, seen only by calls made inside :func:`policy_overlay` (the console's pre-flight).

The pre-flight runs the AAP conformance checks and the MCP tool listing through the real front doors and
the real gateway, in this task; a context variable makes this task's calls (and only them) read the
proposed policies instead of the stored ones. Nothing is written. The pre-flight action sets the overlay and the
gateway's policy stage reads it, so it lives in the contract, below both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from forecourt.domain.tenancy import Policy

_OVERLAY: ContextVar[dict[str, list[Policy]] | None] = ContextVar("forecourt_policy_overlay", default=None)


@contextmanager
def policy_overlay(company_id: str, policies: Sequence[Policy]) -> Iterator[None]:
    """Within the block, ``company_id``'s policies read as ``policies`` in this task and tasks it starts."""
    token = _OVERLAY.set({company_id: list(policies)})
    try:
        yield
    finally:
        _OVERLAY.reset(token)


def overlaid(company_id: str) -> list[Policy] | None:
    """The would-be policies of ``company_id`` in effect here, or ``None``."""
    overlay = _OVERLAY.get()
    return overlay.get(company_id) if overlay else None
