"""A durable local journal of audit records: on disk before the call is answered, drained to the database.

Every audit record is appended to the journal (one JSON line, ``os.write``) when the call finishes; before
its answer is sent the gateway awaits :meth:`AuditJournal.sync`, which fsyncs the journal. The fsync
runs off the event loop (in a helper process, else a worker thread: :mod:`.journal_fsync`) and is shared:
every call that finished while one was in flight waits for the next one (group commit), so the event loop
never blocks on the disk and N concurrent calls cost one fsync, not N.
The :class:`~forecourt.gateway.audit.AuditWriter` then writes the records to the database in batches. A
process killed with ``kill -9``, or a database that is down, therefore loses no record of an answered call:
the next start of any process sharing the journal folder replays what the dead one left (records are keyed
by id, so a record written twice is stored once). While other requests are being answered, a round waits one
more turn of the event loop before it starts, so that the calls about to finish join it (fewer, fuller fsyncs:
+12 % cached calls per second at 32 connections on one core, docs/benchmarks.md).

Segments: each process appends to its own segment file (``<instance>-<pid>-<n>.jsonl``) and holds an
exclusive ``flock`` on it. Before each drain the writer *rotates* (starts a new segment) and, once the
database has every record of the older segments, deletes them; records arriving during the write go to
the new segment. At start-up, segments whose lock can be taken belong to dead processes and are replayed.
A torn last line (killed mid-write) is skipped: its call was never answered.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from forecourt.gateway.journal_fsync import Fsync, HelperFsync, ThreadFsync
from forecourt.settings import Settings
from forecourt.store.base import AuditRecord

logger = logging.getLogger(__name__)

_ONE_TURN = 1e-6  # a timer due at once: it fires on the event loop's next turn, after the I/O it polls


def _line(record: AuditRecord) -> bytes:
    """The record as one JSON line, as the model's own dump writes it: its fields as they are (orjson, which
    writes timestamps as pydantic does), or the model's dump for arguments orjson does not write the same way."""
    try:
        return orjson.dumps(record.__dict__, default=_refuse, option=_LINE_OPTIONS)
    except TypeError:
        return record.model_dump_json().encode() + b"\n"


_LINE_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_UTC_Z | orjson.OPT_PASSTHROUGH_SUBCLASS


def _refuse(value: object) -> object:
    """Anything orjson does not write itself (decimals, dates, subclasses) is left to the model's dump."""
    raise TypeError


