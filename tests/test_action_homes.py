"""actions/ is the one home of every action (the rule import-linter cannot express: where a call is made)."""

from __future__ import annotations

import ast
from pathlib import Path

import forecourt

SRC = Path(forecourt.__file__).parent
# A company's upstream MCP servers' tools become actions at run time, when the hub reads their tool lists.
BUILT_ELSEWHERE = ("adapters/upstream/",)


def _builds_an_action(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "Action")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "Action")
        )
        for node in ast.walk(tree)
    )


def test_every_action_is_built_under_actions_but_the_federated_upstream_tools() -> None:
    outside = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if not str(path.relative_to(SRC)).startswith(("actions/", *BUILT_ELSEWHERE))
        and _builds_an_action(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    )
    assert not outside, f"Action(...) built outside actions/: {outside}"


def test_the_action_homes_check_sees_an_action_built_by_name_or_through_its_module() -> None:
    assert _builds_an_action(ast.parse("Action(name='x')"))
    assert _builds_an_action(ast.parse("contract.Action(name='x')"))
    assert not _builds_an_action(ast.parse("replace(action, name='x'); ExecutionAction()"))
