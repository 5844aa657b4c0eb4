"""The journal's fsync helper process: fsyncs every round, ends with its journal, a thread takes over if it dies."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
from pathlib import Path

import pytest

from forecourt.gateway.audit_journal import AuditJournal
from forecourt.gateway.fsync_helper import serve
from forecourt.gateway.journal_fsync import HelperFsync

from .test_audit_journal_sync import _journal_lines, _record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _helper_of(journal: AuditJournal) -> HelperFsync:
    assert isinstance(journal.fsyncer, HelperFsync)
    return journal.fsyncer


def _segments(folder: Path) -> list[Path]:
    return list(folder.glob("*.jsonl"))


def _open_files(pid: int) -> set[str]:
    found = set()
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found.add(os.readlink(entry))
        except OSError:
            continue
    return found


async def _journal_with_helper(folder: Path) -> tuple[AuditJournal, int]:
    """A journal whose first round has run: its helper process is up."""
    journal = AuditJournal(folder, "test", helper=True)
    journal.append(_record(1))
    await journal.sync()
    pid = _helper_of(journal).pid
    assert pid is not None
    return journal, pid


async def test_the_helper_process_fsyncs_every_round_and_ends_with_its_journal(tmp_path: Path) -> None:
    journal, pid = await _journal_with_helper(tmp_path)
    assert _alive(pid)
    journal.append(_record(2))
    journal.append(_record(3))
    await journal.sync()
    assert _helper_of(journal).pid == pid  # one helper for the journal's life
    assert len(_journal_lines(tmp_path)) == 3
    journal.close(drained=True)
    assert not _alive(pid)  # ended and reaped


async def test_a_drained_segment_is_released_by_the_helper_too(tmp_path: Path) -> None:
    journal, pid = await _journal_with_helper(tmp_path)
    (first,) = _segments(tmp_path)
    assert str(first) in _open_files(pid)
    journal.rotate()
    journal.append(_record(2))  # the next segment
    journal.drained()
    await journal.sync()  # the helper reads its messages in order: the release came before this round
    assert not first.exists()
    assert not any(name.startswith(str(first)) for name in _open_files(pid))  # not even "(deleted)"
    journal.close(drained=True)


async def test_when_the_helper_dies_a_worker_thread_takes_over_and_no_round_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal, pid = await _journal_with_helper(tmp_path)
    os.kill(pid, signal.SIGKILL)
    caplog.set_level(logging.WARNING, logger="forecourt.gateway.journal_fsync")
    for n in range(2, 5):
        journal.append(_record(n))
        async with asyncio.timeout(10):
            await journal.sync()
    assert _helper_of(journal).pid is None
    assert "fsync continues in a worker thread" in caplog.text
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)
    assert len(_journal_lines(tmp_path)) == 4
    journal.close(drained=True)


def test_each_event_loop_gets_its_own_helper_and_the_last_one_ends(tmp_path: Path) -> None:
    """One-shot commands run each step in a new loop; a helper answers on the loop that started it."""
    journal = AuditJournal(tmp_path, "test", helper=True)
    pids = []
    for n in range(3):
        journal.append(_record(n))
        asyncio.run(journal.sync())
        pids.append(_helper_of(journal).pid)
    assert len(set(pids)) == 3
    assert [_alive(pid) for pid in pids if pid is not None] == [False, False, True]
    journal.close(drained=True)
    assert not any(_alive(pid) for pid in pids if pid is not None)


def test_the_helper_fsyncs_the_segments_it_was_given_and_counts_the_rest_as_failed(tmp_path: Path) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    helper = threading.Thread(target=serve, args=(theirs,))
    helper.start()
    segment = os.open(tmp_path / "segment", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(segment, b"{}\n")
        socket.send_fds(ours, [b"O7"], [segment])
        ours.send(b"S7")
        assert ours.recv(64) == b"D0"
        ours.send(b"S7,8")  # segment 8 was never given
        assert ours.recv(64) == b"D1"
        ours.send(b"C7")
        ours.send(b"S7")
        assert ours.recv(64) == b"D1"
    finally:
        os.close(segment)
        ours.close()  # the helper ends when its parent's end closes
        helper.join(timeout=10)
        theirs.close()
    assert not helper.is_alive()


async def test_where_the_helper_cannot_start_the_fsync_runs_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_such_sockets(*_: object) -> None:
        raise OSError("not supported on this platform")

    monkeypatch.setattr(socket, "socketpair", no_such_sockets)
    caplog.set_level(logging.WARNING, logger="forecourt.gateway.journal_fsync")
    journal = AuditJournal(tmp_path, "test", helper=True)
    for n in range(3):
        journal.append(_record(n))
        async with asyncio.timeout(10):
            await journal.sync()
    assert _helper_of(journal).pid is None
    assert caplog.text.count("could not start") == 1  # said once, not every round
    assert len(_journal_lines(tmp_path)) == 3
    journal.close(drained=True)
