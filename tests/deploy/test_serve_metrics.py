"""``forecourt serve``'s metrics folder: fresh for each start, dead workers' live gauges dropped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forecourt.cli.serve import MULTIPROC_ENV, forget_dead_workers, prepare_multiprocess_metrics
from forecourt.settings import Settings


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def test_several_workers_get_a_fresh_temporary_metrics_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, "unset")  # recorded, so that what the call sets is undone afterwards
    monkeypatch.delenv(MULTIPROC_ENV)
    created = prepare_multiprocess_metrics(Settings(), workers=2)
    try:
        assert created is not None
        assert os.environ[MULTIPROC_ENV] == str(created)
        assert list(created.iterdir()) == []
    finally:
        if created is not None:
            created.rmdir()


def test_an_operators_metrics_folder_is_emptied_of_an_earlier_runs_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    (tmp_path / "counter_123.db").write_bytes(b"old")
    (tmp_path / "notes.txt").write_text("kept")
    assert prepare_multiprocess_metrics(Settings(prometheus_multiproc_dir=tmp_path), workers=2) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_one_worker_without_a_folder_keeps_the_in_memory_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, "unset")
    monkeypatch.delenv(MULTIPROC_ENV)
    assert prepare_multiprocess_metrics(Settings(), workers=1) is None
    assert MULTIPROC_ENV not in os.environ


def test_the_live_gauges_of_a_dead_worker_are_dropped_and_its_counters_kept(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getpid()
    for name in (f"gauge_livesum_{dead}.db", f"gauge_livesum_{alive}.db", f"counter_{dead}.db"):
        (tmp_path / name).write_bytes(b"")
    forget_dead_workers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"counter_{dead}.db", f"gauge_livesum_{alive}.db"])
