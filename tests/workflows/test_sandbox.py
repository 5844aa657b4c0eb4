"""The script sandbox and the date helpers BPMN scripts may call (no database needed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from forecourt.adapters.workflow.errors import UnsafeExpression
from forecourt.adapters.workflow.expressions import SandboxEnvironment, compile_checked
from forecourt.adapters.workflow.helpers import add_business_minutes, format_local, reminder_time

LA = ZoneInfo("America/Los_Angeles")
HOURS: dict[str, Any] = {
    **{d: {"open": "09:00", "close": "20:00"} for d in ("monday", "tuesday", "wednesday", "thursday", "friday")},
    "saturday": {"open": "09:00", "close": "19:00"},
    "sunday": None,
}


def _env() -> SandboxEnvironment:
    return SandboxEnvironment(lambda: "2026-03-02T15:00:00+00:00")


def test_scripts_assign_task_data_and_can_call_the_safe_functions() -> None:
    data: dict[str, Any] = {"lead": {"id": "L1", "tags": ["a", "b"]}, "artifacts": {}}

    _env().execute(
        "n = len(lead['tags'])\n"
        "if n > 1:\n"
        "    label = f\"{lead['id']}: {n:>3}\"\n"
        "artifacts['x'] = lead.get('id').lower()\n"
        "now = now_iso()",
        data,
    )

    assert data["n"] == 2
    assert data["label"] == "L1:   2"
    assert data["artifacts"] == {"x": "l1"}
    assert data["now"] == "2026-03-02T15:00:00+00:00"
    assert "len" not in data
    assert "now_iso" not in data


def test_expressions_see_task_data() -> None:
    assert _env().evaluate("outcome == 'contacted' and score >= 3", {"outcome": "contacted", "score": 4}) is True
    assert _env().evaluate("[x for x in items if x > 1]", {"items": [1, 2, 3]}) == [2, 3]


@pytest.mark.parametrize(
    "source",
    [
        "import os",
        "__import__('os')",
        "x.__class__",
        "().__class__.__bases__[0].__subclasses__()",
        "open('/etc/passwd')",
        "eval('1')",
        "getattr(x, 'y')",
        "lambda: 1",
        "2 ** 100000",
        "1 << 100000",
        "f'{x:>999999999}'",
        "[a for a in x for b in x]",
        "[[a for a in x] for b in x]",
        "x.format(y)",
        "print(*x)",
        "def f(): pass",
        "for a in x: pass",
        "while True: pass",
        "with x: pass",
        "del x",
        "global x",
        "try:\n    pass\nexcept Exception:\n    pass",
    ],
)
def test_unsafe_syntax_is_rejected(source: str) -> None:
    with pytest.raises(UnsafeExpression):
        compile_checked(source, "exec")


def test_values_that_grow_without_bound_are_stopped() -> None:
    with pytest.raises(UnsafeExpression):
        _env().execute("s = 'x' * 4000000000", {})
    with pytest.raises(UnsafeExpression):
        _env().execute("s = 'abcdefghij'\n" + "s = s + s\n" * 20, {})
    with pytest.raises(UnsafeExpression):
        _env().execute("n = 2\n" + "n = n * n\n" * 12, {})
    with pytest.raises(UnsafeExpression):
        _env().evaluate("'%0999999d' % x", {"x": 1})  # %-formatting could pad without bound


def test_business_minutes_skip_closed_hours() -> None:
    friday_evening = datetime(2026, 3, 6, 19, 30, tzinfo=LA).isoformat()
    saturday_late = datetime(2026, 3, 7, 18, 45, tzinfo=LA).isoformat()

    assert datetime.fromisoformat(add_business_minutes(HOURS, "America/Los_Angeles", friday_evening, 60)) == datetime(
        2026, 3, 7, 9, 30, tzinfo=LA
    )
    # Sunday is closed: 30 minutes from Saturday 18:45 end on Monday 09:15.
    assert datetime.fromisoformat(add_business_minutes(HOURS, "America/Los_Angeles", saturday_late, 30)) == datetime(
        2026, 3, 9, 9, 15, tzinfo=LA
    )


def test_reminders_move_into_opening_hours_and_never_into_the_past() -> None:
    monday_0830 = datetime(2026, 3, 9, 8, 30, tzinfo=LA).isoformat()
    wednesday_1500 = datetime(2026, 3, 11, 15, 0, tzinfo=LA).isoformat()
    early_now = datetime(2026, 3, 1, 12, 0, tzinfo=LA).isoformat()

    # 24 h before Monday 08:30 is Sunday 08:30 (closed) → Saturday, 30 minutes before closing.
    assert datetime.fromisoformat(reminder_time(HOURS, "America/Los_Angeles", monday_0830, 24, early_now)) == datetime(
        2026, 3, 7, 18, 30, tzinfo=LA
    )
    assert datetime.fromisoformat(
        reminder_time(HOURS, "America/Los_Angeles", wednesday_1500, 24, early_now)
    ) == datetime(2026, 3, 10, 15, 0, tzinfo=LA)
    late_now = datetime(2026, 3, 11, 10, 0, tzinfo=LA).isoformat()
    assert reminder_time(HOURS, "America/Los_Angeles", wednesday_1500, 24, late_now) == late_now


def test_local_times_read_naturally() -> None:
    assert format_local("2026-03-03T17:30:00+00:00", "America/Los_Angeles") == "Tuesday, March 3 at 9:30 AM"
