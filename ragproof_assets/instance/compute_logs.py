"""Step logs as Dagster's local compute log manager keeps them, mirrored by a thread.

``LocalComputeLogManager`` sends each step's stdout and stderr to files the UI reads,
and copies them back to the terminal with a ``tail -F`` process and a Python process
that watches it, for each stream: four processes started and stopped for every step.
On a sharded run's critical path that is 0.2 to 0.3 s of its wall (measured beside
the stock manager by benchmarks/compute_logs.py, in docs/benchmarks.md). Here the
files, their layout and everything the UI reads are the local manager's; only the
copy to the terminal is a thread of the step's own process, which cannot outlive it,
so nothing needs watching.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

# Dagster exports no compute log manager at its top level: the ones in its own packages
# (dagster_aws's, dagster_gcp's) import these names from these modules, as here.
from dagster._core.storage.compute_log_manager import CapturedLogContext
from dagster._core.storage.local_compute_log_manager import (
    IO_TYPE_EXTENSION,
    ComputeIOType,
    LocalComputeLogManager,
)

# How often the thread looks for new output: output shows in the terminal at most this
# late; everything left is copied when the capture ends.
MIRROR_INTERVAL_S = 0.1
CHUNK_BYTES = 1 << 16


class FileMirror:
    """Copies what is appended to ``source`` (open, at the offset to copy from) to the
    file descriptor ``target`` from a thread, until stopped; ``stop`` copies the rest."""

    def __init__(self, source: IO[bytes], target: int) -> None:
        self._source = source
        self._target = target
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragproof-log-mirror", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(MIRROR_INTERVAL_S):
            self._copy()
        self._copy()

    def _copy(self) -> None:
        while chunk := self._source.read(CHUNK_BYTES):
            try:
                os.write(self._target, chunk)
            except OSError:
                # The terminal went away (a closed pipe): the file still has everything.
                return


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        # pytest's and other runners' captured streams have no descriptor.
        return None


@contextmanager
def mirrored_to_file(stream: Any, path: str) -> Iterator[None]:
    """Send everything written to ``stream``'s descriptor (Python, C extensions and child
    processes alike) to ``path``, and copy it on to where the stream went before."""
    with open(path, "ab") as log:
        fd = _fileno(stream)
        if fd is None:
            yield
            return
        stream.flush()
        # What the file held before this capture is not this capture's to show.
        with open(path, "rb") as source:
            source.seek(0, os.SEEK_END)
            original = os.dup(fd)
            try:
                os.dup2(log.fileno(), fd)
                # Started once the descriptor writes to the file: it copies from the offset
                # taken above, so nothing written in between is missed.
                mirror = FileMirror(source, original)
                mirror.start()
                try:
                    yield
                finally:
                    stream.flush()
                    os.dup2(original, fd)
                    mirror.stop()
            finally:
                os.close(original)


class MirroredComputeLogManager(LocalComputeLogManager):
    """``LocalComputeLogManager`` with the copy to the terminal made by a thread; its
    config is the local manager's."""

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> MirroredComputeLogManager:
        # The local manager's own builds a LocalComputeLogManager whatever the class.
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Generator[CapturedLogContext, None, None]:
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with mirrored_to_file(sys.stdout, out), mirrored_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        # As the local manager does: the marker the UI reads as "the capture is complete".
        with open(self.complete_artifact_path(log_key), "a"):
            pass
