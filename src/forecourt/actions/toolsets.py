"""What an MCP caller is offered: tool names (canonical or LLM-safe) and role toolsets.

**Names.** Canonical tool names are the ones the specs give: AutomotiveMCP's ``domain.verb_object``
(``inventory.search``, ``deals.request_trade_value``) and seed 001's action names (``vertex.invokeModel``).
Forecourt's own additions are named in snake case (``aap_inventory_search``, ``find_tools``), which is already
LLM-safe. Many model APIs accept only ``[A-Za-z0-9_-]{1,64}`` as function names, so a host may ask for
``/mcp?names=llm`` (or a member may be set to ``tool_names: llm``): every tool is then listed under
:func:`llm_name` of its canonical name, matching ``^[a-z][a-z0-9_]{0,63}$``. ``tools/call`` accepts both forms
in either mode. This module holds the one mapping rule.

**Toolsets.** A member may have a role toolset (``Member.toolset``, or its API key's), and a company policy may
name toolsets (``Policy.toolsets``). :func:`offered` is the one rule that combines them: a tool is offered when
it is in the member's own toolset (if it has one) and, for every policy that names toolsets, in at least one of
them. So a policy's toolsets are what a member without a toolset is offered, and a member's toolset narrows
them further; ``tools/list`` shows the offered tools among those the gateway lets the member call. A toolset
shapes what is *offered* (a model's context), not what is *permitted*: policy actions, scopes and
``allowed_tools`` decide that, on every door. Overlapping
tools are listed once per toolset: ``inventory.search`` (with its free-text ``query``) instead of
``knowledge.search_inventory`` and ``aap_inventory_search``; ``dealer.information`` instead of
``aap_dealer_information``. The AAP skills stay in the catalogue (A2A door, ``buyer`` toolset).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Literal

from forecourt.actions.base import Action
from forecourt.domain.tenancy import TOOLSET_NAMES, Policy

NameMode = Literal["canonical", "llm"]
LLM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_INVALID = re.compile(r"[^a-z0-9_]+")

TOOLSETS: dict[str, tuple[str, ...]] = {
    "crm": (
        "leads.*",
        "customers.*",
        "consent.*",
        "service.book_appointment",
        "service.get_appointment",
        "service.list_appointments",
        "service.update_appointment",
        "inventory.search",
        "inventory.get",
        "dealer.information",
        "deals.request_trade_value",
        "approvals.get",
    ),
    "service": ("service.*", "consent.*", "customers.get", "customers.list", "dealer.information", "approvals.get"),
    "inventory": (
        "inventory.*",
        "knowledge.query",
        "knowledge.search_inventory",
        "dealer.information",
        "events.list",
    ),
    "models": (
        "model.invoke",
        "vertex.*",
        "nvidia.*",
        "openai.*",
        "anthropic.*",
        "huggingface.*",
        "embedding.create",
        "knowledge.query",
    ),
    "workflows": ("workflow.*", "approvals.get"),
    "buyer": ("aap.*",),
    "admin": ("*",),
}
"""Role toolsets: action-name patterns. Upstream MCP servers' tools (brought by the member's company) are in
every toolset but ``buyer``."""

assert tuple(TOOLSETS) == TOOLSET_NAMES, "the toolsets named in domain.tenancy are the ones defined here"


def llm_name(canonical: str) -> str:
    """The LLM-safe form of a tool name: ``vertex.invokeModel`` → ``vertex_invoke_model``.

    camelCase becomes snake_case, anything outside ``[a-z0-9_]`` becomes ``_`` (runs collapse), a name that
    does not start with a letter gets ``t_`` in front, and the result is cut to 64 characters.
    """
    name = _INVALID.sub("_", _CAMEL.sub("_", canonical).lower()).strip("_")
    if not name or not name[0].isalpha():
        name = f"t_{name}"
    return name[:64].rstrip("_") or "t"


def llm_names(canonical: Iterable[str]) -> dict[str, str]:
    """Canonical name → LLM-safe name for a set of tools; a clash gets ``_2``, ``_3``... in sorted order."""
    taken: dict[str, str] = {}
    result: dict[str, str] = {}
    for name in sorted(canonical):
        base = candidate = llm_name(name)
        n = 2
        while candidate in taken:
            suffix = f"_{n}"
            candidate = base[: 64 - len(suffix)] + suffix
            n += 1
        taken[candidate] = name
        result[name] = candidate
    return result


def in_toolset(action: Action, toolset: str | None) -> bool:
    """Whether ``action`` is offered in ``toolset`` (``None`` or an unknown name: every tool)."""
    patterns = TOOLSETS.get(toolset) if toolset else None
    if patterns is None:
        return True
    if action.owner_company_id is not None:
        return toolset != "buyer"
    return any(fnmatchcase(action.name, p) for p in patterns)


def offered(action: Action, own: str | None, policies: Sequence[Policy]) -> bool:
    """Whether ``action`` is offered to a member whose own toolset is ``own`` under the company's ``policies``.

    The one rule: in the member's (or its key's) toolset, and in one of the toolsets of every policy that names
    any. No toolset anywhere: every tool. Permission is the gateway's decision, made separately.
    """
    if not in_toolset(action, own):
        return False
    return all(any(in_toolset(action, name) for name in p.toolsets) for p in policies if p.toolsets)


TOOL_BUDGET_TOKENS = 8_000
"""The most of a model's context a role toolset's ``tools/list`` may take, upstream tools included."""
BYTES_PER_TOKEN_FLOOR = 3
"""Bytes of compact tool-definition JSON per token, at least (Forecourt's own: 4.1 to 4.3 in ``cl100k_base`` and
``o200k_base``): a listing of ``n`` bytes is taken as ``n / 3`` tokens, so no tokenizer is needed at run time."""


def budgeted(own: str | None, policies: Sequence[Policy]) -> bool:
    """Whether the tool budget binds a caller: its offer is shaped by a role toolset other than ``admin``.

    ``admin`` (and no toolset at all) means every tool, which no budget can hold; such a caller gets
    ``find_tools`` only past the tool-count threshold.
    """
    if own:
        return own in TOOLSETS and own != "admin"
    named = [p.toolsets for p in policies if p.toolsets]
    return bool(named) and all("admin" not in names for names in named)


def upstreams_fit(listing_bytes: int) -> bool:
    """Whether a listing of ``listing_bytes`` (compact JSON, upstream tools included) stays within the budget."""
    return listing_bytes <= TOOL_BUDGET_TOKENS * BYTES_PER_TOKEN_FLOOR


def name_mode(query_value: str | None, member_setting: str | None) -> NameMode:
    """The naming mode of a request: ``?names=`` wins over the member's setting; canonical by default."""
    value = query_value or member_setting
    return "llm" if value == "llm" else "canonical"
