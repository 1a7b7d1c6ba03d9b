"""Real mounts for the fault tests: a small tmpfs that can be filled, and a read-only
bind mount. Each is skipped, with the system's reason, where this process may not
mount, and is always unmounted (lazily, so a command still holding a file open does
not keep it)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount``'s spelling: ``600k``, ``8m``) mounted at ``path``."""
    path.mkdir()
    _mount(["-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], "mount a tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextmanager
def read_only(source: Path, path: Path) -> Iterator[Path]:
    """``source`` seen read-only at ``path``."""
    path.mkdir()
    _mount(["--bind", "-o", "ro", str(source), str(path)], "bind-mount read-only")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: Path) -> None:
    """Write zeros into ``folder`` until its filesystem is full."""
    with open(folder / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 16))
                handle.flush()
        except OSError:
            pass


def _mount(arguments: list[str], what: str) -> None:
    done = subprocess.run(["mount", *arguments], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot {what} here: {done.stderr.decode().strip()}")
