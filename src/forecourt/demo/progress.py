"""A Rich progress bar behind the plain ``progress(done, total)`` callback the generators take."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from forecourt.demo.bulk import ProgressCallback


@contextmanager
def rich_progress(description: str = "vehicles") -> Iterator[ProgressCallback]:
    """A progress callback that drives a Rich bar on the terminal while the block runs.

    Example:
        >>> with rich_progress("bulk inventory") as progress:  # doctest: +SKIP
        ...     await generate_bulk(store, progress=progress)
    """
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
