"""Redaction of PII before anything is audited or logged, and per-policy redaction of outputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"

# Keys whose values identify a person; always redacted in audit records.
PII_KEYS = frozenset(
    {
        "first_name", "last_name", "full_name", "name", "email", "phone", "mobile", "address", "street",
        "postal_code", "zip", "message", "comments", "customer", "contact", "date_of_birth", "dob", "ssn",
        "drivers_license", "input", "prompt", "messages", "text", "query", "api_key", "password", "token",
        "secret", "authorization",
    }
)  # fmt: skip


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON for digests and cache keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False).encode()


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


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
