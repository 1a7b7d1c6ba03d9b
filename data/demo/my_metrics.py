"""A metric of your own for the demo (data/demo/custom.toml, docs/metrics.md).

ragproof calls it once per case with these keyword arguments (CONTRACT
section 21) and stores what it returns: a finite number is the score,
None skips the case ("metric returned no value"), and an exception is that
case's error for this metric alone.
"""

from __future__ import annotations

SHORT_WORDS = 25  # up to this many words scores 1
LONG_WORDS = 75  # this many words or more scores 0


def short_answer(
    *,
    question,
    answer,
    retrieved,
    citations,
    expected_answer,
    expected_source_ids,
    metadata,
):
    """1.0 for an answer of at most 25 words, falling evenly to 0.0 at 75 words.

    An answer the pipeline declined to give (the demo's "I could not find this
    in the documents.") has no length worth measuring, so it is skipped.
    """
    if answer is None or answer.startswith("I could not find"):
        return None
    words = len(answer.split())
    if words <= SHORT_WORDS:
        return 1.0
    return max(0.0, (LONG_WORDS - words) / (LONG_WORDS - SHORT_WORDS))
