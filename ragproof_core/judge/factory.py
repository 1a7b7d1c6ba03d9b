"""The judge a run, a calibration or a test-set generation asks, built from the
judge settings: one model's ``LiteLLMJudge``, a jury of several (``jury.py``),
or None when no judge model is configured. Both share the store's reply cache
and the rate limiter made here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ragproof_core.interruption import Interruption
from ragproof_core.judge.cache import open_judge_cache
from ragproof_core.judge.jury import make_jury
from ragproof_core.judge.rate_limit import SLOT_FILE_NAME, make_limiter
from ragproof_core.judge.repeats import make_repeated
from ragproof_core.judge.session import LiteLLMJudge
from ragproof_core.judge.settings import JudgeEnv
from ragproof_core.masking import Masker
from ragproof_core.store_health import StoreHealth


def make_judge(
    env: JudgeEnv,
    cache_path: Path | Any | None,
    use_cache: bool = True,
    concurrency: int = 16,
    shards: int = 1,
    health: StoreHealth | None = None,
    shard: int = 0,
    anchor: float | None = None,
    masker: Masker | None = None,
    read_only: bool = False,
    interruption: Interruption | None = None,
):
    """The configured judge (a ``JuryJudge`` when several models are named, a
    ``RepeatedJudge`` of either with ``[judge] repeats`` above 1), or None
    when RAGPROOF_JUDGE_MODEL is unset. ``cache_path``: the store's
    ``layout.judge_cache_path`` (a SQLite file, or a remote segment folder).

    With ``rpm`` set, requests are spaced through a slot file beside a local cache
    (shared by every process using this store); otherwise this process, shard
    ``shard`` of ``shards``, takes its own slots of the run's schedule anchored at
    ``anchor`` (the run's start, epoch seconds; see ``rate_limit``). ``masker``: the
    run's secret values, masked in every reply and error (CONTRACT section 28).
    ``interruption``: a run step's stop on a signal, after which no request is sent.
    """
    models = tuple(dict.fromkeys(env.models))  # a model named twice is one juror
    if not models:
        return None
    health = StoreHealth() if health is None else health
    cache = (
        open_judge_cache(cache_path, health, read_only)
        if cache_path is not None and use_cache
        else None
    )
    slot_path = cache_path.with_name(SLOT_FILE_NAME) if isinstance(cache_path, Path) else None
    limiter = make_limiter(env.rpm, slot_path, shares=shards, share=shard, anchor=anchor)
    if env.repeats > 1:
        return make_repeated(
            env,
            models,
            cache,
            use_cache,
            concurrency,
            limiter,
            health,
            masker=masker,
            interruption=interruption,
        )
    if len(models) > 1:
        return make_jury(
            env,
            models,
            cache,
            use_cache,
            concurrency,
            limiter,
            health,
            masker=masker,
            interruption=interruption,
        )
    return LiteLLMJudge(
        replace(env, model=models[0]),
        cache,
        use_cache=use_cache,
        concurrency=concurrency,
        owns_cache=cache is not None,
        limiter=limiter,
        health=health,
        masker=masker,
        interruption=interruption,
    )
