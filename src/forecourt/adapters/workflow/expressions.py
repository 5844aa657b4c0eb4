"""A sandboxed Python subset for BPMN scripts and expressions.

SpiffWorkflow's default script engine runs ``eval``/``exec`` on the definition's text, and definitions are
uploaded by company administrators. On a shared gateway that would be code execution for any tenant, so
every script and expression is parsed, checked against an allow-list of syntax, and compiled with no
builtins. What is allowed: names (not starting with ``_``), literals, arithmetic and comparisons, boolean
logic, conditional expressions, subscripts and slices, ``if`` statements, assignments, f-strings with short
format specs, comprehensions with a single ``for`` (not nested), calls of the functions in
:data:`SAFE_FUNCTIONS` and of a few read-only methods (``get``, ``keys``, ``lower``...). Not allowed: imports,
attribute access other than those methods, loops, ``def``/``lambda``/``class``, ``**``, bit shifts and
``%``-formatting of strings. Every operator and call result passes a size check, so a script cannot
double a string forty times and exhaust memory.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from types import CodeType
from typing import Any, Literal

from SpiffWorkflow.bpmn.script_engine import PythonScriptEngine  # type: ignore[import-untyped]
from SpiffWorkflow.bpmn.script_engine.python_environment import (  # type: ignore[import-untyped]
    BasePythonScriptEngineEnvironment,
)

from forecourt.adapters.workflow import helpers

MAX_SOURCE = 8000
MAX_ITEMS = 100_000
MAX_INT_BITS = 256

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_UNARY = (ast.Not, ast.USub, ast.UAdd)
_STATEMENTS = (ast.Module, ast.Expression, ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.Pass)
_EXPRESSIONS = (
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.Compare,
    ast.IfExp,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Subscript,
    ast.Slice,
    ast.Call,
    ast.keyword,
    ast.ListComp,
    ast.GeneratorExp,
    ast.DictComp,
    ast.comprehension,
    ast.Attribute,
    *_BINOPS,
    *_UNARY,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
)
_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.DictComp)
_FORMAT_SPEC = re.compile(r"^[<>^=]?[+\- ]?,?\d{0,3}(\.\d{1,2})?[bdfsx%]?$")

SAFE_METHODS = frozenset(
    {"get", "keys", "values", "items", "lower", "upper", "strip", "title", "startswith", "endswith", "split"}
)
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
    "sum": sum,
    "sorted": sorted,
    "any": any,
    "all": all,
    "list": list,
    "dict": dict,
    "add_business_minutes": helpers.add_business_minutes,
    "reminder_time": helpers.reminder_time,
    "format_local": helpers.format_local,
}
_RESERVED = frozenset({*SAFE_FUNCTIONS, "now_iso"})


class UnsafeExpression(ValueError):
    """A script or expression uses syntax outside the sandbox (raised at upload and at run time)."""


def _check_size(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise UnsafeExpression("integer too large")
    if isinstance(value, str | bytes | list | tuple | dict | set) and len(value) > MAX_ITEMS:
        raise UnsafeExpression("value too large")
    return value


def _mod(left: Any, right: Any) -> Any:
    if isinstance(left, str | bytes):
        raise UnsafeExpression("%-formatting is not allowed; use an f-string")
    return left % right


def _mul(left: Any, right: Any) -> Any:
    # Check the size before multiplying: "x" * 4_000_000_000 would allocate first and check later.
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | bytes | list | tuple) and isinstance(count, int) and len(seq) * count > MAX_ITEMS:
            raise UnsafeExpression("value too large")
    return left * right


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.comprehension_depth = 0

    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, _STATEMENTS + _EXPRESSIONS):
            raise UnsafeExpression(f"{type(node).__name__} is not allowed")
        super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("_"):
            raise UnsafeExpression("names starting with an underscore are not allowed")
        if isinstance(node.ctx, ast.Store) and node.id in _RESERVED:
            raise UnsafeExpression(f"{node.id} is a reserved name")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # Only reached for attributes that are not the function of a call (see visit_Call).
        raise UnsafeExpression("attribute access is not allowed")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr not in SAFE_METHODS:
                raise UnsafeExpression(f"method {func.attr} is not allowed")
            self.visit(func.value)
        elif isinstance(func, ast.Name):
            if func.id not in _RESERVED:
                raise UnsafeExpression(f"function {func.id} is not allowed")
        else:
            raise UnsafeExpression("only named functions may be called")
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
        if self.comprehension_depth or len(node.generators) != 1:
            raise UnsafeExpression("only one, non-nested for is allowed in a comprehension")
        self.comprehension_depth += 1
        try:
            self.generic_visit(node)
        finally:
            self.comprehension_depth -= 1

    visit_ListComp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming
    visit_GeneratorExp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming
    visit_DictComp = _comprehension  # noqa: N815 - ast.NodeVisitor's naming


class _Guard(ast.NodeTransformer):
    """Wraps every operator and call result in a size check and routes ``%`` through a safe function."""

    def _wrap(self, node: ast.expr) -> ast.expr:
        return ast.Call(func=ast.Name(id="__fc_check", ctx=ast.Load()), args=[node], keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        special = {ast.Mod: "__fc_mod", ast.Mult: "__fc_mul"}.get(type(node.op))
        if special is not None:
            call = ast.Call(func=ast.Name(id=special, ctx=ast.Load()), args=[node.left, node.right], keywords=[])
            return self._wrap(call)
        return self._wrap(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.generic_visit(node)
        if isinstance(node.op, ast.Mod):
            raise UnsafeExpression("%= is not allowed")
        target = node.target
        if not isinstance(target, ast.Name):
            raise UnsafeExpression("augmented assignment needs a plain name")
        value = ast.BinOp(left=ast.Name(id=target.id, ctx=ast.Load()), op=node.op, right=node.value)
        return ast.Assign(targets=[ast.Name(id=target.id, ctx=ast.Store())], value=self.visit_BinOp(value))

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        return self._wrap(node)


@lru_cache(maxsize=512)
def compile_checked(source: str, mode: Literal["eval", "exec"]) -> CodeType:
    """Check ``source`` against the sandbox and compile it.

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
    guarded = ast.fix_missing_locations(_Guard().visit(tree))
    # "<string>" is the file name SpiffWorkflow looks for in tracebacks to report the failing line.
    return compile(guarded, "<string>", mode)


