"""The run's progress bar: drawn where a person is watching (the ``ragproof/progress``
run tag: the command line on a terminal, ``ragproof.evaluate`` in a notebook), never in
CI or the UI's run workers."""

from __future__ import annotations

from ragproof_assets.evaluation.config import PROGRESS_NOTEBOOK, PROGRESS_TERMINAL


class NoProgress:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class TerminalProgress:
    """A progress bar on the controlling terminal.

    Dagster captures a step's stdout and stderr at the file-descriptor level for
    its compute logs, so the bar is drawn on /dev/tty instead; without a
    terminal (CI, the UI's run workers) there is simply no bar.
    """

    def __init__(self, total: int, tty) -> None:
        # Lazy: tqdm takes a quarter second to import; only a run someone watches
        # draws a bar.
        from tqdm import tqdm

        self._tty = tty
        self._bar = tqdm(total=total, unit="case", file=tty, leave=False)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
        self._tty.close()


class NotebookProgress:
    """tqdm's notebook bar (a widget, when ipywidgets is installed; else tqdm's text on
    the kernel's stderr). ``ragproof.evaluate`` runs a one-shard run's step in the
    notebook's own process, whose display reaches the notebook through the kernel,
    not through the file descriptors Dagster captures."""

    def __init__(self, total: int) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, unit="case", desc="ragproof")

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()


def progress_bar(
    total: int, *, where: str | None
) -> NoProgress | TerminalProgress | NotebookProgress:
    """A bar where the run's ``ragproof/progress`` tag says a person watches (``where``),
    else a bar that draws nothing."""
    if where == PROGRESS_NOTEBOOK:
        return NotebookProgress(total)
    if where != PROGRESS_TERMINAL:
        return NoProgress()
    try:
        tty = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
    except OSError:
        return NoProgress()
    return TerminalProgress(total, tty)
