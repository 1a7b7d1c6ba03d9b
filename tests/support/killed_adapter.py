"""An adapter whose process is killed from outside, for the deployment tests: a Celery
worker killed while it runs a shard (tests/deploy/test_celery_executor.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path


class WaitToBeKilledAdapter:
    """Answers like ``fault_adapters.PlainAdapter``; the first time it meets a question
    starting with ``kill``, it writes its process id to ``marker`` and waits (at most
    ``wait_s``) for the test to kill the process. Once ``marker`` exists it answers that
    question too, so the re-execution completes."""

    def __init__(self, marker: str, wait_s: float = 600) -> None:
        self.marker = Path(marker)
        self.wait_s = wait_s

    async def answer(self, question: str) -> dict:
        if question.startswith("kill") and not self.marker.exists():
            draft = self.marker.with_name(f"{self.marker.name}.{os.getpid()}")
            draft.write_text(str(os.getpid()), encoding="utf-8")
            draft.replace(self.marker)
            await asyncio.sleep(self.wait_s)
        return {"text": f"The answer to {question.rstrip('?')} is forty-two."}
