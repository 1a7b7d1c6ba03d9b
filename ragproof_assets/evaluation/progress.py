"""The progress bar a command-line run draws while its cases are evaluated."""


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
        from tqdm import tqdm  # third-party, imported lazily: only a terminal run draws a bar

        self._tty = tty
        self._bar = tqdm(total=total, unit="case", file=tty, leave=False)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()
        self._tty.close()


def progress_bar(total: int, *, enabled: bool):
    if not enabled:
        return NoProgress()
    try:
        tty = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
    except OSError:
        return NoProgress()
    return TerminalProgress(total, tty)
