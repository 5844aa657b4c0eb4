"""Feed files uploaded to the console, handed to ``console.inventory.import`` by a one-time handle.

A file of any size (up to ``feed_max_bytes``, the scheduled feeds' limit: no whole-file limit below the CLI's)
does not travel inside a gateway payload: the console keeps the spooled upload here under a random handle and
calls the import with ``upload: <handle>``; the audit record holds the handle, never the content. A handle is
good in this process only, for the request that made it, and is dropped when that request ends.
"""

from __future__ import annotations

import secrets
from typing import IO

from forecourt import caching
from forecourt.errors import InvalidParams

_FILES: caching.Cache[str, IO[bytes]] = caching.lru("console.uploads", 64, max_age_s=3600)
"""Uploads in flight by handle (a handle lives as long as its request; an hour at most)."""


def keep(file: IO[bytes]) -> str:
    """Keep an uploaded file; answers its handle."""
    handle = "upl_" + secrets.token_urlsafe(24)
    _FILES.put(handle, file)
    return handle


def read(handle: str) -> bytes:
    """The upload's bytes; :class:`InvalidParams` for a handle this process does not hold."""
    file = _FILES.get(handle)
    if file is None:
        raise InvalidParams("That upload is gone; choose the file again.")
    file.seek(0)
    return file.read()


def drop(handle: str) -> None:
    """Forget an upload (its request ended)."""
    _FILES.pop(handle)
