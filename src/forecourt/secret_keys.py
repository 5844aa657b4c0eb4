"""Keys derived from the operator's secrets, and the test a secret must pass before a server uses it.

Each purpose gets its own key, derived with HKDF-SHA256 from the secret that serves it (``info`` names the
purpose), so a key learned for one purpose opens nothing else: the console's session key is derived from
``FORECOURT_CONSOLE_SESSION_SECRET`` when it is set, else from ``FORECOURT_CURSOR_SECRET`` — never the cursor
key itself.

:func:`weakness` says why a secret must not be served: too short, too little entropy, or a value published in
Forecourt's own repository (the development defaults, the example files' placeholders and the words such
values are made of). ``forecourt serve`` refuses every weak secret on every bind address; ``--dev`` is the one
way to run with them (cli/preflight.py).
"""

from __future__ import annotations

import math
from collections import Counter

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MIN_LENGTH = 32
"""Characters a secret needs at least."""
MIN_ENTROPY_BITS = 88.0
"""Estimated bits (length times the Shannon entropy of its characters) a secret needs at least; 32 random hex
characters estimate 94-125 (114 typical), ``secrets.token_urlsafe(32)`` about 215, a repeated character 0."""
DEVELOPMENT_SECRETS = frozenset(
    {
        "forecourt-dev-cursor-secret-change-me",
        "forecourt-dev-key-pepper-change-me",
        "replace-with-64-random-characters",
        "compose-cursor-secret-change-me",
        "compose-key-pepper-change-me",
    }
)
"""Secret values Forecourt's repository publishes (settings defaults, deploy/ examples)."""
PUBLISHED_WORDS = (
    "change-me",
    "changeme",
    "replace",
    "example",
    "secret",
    "pepper",
    "password",
    "forecourt",
    "test",
    "demo",
    "bench",
    "sample",
    "dummy",
    "default",
    "insecure",
)
"""Words of the values published in the repository (examples, tests, benchmarks), matched in lower case as
they are written there; a random secret rarely holds one (about 1 in 100,000 of ``token_urlsafe(32)``, which
is then refused with the reason, and a new one passes)."""


def derived_key(secret: str, purpose: str, length: int = 32) -> bytes:
    """The key for ``purpose``, derived from ``secret`` with HKDF-SHA256."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=b"forecourt/" + purpose.encode())
    return hkdf.derive(secret.encode())


def entropy_bits(value: str) -> float:
    """Length times the Shannon entropy of the value's characters: a rough ceiling on its randomness."""
    if not value:
        return 0.0
    counts = Counter(value)
    size = len(value)
    per_char = -sum(n / size * math.log2(n / size) for n in counts.values())
    return per_char * size


def weakness(value: str) -> str | None:
    """Why ``value`` must not be served as a secret, or ``None`` when it may."""
    if value in DEVELOPMENT_SECRETS:
        return "is a development value published in Forecourt's repository"
    for word in PUBLISHED_WORDS:
        if word in value:
            return f"contains {word!r}, like the values published in Forecourt's repository"
    if len(value) < MIN_LENGTH:
        return f"is shorter than {MIN_LENGTH} characters"
    if entropy_bits(value) < MIN_ENTROPY_BITS or _repetitive(value):
        return "is too regular to be random (low entropy)"
    return None


def _repetitive(value: str) -> bool:
    """Whether the value repeats itself (``0123456789`` four times): under 3/4 of its trigrams are distinct."""
    trigrams = [value[i : i + 3] for i in range(len(value) - 2)]
    return len(set(trigrams)) < 0.75 * len(trigrams)
