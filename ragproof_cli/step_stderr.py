"""What the run's step processes may print on the command's stderr.

A step process announces itself through Dagster's default console logger
before the run's own logger settings apply (the multiprocess executor's
"context-free" log manager, at the instance's Python log level, DEBUG unless
dagster.yaml says otherwise). The command's contract is one line per error
(CONTRACT section 14), and Dagster's log only with ``--debug``; raising the
instance's Python log level would also drop those events from the run's event
log, which the UI reads. So the step processes' stderr is passed through a
filter that holds back Dagster's own log lines and keeps everything else
(a crashing step's traceback, a library's warning).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

# Dagster's console format: "2026-12-02 10:59:32 +0000 - dagster - DEBUG - ...".
DAGSTER_LOG_LINE = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - dagster - [A-Z]+ - ")


def is_dagster_log(line: bytes) -> bool:
    return DAGSTER_LOG_LINE.match(line) is not None


def copy_lines(source: BinaryIO, write: Callable[[bytes], object]) -> None:
    """Copy ``source``'s lines to ``write`` until its end, leaving out Dagster's log lines."""
    for line in source:
        if not is_dagster_log(line):
            write(line)


@contextmanager
def filtered_stderr(target_fd: int = 2) -> Iterator[None]:
    """While inside, processes started from here write their stderr through the filter
    to what fd ``target_fd`` is now; this process's own stderr is restored on exit.

    The copying thread lives as long as any such process holds the pipe open (a
    forkserver lives until the command ends), so it is a daemon thread.
    """
    read_end, write_end = os.pipe()
    real = os.dup(target_fd)
    sink = os.fdopen(real, "wb", buffering=0)
    source = os.fdopen(read_end, "rb")
    threading.Thread(target=copy_lines, args=(source, sink.write), daemon=True).start()
    saved = os.dup(target_fd)
    os.dup2(write_end, target_fd)
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(saved, target_fd)
        os.close(saved)
