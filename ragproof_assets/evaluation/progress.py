"""The run's progress bar: drawn on the controlling terminal when a person is
watching (the command line's ``ragproof/progress`` run tag), never in CI or the
UI's run workers."""

from __future__ import annotations


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
        # Lazy: tqdm takes a quarter second to import; only a run watched on a terminal
        # draws a bar.
        from tqdm import tqdm

        self._tty = tty
        self._bar = tqdm(total=total, unit="case", file=tty, leave=False)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
        self._tty.close()


def progress_bar(total: int, *, enabled: bool) -> NoProgress | TerminalProgress:
    """A bar on the terminal when ``enabled`` and there is one, else a bar that draws nothing."""
    if not enabled:
        return NoProgress()
    try:
        tty = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
    except OSError:
        return NoProgress()
    return TerminalProgress(total, tty)
