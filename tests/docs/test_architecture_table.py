"""docs/architecture.md's "may import" table says what the import-linter contracts in pyproject.toml allow.

The table has one row per module or group of modules of ``forecourt``, numbered by its layer in the layers contract
(1: the top); "may import" is "the layers below", "the layers below but not `x`, `y`", "nothing of Forecourt" or
"nothing of Forecourt but `x`". What a module may import by the contracts: every module of the layers below its own
(of its own too, when the layer's siblings are joined by ``:``), less what a forbidden contract keeps it from.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "forecourt"


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _child(module: str) -> str | None:
    """``forecourt.x`` → ``x``; ``None`` for anything deeper (the table speaks of whole modules and packages)."""
    parts = module.split(".")
    assert parts[0] == PACKAGE, module
    return parts[1] if len(parts) == 2 else None


def _layers() -> list[tuple[set[str], bool]]:
    """The layers contract's layers, top first: (names, whether the siblings may not import each other)."""
    (layers,) = [c for c in _contracts() if c["type"] == "layers" and c.get("containers") == [PACKAGE]]
    return [({name.strip().strip("()") for name in re.split(r"[|:]", raw)}, ":" not in raw) for raw in layers["layers"]]


def _allowed_by_contracts() -> dict[str, set[str]]:
    layers = _layers()
    allowed: dict[str, set[str]] = {}
    for index, (names, independent) in enumerate(layers):
        below = set().union(*(lower for lower, _ in layers[index + 1 :]))
        for name in names:
            allowed[name] = below | (set() if independent else names - {name})
    for contract in _contracts():
        if contract["type"] != "forbidden":
            continue
        for source in filter(None, map(_child, contract["source_modules"])):
            allowed[source] -= set(filter(None, map(_child, contract["forbidden_modules"])))
    return allowed


def _table() -> list[tuple[int, list[str], str]]:
    """(layer, modules, "may import") of every row of the table."""
    section = DOC.read_text(encoding="utf-8").split("## Where each kind of code lives", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not re.match(r"^\| \d+ \|", line):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"a row of four cells, without ' | ' inside one: {line}"
        layer, modules, _, may_import = cells
        rows.append(
            (int(layer), [m.rstrip("/").removesuffix(".py") for m in re.findall(r"`([^`]+)`", modules)], may_import)
        )
    return rows


def _may_import(cell: str, layer: int) -> set[str]:
    """What a "may import" cell of a row of ``layer`` (1: the top) names."""
    head, _, but_not = cell.partition("but not")
    names = set(re.findall(r"`([^`]+)`", head))
    if "the layers below" in head:
        names |= set().union(*(lower for lower, _ in _layers()[layer:]))
    return names - set(re.findall(r"`([^`]+)`", but_not))


def test_every_module_of_the_layers_contract_has_one_row_of_the_table_in_its_own_layer() -> None:
    layers = _layers()
    rows = _table()
    listed = [module for _, modules, _ in rows for module in modules]
    assert sorted(listed) == sorted(set().union(*(names for names, _ in layers))), "one row for each module"
    misplaced = [(layer, m) for layer, modules, _ in rows for m in modules if m not in layers[layer - 1][0]]
    assert not misplaced, f"rows numbered with another layer than the contract's: {misplaced}"
    assert [layer for layer, _, _ in rows] == sorted(layer for layer, _, _ in rows), "rows run from the top down"


def test_each_row_of_the_table_may_import_what_the_import_contracts_allow() -> None:
    allowed = _allowed_by_contracts()
    wrong = {
        module: {"table": sorted(said), "contracts": sorted(allowed[module])}
        for layer, modules, cell in _table()
        for module in modules
        if (said := _may_import(cell, layer)) != allowed[module]
    }
    assert not wrong, f"docs/architecture.md's table and pyproject.toml's contracts disagree: {wrong}"


def test_the_table_reader_takes_the_layers_below_less_the_modules_named_after_but_not() -> None:
    bottom = _layers()[-1][0]  # the layer below the last but one
    assert _may_import("the layers below but not `errors`", len(_layers()) - 1) == bottom - {"errors"}
    assert _may_import("nothing of Forecourt but `errors`", 1) == {"errors"}
    assert _may_import("nothing of Forecourt", 1) == set()
