"""BPMN scripts and expressions, evaluated by ``simpleeval`` (never ``eval``/``exec``).

SpiffWorkflow's default script engine runs ``eval``/``exec`` on the definition's text, and definitions are
uploaded by company administrators: on a shared gateway that would be code execution for any tenant. Every
expression here is evaluated by ``simpleeval`` (a maintained AST evaluator: no builtins, no dunder or
``func_`` attributes, bounded strings, comprehensions and numbers), configured with only the operators,
functions and per-type methods below. The few statements a script may hold (assignments to names or to
subscripts, ``+=``-style updates, ``if``/``else``, ``pass``) are run by :func:`_run`, each expression in them by
the same evaluator.

:func:`compile_checked` checks a source when a definition is uploaded, so a refused construct is reported at
upload time rather than mid-run: imports, ``def``/``lambda``/``class``, loops, ``with``/``try``, ``**``, bit
operations, attribute access other than the allowed methods, names starting with ``_``, argument unpacking,
nested comprehensions, long format specs and ``%``-formatting of strings are all refused.
"""

from __future__ import annotations

import ast
import operator as op
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Literal

from simpleeval import (  # type: ignore[import-untyped]
    DISALLOW_FUNCTIONS,
    EvalWithCompoundTypes,
    InvalidExpression,
    NameNotDefined,
    safe_add,
    safe_mult,
)
from SpiffWorkflow.bpmn.script_engine import PythonScriptEngine  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.script_engine.python_environment import (  # type: ignore[import-untyped]
    BasePythonScriptEngineEnvironment,
)

from forecourt import caching
from forecourt.adapters.workflow import helpers
from forecourt.adapters.workflow.errors import UnsafeExpression

MAX_SOURCE = 8000
MAX_ITEMS = 100_000
MAX_INT_BITS = 256
MAX_TOTAL_ITEMS = 2_000_000
"""The total *weight* of the strings and containers one script or expression may build: characters, plus each
container's items counted as deep as they go (``[l] * 1000`` weighs a thousand times ``l``). Every operation on
what a script built (comparison, ``in``, ``str``) then costs at most this much, however it was assembled."""
_SIZED = (str, bytes, list, tuple, dict, set)

_FORMAT_SPEC = re.compile(r"^[<>^=]?[+\- ]?,?\d{0,3}(\.\d{1,2})?[bdfsx%]?$")
SAFE_METHODS = frozenset(
    {"get", "keys", "values", "items", "lower", "upper", "strip", "title", "startswith", "endswith", "split"}
)
_ALLOWED_ATTRS: dict[type, set[str]] = {
    dict: {"get", "keys", "values", "items"},
    str: {"lower", "upper", "strip", "title", "startswith", "endswith", "split"},
}
SAFE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "round": round,
    "min": min,
    "max": max,
    "abs": abs,
    "sum": lambda values, start=0: _sum_numbers(values, start),
    "sorted": sorted,
    "any": any,
    "all": all,
    "list": list,
    "dict": dict,
    "add_business_minutes": helpers.add_business_minutes,
    "reminder_time": helpers.reminder_time,
    "format_local": helpers.format_local,
}
_RESERVED = frozenset({*SAFE_FUNCTIONS, "now_iso", "True", "False", "None"})


def _mod(left: Any, right: Any) -> Any:
    if isinstance(left, str | bytes):
        raise UnsafeExpression("%-formatting is not allowed; use an f-string")
    return left % right


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: safe_add,
    ast.Sub: op.sub,
    ast.Mult: safe_mult,
    ast.Div: op.truediv,
    ast.FloorDiv: op.floordiv,
    ast.Mod: _mod,
    ast.Eq: op.eq,
    ast.NotEq: op.ne,
    ast.Gt: op.gt,
    ast.Lt: op.lt,
    ast.GtE: op.ge,
    ast.LtE: op.le,
    ast.Not: op.not_,
    ast.USub: op.neg,
    ast.UAdd: op.pos,
    ast.In: lambda x, y: op.contains(y, x),
    ast.NotIn: lambda x, y: not op.contains(y, x),
    ast.Is: lambda x, y: x is y,
    ast.IsNot: lambda x, y: x is not y,
}


def _sum_numbers(values: Any, start: Any = 0) -> Any:
    """``sum`` of numbers only (summing lists or strings is quadratic: a cheap way to burn CPU)."""
    items = list(values)
    if not all(isinstance(v, int | float) for v in [start, *items]):
        raise UnsafeExpression("sum adds numbers only")
    return sum(items, start)