def _globals(now_iso: Callable[[], str]) -> dict[str, Any]:
    return {
        "__builtins__": {},
        "__fc_check": _check_size,
        "__fc_mod": _mod,
        "__fc_mul": _mul,
        "now_iso": now_iso,
        **SAFE_FUNCTIONS,
    }


class SandboxEnvironment(BasePythonScriptEngineEnvironment):  # type: ignore[misc]
    """A SpiffWorkflow script environment that evaluates only the sandboxed subset."""

    def __init__(self, now_iso: Callable[[], str]) -> None:
        super().__init__({})
        self._now_iso = now_iso

    def evaluate(self, expression: str, context: Mapping[str, Any], external_context: Any = None) -> Any:
        """Evaluate ``expression`` with the task data as variables."""
        code = compile_checked(expression, "eval")
        env = {**dict(context), **dict(external_context or {}), **_globals(self._now_iso)}
        return eval(code, env)  # noqa: S307 - compiled from the checked, guarded tree above

    def execute(self, script: str, context: dict[str, Any], external_context: Any = None) -> bool:
        """Run ``script``; the variables it assigns become task data."""
        code = compile_checked(script, "exec")
        base = _globals(self._now_iso)
        env = {**dict(external_context or {}), **context, **base}
        exec(code, env)  # noqa: S102 - compiled from the checked, guarded tree above
        for key, value in env.items():
            if key in base and base[key] is value:
                continue
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
