from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ragproof_core.judge.cache import JudgeCache
from ragproof_core.judge.reply_cache import input_hash


def test_put_then_get_round_trips_a_reply(tmp_path: Path) -> None:
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        assert cache.get("m", "p", "i") is None
        cache.put("m", "p", "i", {"refused": True}, '{"refused": true}', 12, 3, 0.5)
        hit = cache.get("m", "p", "i")
        assert (hit.data, hit.raw, hit.input_tokens, hit.output_tokens, hit.cost_usd) == (
            {"refused": True},
            '{"refused": true}',
            12,
            3,
            0.5,
        )
        assert cache.count() == 1


def test_the_key_is_model_prompt_hash_and_input_hash(tmp_path: Path) -> None:
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        cache.put("m", "p", "i", {"refused": True}, "r", None, None, 0.0)
        assert cache.get("other-model", "p", "i") is None
        assert cache.get("m", "other-prompt", "i") is None
        assert cache.get("m", "p", "other-input") is None
        cache.put("m", "p", "i", {"refused": False}, "r2", None, None, 0.0)  # replaces
        assert cache.get("m", "p", "i").data == {"refused": False}
        assert cache.count() == 1


def test_a_reply_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cache.sqlite"
    cache = JudgeCache(path)
    cache.put("m", "p", "i", {"verdict": "partial"}, "r", 1, 2, 0.25)
    cache.close()
    with JudgeCache(path) as reopened:
        assert reopened.get("m", "p", "i").data == {"verdict": "partial"}


def test_input_hash_is_canonical() -> None:
    a = input_hash({"question": "é?", "answer": "x"})
    assert a == input_hash({"answer": "x", "question": "é?"})
    assert a != input_hash({"answer": "x ", "question": "é?"})
    # printf '%s' '{"answer":"x","question":"é?"}' | sha256sum (UTF-8, keys sorted, no spaces)
    assert a == "ffda3c25bb23c3a6a59cba55e18a2b0a6dd58fa13c2a7622ddeb87151de5c3ab"


WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path
    from ragproof_core.judge.cache import JudgeCache

    path, tag, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    while not go.exists():  # start together, so the writes really overlap
        time.sleep(0.005)
    cache = JudgeCache(path)
    for i in range(200):
        cache.put("m", "p", f"{tag}-{i}", {"refused": i % 2 == 0}, "raw", 10, 2, 0.001)
    cache.close()
    """
)


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    # No schema yet: the two writers race on creating it as well as on the rows.
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, str(go)], stderr=subprocess.PIPE
        )
        for tag in ("a", "b")
    ]
    go.touch()
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr.decode()
    with JudgeCache(path) as cache:
        assert cache.count() == 400
        assert cache.get("m", "p", "b-199").data == {"refused": False}


def test_a_garbage_cache_is_quarantined_with_one_warning_and_a_fresh_one_opened(
    tmp_path: Path, capsys
) -> None:
    """CONTRACT section 29: moved into quarantine/ (never deleted), one line naming it."""
    path = tmp_path / "judge_cache.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with JudgeCache(path) as cache:
        assert cache.get("m", "p", "i") is None
        cache.put("m", "p", "i", {"refused": True}, "r", None, None, 0.0)
        assert cache.count() == 1
    moved = list((tmp_path / "quarantine").iterdir())
    assert [p.read_bytes() for p in moved] == [b"this is not a database" * 100]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "ragproof: warning: the judge cache judge_cache.sqlite could not be opened (file is not "
        f"a database); moved to quarantine/{moved[0].name}, the run goes on with a fresh cache"
    ]
