"""The segment judge cache over fsspec's in-memory filesystem (the S3 path is tested
against moto in tests/assets/test_s3_store.py and tests/faults/)."""

from __future__ import annotations

import secrets

import fsspec

from ragproof_core.judge.cache import open_judge_cache
from ragproof_core.judge.segment_cache import SegmentJudgeCache
from ragproof_core.store.layout import SegmentCacheLocation


def _location() -> SegmentCacheLocation:
    fs = fsspec.filesystem("memory")
    return SegmentCacheLocation(fs, f"/cache-{secrets.token_hex(4)}/judge_cache/segments")


def _put(cache, n: str) -> None:
    cache.put("m", "ph", f"in{n}", {"verdict": "relevant"}, f"raw{n}", 10, 2, 0.5)


def test_two_writers_keep_every_row_and_a_reader_sees_their_union() -> None:
    where = _location()
    first, second = open_judge_cache(where), open_judge_cache(where)
    assert isinstance(first, SegmentJudgeCache)
    _put(first, "1")
    _put(second, "2")
    _put(second, "3")
    # A writer sees its own entries at once, another writer's only after reopening.
    assert first.get("m", "ph", "in1").raw == "raw1"
    assert first.get("m", "ph", "in2") is None
    first.close()
    second.close()
    segments = sorted(where.fs.ls(where.root, detail=False))
    assert len(segments) == 2 and all(s.endswith(".jsonl") for s in segments)
    with SegmentJudgeCache(where) as reader:
        assert reader.count() == 3
        hit = reader.get("m", "ph", "in3")
        assert (hit.data, hit.raw, hit.input_tokens, hit.output_tokens, hit.cost_usd) == (
            {"verdict": "relevant"},
            "raw3",
            10,
            2,
            0.5,
        )


def test_flush_writes_only_new_entries_as_a_new_immutable_segment() -> None:
    where = _location()
    cache = SegmentJudgeCache(where, flush_interval_s=3600)
    _put(cache, "1")
    assert cache.flush() == 1
    assert cache.flush() == 0  # nothing new: no empty segment
    _put(cache, "2")
    assert cache.flush() == 1
    cache.close()
    segments = sorted(where.fs.ls(where.root, detail=False))
    assert [s.rsplit("-", 1)[1] for s in segments] == ["000001.jsonl", "000002.jsonl"]
    assert [len(where.fs.cat_file(s).splitlines()) for s in segments] == [1, 1]


def test_the_periodic_flush_keeps_verdicts_without_a_close() -> None:
    where = _location()
    cache = SegmentJudgeCache(where, flush_interval_s=0.05)
    _put(cache, "1")
    import time

    deadline = time.monotonic() + 5
    while not where.fs.exists(where.root) or not where.fs.ls(where.root):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # What a SIGKILL after the flush would leave: readable by the next run.
    assert SegmentJudgeCache(where).get("m", "ph", "in1").raw == "raw1"
    cache.close()
