"""The bootstrap operator key reaches the person starting the server, never a log (stdout under systemd or a
container is the service log)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from forecourt.cli.serve import announce_operator_key

KEY = "fco_bootstrapprefix_abcdefghijklmnopqrstuvwxyz012345"


def test_off_a_terminal_the_key_goes_to_a_file_only_its_owner_reads_and_the_log_names_only_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    announce_operator_key(KEY, terminal=False)
    logged = capsys.readouterr()
    assert KEY not in logged.out + logged.err
    written = tmp_path / "bootstrap-operator-key"
    assert str(written) in logged.out
    assert written.read_text().strip() == KEY
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_a_key_file_left_from_before_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    (tmp_path / "bootstrap-operator-key").write_text("earlier\n")
    announce_operator_key(KEY, terminal=False)
    assert (tmp_path / "bootstrap-operator-key").read_text() == "earlier\n"
    assert KEY not in capsys.readouterr().out
    assert [p.read_text().strip() for p in tmp_path.glob("bootstrap-operator-key-*")] == [KEY]


def test_on_a_terminal_the_key_is_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    announce_operator_key(KEY, terminal=True)
    assert capsys.readouterr().out.count(KEY) == 1
