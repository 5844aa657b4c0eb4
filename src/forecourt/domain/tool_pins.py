"""Pinned upstream tools: what an upstream MCP server's tools said when a person last trusted them.

A tool's *definition* is what a model reads and what calls are checked against: its name, title, description,
input and output schemas and annotations. Its *digest* is the SHA-256 of that definition as canonical JSON.
:func:`reconcile` compares the tools an upstream lists now with the pins and decides, tool by tool, what is
offered: the approved version while the listed one matches it, or while only its words changed (the old
description stays in service when the input and output schemas are the same); nothing while a new tool, a changed
schema or a removal waits for an administrator. The first listing of an upstream is approved as it is (the
administrator who registered it trusted it then); an upstream a policy auto-accepts is approved at every change.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

REMOVED = "removed"
ChangeKind = Literal["added", "changed", "removed"]
_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def definition_of(tool: dict[str, Any]) -> dict[str, Any]:
    """The pinned part of a tool as MCP lists it (wire JSON, camelCase)."""
    return {k: tool[k] for k in _KEYS if tool.get(k) is not None}


def digest_of(definition: dict[str, Any]) -> str:
    """SHA-256 (hex) of the definition as canonical JSON."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compatible(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether calls made against ``old`` mean the same to the upstream's ``new`` version (same schemas)."""
    if old is None:
        return False
    return all(old.get(k) == new.get(k) for k in ("inputSchema", "outputSchema"))


@dataclass(frozen=True)
class ToolPin:
    """One upstream tool's approved version and the change waiting for approval, if any."""

    tool: str
    digest: str | None
    definition: dict[str, Any] | None
    proposed_digest: str | None = None
    proposed: dict[str, Any] | None = None
    changed_at: datetime | None = None

    @property
    def pending(self) -> ChangeKind | None:
        """The kind of change waiting for approval."""
        if self.proposed_digest is None:
            return None
        if self.proposed_digest == REMOVED:
            return "removed"
        return "changed" if self.digest is not None else "added"

    def approved(self) -> ToolPin | None:
        """The pin once its pending change is approved (``None``: a removal, the pin goes)."""
        if self.proposed_digest is None:
            return self
        if self.proposed_digest == REMOVED:
            return None
        return replace(self, digest=self.proposed_digest, definition=self.proposed, proposed_digest=None, proposed=None)

    def diff(self) -> dict[str, Any]:
        """The pending change as the admin API, CLI and console show it: each field that differs, old and new."""
        old = self.definition or {}
        new = self.proposed or {}
        fields = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
        return {
            "tool": self.tool,
            "change": self.pending,
            "digest": self.digest,
            "proposed_digest": self.proposed_digest,
            "schema_compatible": compatible(self.definition, new) if self.pending == "changed" else None,
            "fields": {k: {"old": old.get(k), "new": new.get(k)} for k in fields},
        }


@dataclass
class Reconciled:
    """What :func:`reconcile` decided."""

    offered: list[dict[str, Any]] = field(default_factory=list)
    """Tool definitions to offer (the approved version of each)."""
    pins: dict[str, ToolPin] = field(default_factory=dict)
    """The pins as they should be stored (a tool absent here is unpinned)."""
    changes: list[tuple[str, ChangeKind, bool]] = field(default_factory=list)
    """``(tool, kind, accepted)`` for each change seen now (accepted: auto-accepted or first listing)."""


def _changed(pin: ToolPin, tool: str, definition: dict[str, Any], digest: str, now: datetime) -> ToolPin:
    return replace(pin, tool=tool, proposed_digest=digest, proposed=definition, changed_at=now)


def reconcile(
    listed: list[dict[str, Any]], pins: dict[str, ToolPin], *, auto_accept: bool, now: datetime
) -> Reconciled:
    """Decide what is offered from ``listed`` (wire tools) given the stored ``pins`` (see the module docstring)."""
    out = Reconciled()
    first = not pins
    seen: set[str] = set()
    for tool in listed:
        name = str(tool.get("name") or "")
        if not name or name in seen:
            continue
        seen.add(name)
        definition = definition_of(tool)
        digest = digest_of(definition)
        pin = pins.get(name) or ToolPin(tool=name, digest=None, definition=None)
        if pin.digest == digest:
            out.pins[name] = replace(pin, proposed_digest=None, proposed=None)
            out.offered.append(tool)
            continue
        kind: ChangeKind = "added" if pin.digest is None else "changed"
        accept = first or auto_accept
        if pin.proposed_digest != digest:
            out.changes.append((name, kind, accept))
        if accept:
            out.pins[name] = ToolPin(tool=name, digest=digest, definition=definition, changed_at=now)
            out.offered.append(tool)
            continue
        held = pin if pin.proposed_digest == digest else _changed(pin, name, definition, digest, now)
        out.pins[name] = held
        if kind == "changed" and compatible(pin.definition, definition) and pin.definition is not None:
            out.offered.append({**tool, **pin.definition})  # the approved words stay in service
    for name, pin in pins.items():
        if name in seen or pin.digest is None:
            continue  # a never-approved tool that went away is simply forgotten
        if pin.proposed_digest != REMOVED:
            out.changes.append((name, "removed", auto_accept))
        if not auto_accept:
            out.pins[name] = replace(pin, proposed_digest=REMOVED, proposed=None, changed_at=now)
    return out


__all__ = ["REMOVED", "ChangeKind", "Reconciled", "ToolPin", "compatible", "definition_of", "digest_of", "reconcile"]