class AuditJournal:
    """This process's append-only audit journal in ``directory`` (fsync'd by :meth:`sync`)."""

    def __init__(
        self,
        directory: Path,
        instance: str,
        *,
        fsync: bool = True,
        flush: Callable[[int], None] = os.fsync,
        helper: bool = False,
        commit_delay_s: float = 0.0,
        commit_siblings: int = 2,
    ) -> None:
        """``helper``: fsync in a helper process (``flush`` is then ``os.fsync``); else ``flush`` in a thread."""
        self.directory = directory
        self.fsyncer: Fsync = HelperFsync(ThreadFsync(flush)) if helper and fsync else ThreadFsync(flush)
        self.commit_delay_s = commit_delay_s
        self.commit_siblings = commit_siblings
        self.siblings: Callable[[], int] = lambda: 0
        """How many other calls are running now (the gateway's in-flight count; wired by bootstrap)."""
        self._stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in instance)[:64] or "forecourt"
        self._fsync = fsync
        self._seq = 0
        self._fd: int | None = None
        self._path: Path | None = None
        self._closed: list[tuple[Path, int, int]] = []  # rotated segments (path, fd, seq), locked until drained
        self._written = 0  # records appended by this process
        self._synced = 0  # of those, how many an fsync has covered
        self._dirty: dict[int, int] = {}  # segments written to since their last fsync: seq -> descriptor
        self._syncing: asyncio.Task[None] | None = None
        directory.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ appending

    def _open_segment(self) -> None:
        self._seq += 1
        path = self.directory / f"{self._stem}-{os.getpid()}-{self._seq}.jsonl"
        # Locked under a name recovery does not look at, then renamed: no other process can ever see the
        # segment unlocked (and take it for a dead process's).
        staging = path.with_suffix(".new")
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(staging, path)
        self._fd, self._path = fd, path

    def append(self, record: AuditRecord) -> None:
        """Write one record: the kernel has it when this returns (it survives this process); :meth:`sync` flushes."""
        if self._fd is None:
            self._open_segment()
        assert self._fd is not None
        os.write(self._fd, _line(record))
        self._written += 1
        self._dirty[self._seq] = self._fd

    async def sync(self) -> None:
        """Return once every record appended before this call is on disk (one fsync for all who wait together)."""
        if not self._fsync:
            return
        target = self._written
        loop = asyncio.get_running_loop()
        while self._synced < target:
            syncing = self._syncing
            if syncing is None or syncing.get_loop() is not loop:
                syncing = self._syncing = loop.create_task(self._sync_now())
            await asyncio.shield(syncing)

    async def _sync_now(self) -> None:
        if self.siblings() >= self.commit_siblings:
            # Other requests are being answered and will want their records on disk too: one more turn of the
            # event loop (plus ``commit_delay_s``, as PostgreSQL's commit_delay / commit_siblings) lets the calls
            # ready to finish append theirs, and one fsync covers them all. A call alone never waits.
            await asyncio.sleep(self.commit_delay_s or _ONE_TURN)
        upto, segments = self._written, dict(self._dirty)
        self._dirty.clear()
        try:
            failed = await self.fsyncer(segments)
            if failed:  # the records are still queued for the database; the journal only lost its disk guarantee
                logger.warning("audit journal fsync failed on %d segment(s)", failed)
            self._synced = max(self._synced, upto)
        finally:
            self._syncing = None

    def rotate(self) -> None:
        """Start a new segment; the current one waits (locked) until :meth:`drained` deletes it."""
        if self._fd is None or self._path is None:
            return
        self._closed.append((self._path, self._fd, self._seq))
        self._fd, self._path = None, None

    def drained(self) -> None:
        """Every record of the rotated segments is in the database: delete them."""
        for path, fd, seq in self._closed:
            path.unlink(missing_ok=True)
            self._dirty.pop(seq, None)
            self.fsyncer.forget(seq)
            os.close(fd)
        self._closed.clear()

    def close(self, *, drained: bool) -> None:
        """Release the segments; delete them too when everything in them reached the database."""
        self.rotate()
        self.fsyncer.close()
        if drained:
            self.drained()
            return
        for _, fd, _ in self._closed:
            os.close(fd)  # left on disk for the next start to replay
        self._closed.clear()

    # ------------------------------------------------------------------ recovery

    def orphans(self) -> Iterator[tuple[Path, list[AuditRecord]]]:
        """Segments no live process holds (their writer died), with the records they hold."""
        for path in sorted(self.directory.glob("*.jsonl")):
            if path == self._path or any(path == p for p, _, _ in self._closed):
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live process is still appending to it
                yield path, list(_records(path))
            finally:
                os.close(fd)


def _records(path: Path) -> Iterator[AuditRecord]:
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                logger.info("audit journal %s ends in a torn record (skipped)", path.name)
                return
            try:
                yield AuditRecord.model_validate_json(line)
            except ValueError:
                logger.warning("audit journal %s has an unreadable record (skipped)", path.name)


def audit_journal_for(settings: Settings) -> AuditJournal:
    """The journal ``settings`` name: ``audit_journal_dir``, else beside an SQLite file, else ``var/audit-journal``."""
    directory = settings.audit_journal_dir
    if directory is None:
        url = settings.database_url
        if settings.is_sqlite and "///" in url and ":memory:" not in url:
            db = Path(url.split("///", 1)[1].split("?", 1)[0])
            directory = db.with_name(db.name + ".audit-journal")
        else:
            directory = Path("var") / "audit-journal"
    return AuditJournal(
        directory,
        settings.instance_name,
        fsync=settings.audit_journal_fsync,
        helper=settings.audit_fsync_helper,
        commit_delay_s=settings.audit_commit_delay_ms / 1000,
        commit_siblings=settings.audit_commit_siblings,
    )
