"""Where the store sets aside what it cannot read (CONTRACT section 29): a folder
``quarantine/`` beside it, never deleted. The judge cache and ``ragproof verify`` both
move files there, so this sits below both."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path

QUARANTINE_DIR = "quarantine"


def quarantine_file(path: Path, companions: tuple[str, ...] = ()) -> Path | None:
    """Move ``path`` (and its companion files, ``path`` + each suffix) into
    ``quarantine/`` beside it under a name that never clashes; returns where it went,
    or None when it was gone already (another process moved it)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.parent / QUARANTINE_DIR / f"{path.stem}-{stamp}{path.suffix}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    for suffix in companions:
        with contextlib.suppress(FileNotFoundError):
            os.replace(path.with_name(path.name + suffix), target.with_name(target.name + suffix))
    return target
