"""Approval rules (a policy's ``require_approval``) and approval records: a person signs off an agent's call."""

from __future__ import annotations

from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ApprovalOp = Literal["always", "eq", "ne", "gt", "gte", "lt", "lte", "in"]
ApprovalStatus = Literal["pending", "approved", "rejected", "used"]
_MISSING = object()


def _at(payload: Any, path: str) -> Any:
    """The value at a dotted ``path`` of ``payload`` (``_MISSING`` when absent)."""
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _compare(op: ApprovalOp, left: Any, right: Any) -> bool:
    if op == "eq":
        return bool(left == right)
    if op == "ne":
        return bool(left != right)
    if op == "in":
        return isinstance(right, list) and left in right
    if not isinstance(left, int | float) or isinstance(left, bool) or not isinstance(right, int | float):
        return False
    return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}.get(op, False)


class ApprovalRule(BaseModel):
    """``action`` (a glob) needs a person's approval when ``field`` ``op`` ``value`` holds for the call's input.

    ``op: always`` needs no field. ``field`` is a dotted path into the input (``status``, ``mileage.value``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str = Field(min_length=1, max_length=128)
    field: str | None = Field(default=None, max_length=128)
    op: ApprovalOp = "always"
    value: Any = None
    note: str = Field(default="", max_length=200)

    def matches(self, action: str, payload: Any) -> bool:
        """Whether a call of ``action`` with ``payload`` needs approval under this rule."""
        if not (self.action in ("*", action) or fnmatchcase(action, self.action)):
            return False
        if self.op == "always":
            return True
        if not self.field:
            return False
        left = _at(payload, self.field)
        return left is not _MISSING and _compare(self.op, left, self.value)

    def describe(self) -> str:
        """The rule as a person reads it."""
        if self.op == "always":
            return f"{self.action} always"
        return f"{self.action} when {self.field} {self.op} {self.value!r}"


class Approval(BaseModel):
    """A call waiting for (or given) a person's approval.

    ``held`` keeps what is needed to run the call once it is approved (its full input, where it was addressed,
    and the authority of the caller who made it); it is erased when the call runs or is rejected. ``result`` is
    the held call's answer once it ran on approval: ``{"result_type", "output"}`` or ``{"error"}``, read by the
    caller through ``approvals.get``. Neither is shown to administrators (they see ``args_redacted``).
    """

    id: str
    company_id: str
    dealership_id: str | None
    member_id: str | None
    action: str
    args_digest: str
    args_redacted: dict[str, Any] = Field(default_factory=dict)
    rule: str = ""
    status: ApprovalStatus = "pending"
    surface: str = ""
    requested_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    comment: str = ""
    held: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    ran_at: datetime | None = None

    def admin_view(self) -> dict[str, Any]:
        """The record as an administrator sees it: the redacted arguments and how the run ended, never the held
        input or the caller's result."""
        view = self.model_dump(mode="json", exclude={"held", "result"})
        view["outcome"] = _outcome(self.result)
        return view


def _outcome(result: dict[str, Any] | None) -> str | None:
    """``ok``, the error code of a held call that ran and failed, or ``None`` before it ran."""
    if result is None:
        return None
    error = result.get("error")
    return str(error.get("code", "error")) if isinstance(error, dict) else "ok"
