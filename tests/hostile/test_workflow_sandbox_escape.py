"""Probe: BPMN scripts cannot escape the sandbox or exhaust the process (issue 11, "workflow expression sandbox").

Scripts and expressions are evaluated by simpleeval with Forecourt's configuration. Known escapes from Python
expression sandboxes (dunder walks, format-string attribute access, method references, generator frames) are
each refused, at upload and at run time; resource attacks (huge strings, quadratic sums, comprehensions of
large values, deep numbers) are stopped before they cost more than a bounded amount.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecourt.adapters.workflow.expressions import SandboxEnvironment, UnsafeExpression, compile_checked

ESCAPES = [
    "().__class__.__bases__[0].__subclasses__()",
    "''.__class__.__mro__[1].__subclasses__()",
    "lead.__class__",
    "lead.get.__self__",
    "lead.get.__globals__",
    "str.__dict__",
    "len.__self__",
    "'{0.__class__}'.format(lead)",
    "'{x.__init__.__globals__}'.format_map({'x': lead})",
    "f'{lead.__class__}'",
    "f'{lead!r:>99999999}'",
    "(x for x in []).gi_frame.f_globals",
    "[x for x in []].__class__",
    "getattr(lead, '__class__')",
    "vars(lead)",
    "globals()",
    "locals()",
    "__builtins__",
    "_fc",
    "type(lead)",
    "open('/etc/passwd').read()",
    "__import__('os').system('id')",
    "exec('1')",
    "eval('1')",
    "compile('1', 'x', 'eval')",
    "lambda: 1",
    "import os",
    "from os import system",
    "lead.update({'a': 1})",
    "lead.pop('id')",
    "lead.setdefault('a', 1)",
    "str.join(',', ['a'])",
    "dict.fromkeys(range(10))",
    "now_iso.__code__",
    "add_business_minutes.__globals__['helpers']",
    "2 ** 10000",
    "1 << 100000",
    "~0",
    "lead | lead",
]


def _env() -> SandboxEnvironment:
    return SandboxEnvironment(lambda: "2026-03-02T15:00:00+00:00")


@pytest.mark.parametrize("source", ESCAPES)
def test_an_escape_attempt_is_refused_at_upload_and_at_run_time(source: str) -> None:
    with pytest.raises(UnsafeExpression):
        compile_checked(source, "exec")
    data: dict[str, Any] = {"lead": {"id": "L1"}}
    with pytest.raises((UnsafeExpression, NameError, SyntaxError)):
        _env().execute(f"result = {source}" if "import" not in source else source, data)
    assert "result" not in data


RESOURCE_ATTACKS = [
    "s = 'x' * 4000000000",
    "t = ['x' * 100000 for i in list('y' * 9000)]",
    "l = [1] * 50000\nt = sum([l] * 50000, [])",
    "s = 'abcdefghij'\n" + "s = s + s\n" * 20,
    "n = 2\n" + "n = n * n\n" * 12,
    "n = 10\nn *= n\nn *= n\nn *= n\nn *= n\nn *= n\nn *= n\nn *= n\nn *= n\nn *= n",
    "d = {i: 'x' * 1000 for i in list('y' * 9999)}",
    "s = f'{x:>999999}'",
    "s = '%0999999d' % x",
    "s = str(10 ** 5000)",
    "l = [1] * 50000\nt = [l for i in list('y' * 100)]\nr = [1] * 50000 in t",
    "s = str([[1] * 50000] * 100)",
    "s = f'{[[1] * 50000] * 100}'",
]


@pytest.mark.parametrize("script", RESOURCE_ATTACKS)
def test_a_script_that_would_build_without_bound_is_stopped(script: str) -> None:
    with pytest.raises(UnsafeExpression):
        _env().execute(script, {"x": 1})


def test_what_workflows_really_do_still_works() -> None:
    data: dict[str, Any] = {"lead": {"id": "L1", "score": 4, "tags": ["hot", "suv"]}, "artifacts": {}}
    _env().execute(
        "n = len(lead['tags'])\n"
        "total = sum([1, 2, 3])\n"
        "if lead['score'] >= 3 and 'hot' in lead['tags']:\n"
        "    priority = 'high'\n"
        "else:\n"
        "    priority = 'normal'\n"
        "n += 1\n"
        "artifacts['summary'] = f\"{lead['id'].lower()}: {n:>3} {priority}\"\n"
        "picked = [t.upper() for t in lead['tags'] if t.startswith('s')]",
        data,
    )
    assert data["artifacts"]["summary"] == "l1:   3 high"
    assert data["total"] == 6
    assert data["picked"] == ["SUV"]
