"""`ragproof serve` or `ragproof label` as a user starts it: a subprocess whose first line
of output says where the app listens."""

from __future__ import annotations

import re
import subprocess

from tests.support.cli import ragproof_popen

_LISTENING = re.compile(r"^ragproof: serving .* at (http://127\.0\.0\.1:\d+)/$")


class ServedApp:
    """The app in its own process; ``url`` is its base URL (no trailing slash)."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.args = args
        self.env = env
        self.url = ""
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> ServedApp:
        self.proc = ragproof_popen(*self.args, env=self.env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().rstrip("\n")
        match = _LISTENING.match(line)
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
            raise AssertionError(f"no address printed: {line!r}; stderr: {err}")
        self.url = match.group(1)
        return self

    def __exit__(self, *exc) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])
