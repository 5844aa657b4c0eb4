"""The audit journal's fsync helper: a small process that fsyncs the journal segments its parent names.

:class:`forecourt.gateway.journal_fsync.HelperFsync` runs this file as ``python -I -S fsync_helper.py FD``
(standard library only: it imports nothing from Forecourt, so it starts in milliseconds). ``FD`` is its end of
a ``SOCK_SEQPACKET`` socket pair; each message is one datagram:

- ``O<key>`` with one descriptor attached: keep this segment (its own descriptor of the same file);
- ``C<key>``: forget it (the segment was drained and deleted);
- ``S<key>,<key>,...``: fsync those segments, then answer ``D<number that failed>``.

It ignores SIGINT and SIGTERM (a terminal's Ctrl-C or a container runtime signalling the whole process group
must not stop it before its parent's last fsync) and exits when its parent's end closes: the parent exited,
was killed, or closed it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _fsync(segments: dict[bytes, int], keys: bytes) -> int:
    """fsync the named segments; how many failed (an unknown one counts as failed)."""
    failed = 0
    for key in keys.split(b","):
        fd = segments.get(key)
        try:
            if fd is None:
                raise OSError("unknown segment")
            os.fsync(fd)
        except OSError:
            failed += 1
    return failed


def _keep(segments: dict[bytes, int], key: bytes, fd: int | None) -> None:
    """Keep ``fd`` as segment ``key`` (None: forget the segment); a descriptor it replaces is closed."""
    previous = segments.pop(key, None)
    if previous is not None:
        _close(previous)
    if fd is not None:
        segments[key] = fd


def serve(sock: socket.socket) -> None:
    """Answer the parent's messages until its end of the socket closes."""
    segments: dict[bytes, int] = {}
    while True:
        try:
            message, received, _flags, _address = socket.recv_fds(sock, 65536, 4)
        except OSError:
            return
        if not message:
            return
        kind, body = message[:1], message[1:]
        if kind == b"O" and received:
            _keep(segments, body, received.pop(0))
        elif kind == b"C":
            _keep(segments, body, None)
        elif kind == b"S":
            try:
                sock.send(b"D%d" % _fsync(segments, body))
            except OSError:
                return
        for extra in received:
            _close(extra)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        sock = socket.socket(fileno=int(argv[1]))
    except (IndexError, ValueError, OSError):
        return 2
    with sock:
        serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
