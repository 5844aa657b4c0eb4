"""Provenance of results: which outputs can carry third-party text, and what that text looks like.

An action's output may hold text that neither Forecourt nor the calling agent wrote: a buyer's lead message, a
customer note, a knowledge document, an upstream MCP tool's result, a model's answer. A model that reads such
text may take it for instructions (prompt injection through tool outputs, seed 004 §9). The gateway cannot tell
good text from bad, so it says where the text came from: every such result carries a *mark*
(``Outcome.metadata["provenance"]``; MCP ``_meta``, A2A artifact metadata, the REST envelope's
``result.metadata.provenance``):

``{"untrusted": true, "sources": [...], "fields": [JSON pointers of free text], "flags": [...], "delimiter": id}``

``flags`` names known injection patterns found in that text — instructions addressed to the model, hidden
Unicode (zero-width, bidirectional and tag characters), markup (HTML, script, markdown images that fetch a URL)
— each with its JSON pointer. Nothing is rewritten: the text reaches the caller exactly as stored; a host
renders the marked fields as data. ``delimiter`` is a per-result random id the MCP door puts beside each text
block (its ``_meta``), outside the text, so injected text cannot end it (surfaces/marks.py).

Which actions: an action declares it (``Action.third_party_text``: upstream tools do), or :data:`DECLARED` names
it, or its type does (every ``model.invoke`` answer is a model output).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from forecourt.contract import Action

LEAD_MESSAGE = "lead_message"
CUSTOMER_NOTE = "customer_note"
KNOWLEDGE_DOCUMENT = "knowledge_document"
UPSTREAM_TOOL_RESULT = "upstream_tool_result"
MODEL_OUTPUT = "model_output"
PEER_AGENT_OUTPUT = "peer_agent_output"

DECLARED: dict[str, tuple[str, ...]] = {
    "leads.get": (LEAD_MESSAGE, CUSTOMER_NOTE),
    "leads.list": (LEAD_MESSAGE, CUSTOMER_NOTE),
    "console.leads.show": (LEAD_MESSAGE, CUSTOMER_NOTE),
    "customers.get": (CUSTOMER_NOTE,),
    "customers.list": (CUSTOMER_NOTE,),
    "knowledge.query": (KNOWLEDGE_DOCUMENT,),
    "agents.delegate": (PEER_AGENT_OUTPUT,),
    "workflow.run": (MODEL_OUTPUT, UPSTREAM_TOOL_RESULT),
    "workflow.get": (MODEL_OUTPUT, UPSTREAM_TOOL_RESULT),
    "approvals.get": (UPSTREAM_TOOL_RESULT, MODEL_OUTPUT),
}
"""Forecourt's own actions whose outputs can carry third-party text."""
_NOT_TEXT = ("embedding.", ".fineTune.", ".batchPredict.", ".sessions.")

_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|any|your)\b"
    r"[^.\n]{0,20}\b(?:instructions?|prompts?|rules|directions|guidelines)\b"
    r"|\byou are now\b|\b(?:system|developer) prompt\b|\bnew instructions?\b|\bact as (?:an?|the) \w+"
    r"|\bdo not (?:tell|inform|reveal to|mention (?:this )?to) the (?:user|human|customer)\b"
    r"|<\|im_start\|>|\[/?INST\]|^\s*(?:system|assistant)\s*:|<\s*/?\s*(?:important|system|instructions?)\s*>",
    re.IGNORECASE | re.MULTILINE,
)
_HIDDEN = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")
_MARKUP = re.compile(
    r"<\s*/?\s*(?:script|iframe|img|style|object|embed|svg|form|input|link|meta|a)\b[^>]*>"
    r"|!\[[^\]]*\]\(\s*https?://|\bjavascript:|\bdata:text/html",
    re.IGNORECASE,
)
_PATTERNS = (("instruction", _INSTRUCTION), ("hidden_unicode", _HIDDEN), ("markup", _MARKUP))
MAX_FIELDS = 100
MAX_FLAGS = 50
MAX_STRINGS = 5000
MAX_SCAN_CHARS = 1_000_000


def sources_of(action: Action) -> tuple[str, ...]:
    """The kinds of third-party text ``action``'s output can carry (empty: none)."""
    if action.third_party_text:
        return action.third_party_text
    if action.name in DECLARED:
        return DECLARED[action.name]
    if action.type == "model.invoke" and not any(part in action.name for part in _NOT_TEXT):
        return (MODEL_OUTPUT,)
    return ()


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value with its JSON pointer (bounded by :data:`MAX_STRINGS`)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    seen = 0
    while stack and seen < MAX_STRINGS:
        where, item = stack.pop()
        if isinstance(item, str):
            seen += 1
            yield where, item
        elif isinstance(item, dict):
            stack.extend((f"{where}/{_escape(str(k))}", v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}/{i}", v) for i, v in reversed(list(enumerate(item))))


def _free_text(text: str) -> bool:
    """Prose, not an id, code or enum value: it has a space, or it carries something a scan would flag."""
    return " " in text.strip() or "\n" in text or bool(_HIDDEN.search(text)) or "<" in text


def scan(text: str) -> list[str]:
    """The injection patterns found in ``text`` (``instruction``, ``hidden_unicode``, ``markup``)."""
    return [kind for kind, pattern in _PATTERNS if pattern.search(text)]


def mark(action: Action, output: Any) -> dict[str, Any] | None:
    """The provenance mark of one result, or ``None`` when the action's output carries no third-party text."""
    sources = sources_of(action)
    if not sources:
        return None
    fields: list[str] = []
    flags: list[dict[str, str]] = []
    budget = MAX_SCAN_CHARS
    for pointer, text in _strings(output):
        if not _free_text(text):
            continue
        if len(fields) < MAX_FIELDS:
            fields.append(pointer or "/")
        if budget > 0 and len(flags) < MAX_FLAGS:
            budget -= len(text)
            flags.extend({"kind": kind, "path": pointer or "/"} for kind in scan(text))
    return {
        "untrusted": True,
        "sources": list(sources),
        "fields": fields,
        "flags": flags[:MAX_FLAGS],
        "delimiter": os.urandom(6).hex(),
    }


def audit_note(mark: dict[str, Any]) -> dict[str, Any]:
    """What the call's audit record keeps of a mark (sources and flags, never the text)."""
    return {"sources": mark["sources"], "flags": mark["flags"]}


__all__ = ["DECLARED", "audit_note", "mark", "scan", "sources_of"]
