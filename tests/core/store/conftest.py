from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragproof_core.store.run_store import RunStore

REPO_ROOT = Path(__file__).resolve().parents[3]


class Worker:
    """A ``tests.core.store.worker`` subprocess driven line by line."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.core.store.worker", *args],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def expect(self, prefix: str) -> str:
        line = self.proc.stdout.readline()
        if not line.startswith(prefix):
            self.proc.kill()
            raise AssertionError(
                f"worker said {line!r}, expected {prefix!r}; stderr:\n{self.proc.stderr.read()}"
            )
        return line.strip()

    def proceed(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()


@pytest.fixture
def spawn() -> Iterator[Callable[..., Worker]]:
    workers: list[Worker] = []

    def start(*args: str) -> Worker:
        workers.append(Worker(*args))
        return workers[-1]

    yield start
    for worker in workers:
        if worker.proc.poll() is None:
            worker.proc.kill()
        worker.proc.wait()
        for stream in (worker.proc.stdin, worker.proc.stdout, worker.proc.stderr):
            stream.close()


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "store")


@pytest.fixture(params=["local", "s3"])
def local_or_s3_store(request, tmp_path: Path) -> RunStore:
    """A fresh store, once in a local folder and once in a fresh S3 bucket (moto)."""
    if request.param == "local":
        return RunStore(tmp_path / "store")
    return RunStore(request.getfixturevalue("s3_store"))
