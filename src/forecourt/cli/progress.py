"""Progress for long CLI commands: a Rich bar with rate and ETA on a terminal, JSON lines otherwise asked for."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

Progress_ = Callable[[int, int], None]


class RateColumn(ProgressColumn):
    """Rows per second."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        """The current rate, or ``?`` before there is one."""
        speed = task.finished_speed or task.speed
        return Text("?" if speed is None else f"{speed:,.0f} {self.unit}/s", style="progress.data.speed")


class JsonProgress:
    """``progress(done, total)`` as JSON lines: ``{"event": "progress", "done", "total", "rate", "eta_s"}``."""

    def __init__(self, stream: TextIO, unit: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.unit = unit
        self.clock = clock
        self.started = clock()

    def __call__(self, done: int, total: int) -> None:
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else None
        line = {"event": "progress", "unit": self.unit, "done": done, "total": total,
                "rate": round(rate, 1), "eta_s": None if eta is None else round(eta, 1)}  # fmt: skip
        self.stream.write(json.dumps(line) + "\n")
        self.stream.flush()


@contextmanager
def progress_reporter(description: str, *, as_json: bool, console: Console, unit: str = "rows") -> Iterator[Progress_]:
    """A ``progress(done, total)`` callback: JSON lines on stderr with ``as_json``, a Rich bar on a terminal.

    Without a terminal and without ``as_json`` it reports nothing (logs and pipes stay clean).
    """
    if as_json:
        yield JsonProgress(sys.stderr, unit)
        return
    if not console.is_terminal:
        yield lambda done, total: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