def _check_size(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise UnsafeExpression("integer too large")
    if isinstance(value, str | bytes | list | tuple | dict | set) and len(value) > MAX_ITEMS:
        raise UnsafeExpression("value too large")
    return value


class _Evaluator(EvalWithCompoundTypes):  # type: ignore[misc]
    """simpleeval with Forecourt's operators, functions, methods, and a size check on every value."""

    def __init__(self, names: dict[str, Any], now_iso: Callable[[], str]) -> None:
        functions = {**SAFE_FUNCTIONS, "now_iso": now_iso}
        super().__init__(operators=dict(_OPERATORS), functions=functions, names=names, allowed_attrs=_ALLOWED_ATTRS)
        self.functions = functions  # without the tuple/set constructors simpleeval adds
        self.budget = MAX_TOTAL_ITEMS
        self._weights: dict[int, int] = {}
        self._alive: list[Any] = []  # keeps weighed objects alive, so their ids stay theirs

    def _check_disallowed_items(self, item: Any) -> None:
        # simpleeval walks every container on every step (quadratic on shared references); nothing here can
        # reach a module or a forbidden function, so the value itself is what needs checking.
        if isinstance(item, ModuleType) or (callable(item) and item in DISALLOW_FUNCTIONS):
            raise UnsafeExpression("forbidden value")

    def weight(self, value: Any) -> int:
        """Characters, or items counted as deep as they go (shared items once per reference)."""
        if isinstance(value, str | bytes):
            return len(value)
        if not isinstance(value, _SIZED):
            return 1
        known = self._weights.get(id(value))
        if known is not None:
            return known
        if len(value) > MAX_ITEMS:
            raise UnsafeExpression("value too large")
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = len(value) + sum(self.weight(item) for item in items)
        self._weights[id(value)] = total
        self._alive.append(value)
        return total

    def _eval(self, node: ast.AST) -> Any:
        value = _check_size(super()._eval(node))
        if isinstance(value, _SIZED) and not isinstance(node, ast.Name):
            self.budget -= self.weight(value)
            if self.budget < 0:
                raise UnsafeExpression("the script builds too much")
        return value

    def _eval_formattedvalue(self, node: ast.FormattedValue) -> Any:
        if node.format_spec is not None:
            spec = self._eval(node.format_spec)
            if not _FORMAT_SPEC.match(str(spec)):
                raise UnsafeExpression("this format spec is not allowed")
        return super()._eval_formattedvalue(node)


# ------------------------------------------------------------------ upload-time check

_STATEMENTS = (ast.Module, ast.Expression, ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.Pass)
_SUPPORTED = frozenset(_Evaluator({}, str).nodes) | {
    ast.Load,
    ast.Store,
    ast.comprehension,
    ast.And,
    ast.Or,
    *_OPERATORS,
}
_SUPPORTED -= {ast.Import, ast.Assign, ast.AugAssign, ast.Expr}


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.comprehensions = 0

    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, _STATEMENTS) and type(node) not in _SUPPORTED:
            raise UnsafeExpression(f"{type(node).__name__} is not allowed")
        super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("_"):
            raise UnsafeExpression("names starting with an underscore are not allowed")
        if isinstance(node.ctx, ast.Store) and node.id in _RESERVED:
            raise UnsafeExpression(f"{node.id} is a reserved name")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        raise UnsafeExpression("attribute access is not allowed")  # methods are checked in visit_Call

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name) or isinstance(node.op, ast.Mod):
            raise UnsafeExpression("only +=, -=, *=, /= and //= on a plain name are allowed")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in SAFE_METHODS:
            self.visit(func.value)
        elif not (isinstance(func, ast.Name) and func.id in _RESERVED):
            raise UnsafeExpression("only the allowed functions and methods may be called")
        for arg in [*node.args, *node.keywords]:
            if isinstance(arg, ast.Starred) or (isinstance(arg, ast.keyword) and arg.arg is None):
                raise UnsafeExpression("argument unpacking is not allowed")
            self.visit(arg)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        spec = node.format_spec
        if spec is not None:
            parts = spec.values if isinstance(spec, ast.JoinedStr) else [spec]
            text = "".join(p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str))
            if len(parts) != 1 or not _FORMAT_SPEC.match(text):
                raise UnsafeExpression("this format spec is not allowed")
        self.visit(node.value)

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> None:
        if self.comprehensions or len(node.generators) != 1:
            raise UnsafeExpression("only one, non-nested for is allowed in a comprehension")
        self.comprehensions += 1
        try:
            self.generic_visit(node)
        finally:
            self.comprehensions -= 1

    visit_ListComp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming
    visit_GeneratorExp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming
    visit_DictComp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming


@caching.memo("adapters.workflow.checked_sources", 512)
def compile_checked(source: str, mode: Literal["eval", "exec"]) -> ast.Module | ast.Expression:
    """Parse ``source`` and check it against the sandbox (the tree is what :class:`SandboxEnvironment` runs).

    Raises:
        UnsafeExpression: The source is too long, does not parse, or uses syntax outside the sandbox.
    """
    if len(source) > MAX_SOURCE:
        raise UnsafeExpression("script too long")
    try:
        tree = ast.parse(source.strip() if mode == "eval" else source, mode=mode)
    except SyntaxError as exc:
        raise UnsafeExpression(f"syntax error on line {exc.lineno}") from None
    _Checker().visit(tree)
    assert isinstance(tree, ast.Module | ast.Expression)
    return tree


