"""Redaction of PII before anything is audited or logged, and per-policy redaction of outputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from forecourt import caching
from forecourt.contract import AdapterResult
from forecourt.domain.frozen import frozen

REDACTED = "[redacted]"
UNEXPECTED = "[unexpected]"
"""Key under which an audited payload counts the keys its schema does not declare (their names may be PII too)."""

# Keys whose values identify a person; always redacted in audit records.
PII_KEYS = frozenset(
    {
        "first_name", "last_name", "full_name", "name", "email", "phone", "mobile", "address", "street",
        "postal_code", "zip", "message", "comments", "customer", "contact", "date_of_birth", "dob", "ssn",
        "drivers_license", "input", "prompt", "messages", "text", "query", "api_key", "password", "token",
        "secret", "authorization", "notes", "note", "consent_text", "description", "comment", "reason", "body",
        "instructions", "summary",
    }
)  # fmt: skip
_IDENTIFIER_MAX = 64


def _free_text(value: str, schema: Mapping[str, Any]) -> bool:
    """Whether a string is free text (whatever a person wrote), not an identifier, a code or a time.

    A value one of the schema's ``enum`` or its ``const`` is kept; so is a short value without whitespace (ids,
    VINs, codes, times). Anything else may carry what a customer wrote about themselves (a refused call's
    value included, whatever its schema says it should have been).
    """
    enum = schema.get("enum")
    if (isinstance(enum, list) and value in enum) or ("const" in schema and schema["const"] == value):
        return False
    return len(value) > _IDENTIFIER_MAX or any(c.isspace() for c in value)


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON for digests and cache keys (``json.dumps(value, sort_keys=True, separators=(",", ":"),
    default=str, ensure_ascii=False)``, with the encoder built once)."""
    return _CANONICAL.encode(value).encode()


_DIGESTS: caching.Cache[Hashable, str] = caching.lru("gateway.digests", 4096)  # by the payload's frozen form


def digest(value: Any, form: Hashable | None = None) -> str:
    """SHA-256 of the canonical JSON of ``value`` (remembered for a JSON value asked again).

    ``form``: ``frozen(value)`` when the caller has it (the gateway freezes a call's payload once).
    """
    key = form if form is not None else frozen(value)
    if key is not None and (found := _DIGESTS.get(key)) is not None:
        return found
    computed = hashlib.sha256(canonical_json(value)).hexdigest()
    if key is not None:
        _DIGESTS.put(key, computed)
    return computed


def redact(value: Any, keys: Iterable[str] = PII_KEYS, *, depth: int = 0) -> Any:
    """A copy of ``value`` with every entry under one of ``keys`` replaced by ``[redacted]``."""
    keyset = keys if isinstance(keys, frozenset) else frozenset(keys)
    if depth > 32:
        return REDACTED
    if isinstance(value, dict):
        return {
            k: (REDACTED if str(k).lower() in keyset else redact(v, keyset, depth=depth + 1)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, keyset, depth=depth + 1) for v in value]
    return value


def redact_for_audit(value: Any, schema: Mapping[str, Any] | None, keys: frozenset[str], *, depth: int = 0) -> Any:
    """Like :func:`redact`, and also drops what the action's input schema does not declare.

    A caller can put anything in a payload the schema rejects (``{"bogus": "jane@example.com"}``); an
    audit record keeps only declared keys (counted under ``[unexpected]`` otherwise), so a failed call
    cannot smuggle personal data into the audit trail. Objects whose schema declares no ``properties``
    are redacted by key name only. Free text (see :func:`_free_text`: appointment notes, consent text, a
    message under any name) is redacted whatever its key.
    """
    if depth > 32:
        return REDACTED
    sub_schema: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    if sub_schema.get("x-audit") == "size" and isinstance(value, str):
        return f"[{len(value)} characters]"  # bulk input (an uploaded feed): its size, not its content
    if isinstance(value, dict):
        props = sub_schema.get("properties")
        declared: Mapping[str, Any] | None = props if isinstance(props, Mapping) and props else None
        out: dict[str, Any] = {}
        unexpected = 0
        for k, v in value.items():
            if declared is not None and k not in declared:
                unexpected += 1
            elif str(k).lower() in keys:
                out[k] = REDACTED
            else:
                child = declared.get(k) if declared is not None else None
                out[k] = redact_for_audit(v, child, keys, depth=depth + 1)
        if unexpected:
            out[UNEXPECTED] = unexpected
        return out
    if isinstance(value, list):
        items = sub_schema.get("items")
        return [
            redact_for_audit(v, items if isinstance(items, Mapping) else None, keys, depth=depth + 1) for v in value
        ]
    if isinstance(value, str) and _free_text(value, sub_schema):
        return REDACTED
    return value


def redact_result(result: AdapterResult, fields: frozenset[str]) -> AdapterResult:
    """``result`` with ``fields`` redacted from its output (the same result when there are none)."""
    if not fields:
        return result
    return AdapterResult(output=redact(result.output, fields), result_type=result.result_type, metadata=result.metadata)
