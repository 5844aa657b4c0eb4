"""Make the ``sqlite-vec`` extension available to the store's SQLite connections.

Two ways, tried in order:

1. When Python's ``sqlite3`` can load extensions (``enable_load_extension``), the extension is
   loaded into each connection the first time the knowledge repository uses it.
2. Many Python builds (pyenv's default among them) leave extension loading out of the ``sqlite3``
   module while the SQLite library itself supports it. Then sqlite-vec's entry point is registered
   once per process with ``sqlite3_auto_extension`` through ``ctypes``, and SQLite initialises it on
   every connection opened afterwards.

A connection without the extension still works: the repository then ranks vectors with numpy.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import sqlite3
import threading
from typing import Any

import sqlalchemy as sa

from forecourt.store.sa_asyncio import AsyncConnection
from forecourt.store.sql.inline import InlineConnection

logger = logging.getLogger(__name__)

_INFO_KEY = "forecourt.sqlite_vec"
_lock = threading.Lock()
_auto_registered: bool | None = None
# Keeps the loaded library alive: SQLite holds a pointer to its entry point.
_handles: list[Any] = []


def _loadable_path() -> str | None:
    """Where ``sqlite_vec.loadable_path()`` points: ``vec0`` beside the package's ``__init__``.

    Found without running the package, whose ``__init__`` also imports numpy for its optional helpers (every
    process registers the extension at start, few of them compute with vectors).
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.normpath(os.path.join(next(iter(spec.submodule_search_locations)), "vec0"))


def register_auto_extension() -> bool:
    """Register sqlite-vec for every SQLite connection opened from now on (idempotent).

    Returns:
        Whether the registration is in place.
    """
    global _auto_registered
    with _lock:
        if _auto_registered is not None:
            return _auto_registered
        _auto_registered = _register()
        return _auto_registered


def _register() -> bool:
    path = _loadable_path()
    if path is None:
        return False
    try:
        import _sqlite3

        library = ctypes.CDLL(_sqlite3.__file__)
        extension = ctypes.CDLL(path if path.endswith((".so", ".dylib", ".dll")) else _with_suffix(path))
        entry = extension.sqlite3_vec_init
        rc = library.sqlite3_auto_extension(ctypes.cast(entry, ctypes.c_void_p))
    except (OSError, AttributeError) as exc:
        logger.info("sqlite-vec auto-extension unavailable: %s", type(exc).__name__)
        return False
    _handles.append(extension)
    return int(rc) == 0


def _with_suffix(path: str) -> str:
    import sys

    suffix = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")
    return path + suffix


async def ensure_sqlite_vec(conn: AsyncConnection | InlineConnection) -> bool:
    """Whether sqlite-vec's functions work on ``conn``, loading the extension when possible.

    The answer is remembered per pooled DBAPI connection. Read-only connections (``store.read()``)
    never load it; they use it when the auto-extension put it there.
    """
    known = conn.info.get(_INFO_KEY)
    if isinstance(known, bool):
        return known
    available = await _has_vec(conn)
    if not available and isinstance(conn, AsyncConnection):
        available = await _load_into(conn)
    conn.info[_INFO_KEY] = available
    return available


async def _has_vec(conn: AsyncConnection | InlineConnection) -> bool:
    result = await conn.execute(sa.text("SELECT count(*) FROM pragma_function_list WHERE name = 'vec_distance_cosine'"))
    return bool(result.scalar())


async def _load_into(conn: AsyncConnection) -> bool:
    path = _loadable_path()
    if path is None:
        return False
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    enable = getattr(driver, "enable_load_extension", None)
    load = getattr(driver, "load_extension", None)
    if enable is None or load is None:
        return False
    try:
        await enable(True)
        await load(path)
        await enable(False)
    except (AttributeError, NotImplementedError, OSError, sqlite3.Error) as exc:
        logger.info("sqlite-vec could not be loaded: %s", type(exc).__name__)
        return False
    return await _has_vec(conn)