# ------------------------------------------------------------------ running


def _assign(target: ast.expr, value: Any, ev: _Evaluator, names: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        names[target.id] = value
        return
    if isinstance(target, ast.Subscript):
        container = ev.eval("", previously_parsed=target.value)
        if not isinstance(container, dict | list):
            raise UnsafeExpression("only dictionary and list items may be assigned")
        container[ev.eval("", previously_parsed=target.slice)] = value
        return
    raise UnsafeExpression("only names and subscripts may be assigned")


def _run(statements: list[ast.stmt], ev: _Evaluator, names: dict[str, Any]) -> None:
    for stmt in statements:
        try:
            _step(stmt, ev, names)
        except Exception as exc:
            if not hasattr(exc, LINE_ATTR):
                setattr(exc, LINE_ATTR, stmt.lineno)  # the innermost statement names the line
            raise


LINE_ATTR = "forecourt_script_line"


def _step(stmt: ast.stmt, ev: _Evaluator, names: dict[str, Any]) -> None:
    if isinstance(stmt, ast.Expr):
        ev.eval("", previously_parsed=stmt.value)
    elif isinstance(stmt, ast.Assign):
        value = ev.eval("", previously_parsed=stmt.value)
        for target in stmt.targets:
            _assign(target, value, ev, names)
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        current = ev.eval("", previously_parsed=ast.Name(id=stmt.target.id, ctx=ast.Load()))
        operation = _OPERATORS[type(stmt.op)]
        names[stmt.target.id] = _check_size(operation(current, ev.eval("", previously_parsed=stmt.value)))
    elif isinstance(stmt, ast.If):
        _run(stmt.body if ev.eval("", previously_parsed=stmt.test) else stmt.orelse, ev, names)
    elif not isinstance(stmt, ast.Pass):
        raise UnsafeExpression(f"{type(stmt).__name__} is not allowed")


def _translated(exc: InvalidExpression) -> Exception:
    if isinstance(exc, NameNotDefined):
        return NameError(f"name '{exc.name}' is not defined")
    return UnsafeExpression(type(exc).__name__)


class SandboxEnvironment(BasePythonScriptEngineEnvironment):  # type: ignore[misc]
    """A SpiffWorkflow script environment that evaluates only the sandboxed subset, with simpleeval."""

    def __init__(self, now_iso: Callable[[], str]) -> None:
        super().__init__({})
        self._now_iso = now_iso

    def evaluate(self, expression: str, context: Mapping[str, Any], external_context: Any = None) -> Any:
        """Evaluate ``expression`` with the task data as variables."""
        tree = compile_checked(expression, "eval")
        assert isinstance(tree, ast.Expression)
        names = {**dict(context), **dict(external_context or {})}
        try:
            return _Evaluator(names, self._now_iso).eval(expression, previously_parsed=tree.body)
        except InvalidExpression as exc:
            raise _translated(exc) from None

    def execute(self, script: str, context: dict[str, Any], external_context: Any = None) -> bool:
        """Run ``script``; the variables it assigns become task data."""
        tree = compile_checked(script, "exec")
        assert isinstance(tree, ast.Module)
        names = {**dict(external_context or {}), **context}
        try:
            _run(tree.body, _Evaluator(names, self._now_iso), names)
        except InvalidExpression as exc:
            translated = _translated(exc)
            setattr(translated, LINE_ATTR, getattr(exc, LINE_ATTR, 0))
            raise translated from None
        for key, value in names.items():
            if not key.startswith("_") and not callable(value):
                context[key] = value
        return True

    def call_service(self, context: Any, **kwargs: Any) -> Any:
        """Service tasks never call out from inside the engine (see ``engine.AsyncServiceTask``)."""
        raise NotImplementedError("service calls are made by the runner, not the script engine")


class SandboxScriptEngine(PythonScriptEngine):  # type: ignore[misc]
    """The script engine every Forecourt workflow runs with."""

    def __init__(self, now_iso: Callable[[], str]) -> None:
        super().__init__(environment=SandboxEnvironment(now_iso))

    def validate(self, expression: str) -> None:
        """Reject anything outside the sandbox (SpiffWorkflow calls this while parsing)."""
        compile_checked(expression, "exec")

    def get_error_line_number_and_content(self, script: str, err: Exception) -> tuple[int, str]:
        """The script line a failure happened on (no Python frames to read it from: nothing is ``exec``-ed)."""
        line = getattr(err, LINE_ATTR, 0) or getattr(err.__cause__, LINE_ATTR, 0)
        if isinstance(err, SyntaxError) and err.lineno:
            line = err.lineno
        lines = script.splitlines()
        return line, lines[line - 1] if 0 < line <= len(lines) else ""
